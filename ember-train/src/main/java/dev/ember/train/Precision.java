package dev.ember.train;

import dev.ember.tensor.DType;
import java.util.Locale;

/**
 * The arithmetic a {@link Trainer} runs the forward pass and the loss in ({@link Trainer.Builder#precision}), as
 * PyTorch's mixed-precision recipes: the parameters, their gradients and the optimizer state stay float32 (master
 * weights) in every mode.
 * <ul>
 *   <li>{@link #F32}: everything in float32.
 *   <li>{@link #BF16}: the forward pass and the loss under {@code Autocast.enable(DType.BF16)}, no loss scaling
 *       (bfloat16 has float32's exponent range).
 *   <li>{@link #F16}: under {@code Autocast.enable(DType.F16)}, with a {@link dev.ember.optim.GradScaler}: the loss
 *       is scaled before backward so small gradients survive float16, and steps whose gradients overflow are
 *       skipped while the scale backs off.
 * </ul>
 */
public enum Precision {
  /** Float32 throughout. */
  F32(null, "fp32"),
  /** BFloat16 autocast, no loss scaling. */
  BF16(DType.BF16, "bf16"),
  /** Float16 autocast with dynamic loss scaling. */
  F16(DType.F16, "fp16");

  private final DType autocast;
  private final String cliName;

  Precision(DType autocast, String cliName) {
    this.autocast = autocast;
    this.cliName = cliName;
  }

  /** The dtype the forward pass autocasts to, or null for {@link #F32}. */
  public DType autocastDType() {
    return autocast;
  }

  /** Whether training in this precision scales the loss ({@link #F16} only, as PyTorch's recipe). */
  public boolean scalesLoss() {
    return this == F16;
  }

  /** The name {@code ./ember train --precision} takes and run folders record: fp32, bf16 or fp16. */
  public String cliName() {
    return cliName;
  }

  /**
   * The precision named {@code name}: fp32, bf16 or fp16 (case-insensitive; f32/float32, bfloat16, f16/float16/half
   * too).
   *
   * @throws IllegalArgumentException naming the choices when {@code name} is none of them
   */
  public static Precision parse(String name) {
    String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
    return switch (n) {
      case "fp32", "f32", "float32" -> F32;
      case "bf16", "bfloat16" -> BF16;
      case "fp16", "f16", "float16", "half" -> F16;
      default -> throw new IllegalArgumentException("precision must be one of fp32, bf16, fp16, got '" + name + "'");
    };
  }
}
