package dev.ember.nn.functional;

import dev.ember.amp.Autocast;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.function.Function;

/**
 * How every nn op computes on BF16 and F16 tensors, in one place: its BF16/F16 inputs are widened to F32 (exactly),
 * the op runs on them in F32 and its F32 result is rounded once to the half dtype, as PyTorch's CPU kernels do
 * (and as ember-core's op layer does for its own ops). No nn kernel ever sees a half operand. The widening and the
 * rounding are the differentiable {@code to(dtype)} op, so the gradient of a half input comes back in its dtype.
 *
 * <p>An op calls {@link #run} at its entry when {@link #any} of its inputs is half, passing itself as the F32 op;
 * the widened call finds no half input and takes the ordinary path. The F32 computation runs with autocast off:
 * the op's own policy was applied by its caller before (its inputs as {@link Autocast#inputs} gives them), and the
 * F32 path must not cast them back.
 */
final class HalfCompute {
  private HalfCompute() {}

  /** Whether any of {@code xs} (nulls allowed) is BF16 or F16. */
  static boolean any(Tensor... xs) {
    for (Tensor x : xs) {
      if (x != null && x.dtype().isHalf()) return true;
    }
    return false;
  }

  /**
   * Runs {@code op} on {@code inputs} with every BF16/F16 one widened to F32 and rounds each F32 tensor it returns
   * to {@code half} (none when {@code half} is null: the result stays F32).
   */
  static Tensor run(DType half, Function<Tensor[], Tensor> op, Tensor... inputs) {
    Tensor y;
    try (Autocast off = Autocast.disable()) {
      y = op.apply(widened(inputs));
    }
    return round(y, half);
  }

  /** {@link #run} for an op whose result is its primary input's half dtype (every nn op but the losses). */
  static Tensor like(Tensor primary, Function<Tensor[], Tensor> op, Tensor... inputs) {
    return run(primary.dtype().isHalf() ? primary.dtype() : null, op, inputs);
  }

  /**
   * {@link #run} for a loss: the result has the half dtype when every floating operand has that one half dtype (as
   * torch's losses return bfloat16 for bfloat16 operands), and is F32 when a half operand meets an F32 one
   * (torch's type promotion).
   */
  static Tensor loss(Function<Tensor[], Tensor> op, Tensor... inputs) {
    return run(common(inputs), op, inputs);
  }

  /** The one half dtype of all the floating operands, or null when they are not all of it. */
  static DType common(Tensor... xs) {
    DType half = null;
    for (Tensor x : xs) {
      if (x == null || !x.dtype().isFloatingPoint()) continue;
      if (!x.dtype().isHalf() || (half != null && half != x.dtype())) return null;
      half = x.dtype();
    }
    return half;
  }

  /**
   * Fails, naming the op, when a floating operand's dtype differs from {@code primary}'s: for the ops that, as
   * torch, take no mixed dtypes (convolutions, attention, the recurrent cells). {@code named} alternates names and
   * tensors (nulls skipped).
   */
  static void requireSame(String op, String primaryName, Tensor primary, Object... named) {
    for (int i = 0; i + 1 < named.length; i += 2) {
      if (!(named[i + 1] instanceof Tensor t) || !t.dtype().isFloatingPoint() || t.dtype() == primary.dtype()) {
        continue;
      }
      throw Check.fail(op, named[i] + " has dtype " + t.dtype().torchName() + ", " + primaryName + " has "
          + primary.dtype().torchName(), primaryName, primary, String.valueOf(named[i]), t,
          "hint", "convert with to(), or use Autocast to mix precisions");
    }
  }

  /** {@code t}'s F32 copy when it is BF16/F16, else {@code t} (integer targets and masks stay as they are). */
  static Tensor widen(Tensor t) {
    return t != null && t.dtype().isHalf() ? t.to(DType.F32) : t;
  }

  static Tensor[] widened(Tensor... xs) {
    Tensor[] w = new Tensor[xs.length];
    for (int i = 0; i < xs.length; i++) w[i] = widen(xs[i]);
    return w;
  }

  /** {@code y} rounded once to {@code half} when it is F32; {@code y} itself when half is null. */
  static Tensor round(Tensor y, DType half) {
    return half != null && y.dtype() == DType.F32 ? y.to(half) : y;
  }
}
