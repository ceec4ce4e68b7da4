package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * A Linear with int8 weights for inference, as {@code torch.ao.nn.quantized.dynamic.Linear}: the weight is
 * quantized once, per output channel, symmetric qint8 (PyTorch's default per-channel weight observer); each
 * forward quantizes its input per tensor, affine, with the range of that batch (min-max observer formulas), runs
 * the int8 x int8 -&gt; int32 GEMM and dequantizes with the per-channel scales and adds the float32 bias in the
 * GEMM's output loop. Output is float32.
 *
 * <p>Activations use qint8 -128..127 with a zero point (fbgemm uses quint8 with reduce_range, 0..127, because its
 * u8 x s8 instruction saturates in 16 bits; the Vector API kernel widens to float32, where sums of up to 1024
 * products are exact, and needs no spare bit, so inputs keep a bit more resolution than torch's). The backend packs
 * the weight for its GEMM on the first forward and keeps that until the weight buffer changes. Inference only: the output records no gradient, and there
 * are no parameters to train.
 *
 * <p>The quantized state is four buffers, so {@link #stateDict()}, safetensors files and checkpoints carry it:
 * {@code weight} (I8 [out, in]), {@code weight_scale} (F32 [out]), {@code weight_zero_point} (I32 [out], all 0) and
 * {@code bias} (F32 [out], absent without bias). Loading such a state into {@code Quantize.dynamic(model)} of a
 * fresh float model of the same architecture reproduces the saved model's outputs bit for bit; entries of the
 * wrong dtype or with invalid values are rejected by {@link #checkState} with a {@link QuantizedStateException}
 * naming the key.
 */
public class DynamicQuantizedLinear extends Module {
  private final int inFeatures;
  private final int outFeatures;
  private final Int8Linear linear;

  /** Quantizes a float weight [out, in] (per-channel symmetric qint8) and keeps the bias (may be null) in float32. */
  public DynamicQuantizedLinear(Tensor weight, Tensor bias) {
    if (weight.dim() != 2) throw Check.fail("DynamicQuantizedLinear", "weight must be 2-d [out, in]", "weight", weight);
    this.outFeatures = weight.size(0);
    this.inFeatures = weight.size(1);
    if (bias != null && (bias.dim() != 1 || bias.size(0) != outFeatures)) {
      throw Check.fail("DynamicQuantizedLinear", "bias must be [out_features] (" + outFeatures + ")", "weight", weight,
          "bias", bias);
    }
    if (inFeatures > Backend.INT8_MAX_K) {
      throw Check.fail("DynamicQuantizedLinear", "in_features must be <= " + Backend.INT8_MAX_K + " (int32 accumulation)",
          "weight", weight);
    }
    this.linear = Int8Linear.register(this, "DynamicQuantizedLinear", "weight", weight, "bias", bias);
    eval();
  }

  /** The quantized version of a trained Linear (its weight and bias as they are now). */
  public static DynamicQuantizedLinear from(Linear linear) {
    return new DynamicQuantizedLinear(linear.weight().detach(), linear.bias() == null ? null : linear.bias().detach());
  }

  public int inFeatures() {
    return inFeatures;
  }

  public int outFeatures() {
    return outFeatures;
  }

  /** The int8 weight with its per-channel scales (zero points 0), read from the buffers. */
  public QTensor weight() {
    return linear.weight(this);
  }

  /** The float32 bias, or null. */
  public Tensor bias() {
    float[] b = linear.bias(this);
    return b == null ? null : Tensor.of(b, outFeatures);
  }

  /**
   * Rejects a state dict whose entries for this layer are not a valid quantized state: {@code weight} must be I8,
   * {@code weight_scale} and {@code bias} F32 with finite values and positive scales, {@code weight_zero_point} I32
   * and 0 (the weights are symmetric). Shapes are checked by {@link Module#loadStateDict}.
   */
  @Override
  protected void checkState(String prefix, Map<String, Tensor> state) {
    linear.checkState(prefix, state);
  }

  @Override
  public Tensor forward(Tensor x) {
    if (x.dim() == 0 || x.size(x.dim() - 1) != inFeatures) {
      throw Check.fail("DynamicQuantizedLinear", "input's last dimension must be in_features (" + inFeatures + ")",
          "input", x);
    }
    if (!x.dtype().isFloatingPoint()) {
      throw Check.fail("DynamicQuantizedLinear", "input must be floating point, got " + x.dtype(), "input", x);
    }
    int[] outShape = x.shape();
    outShape[outShape.length - 1] = outFeatures;
    return Tensor.of(linear.apply(this, "DynamicQuantizedLinear", x, x.toFloatArray(), numelBefore(x)), outShape);
  }

  /** The number of rows of x: the product of every dimension but the last. */
  private static int numelBefore(Tensor x) {
    long n = 1;
    for (int i = 0; i < x.dim() - 1; i++) n *= x.size(i);
    return (int) n;
  }

  @Override
  protected String extraRepr() {
    return "in_features=" + inFeatures + ", out_features=" + outFeatures + ", dtype=qint8, qscheme="
        + "per_channel_symmetric";
  }

  @Override
  public String toString() {
    return "DynamicQuantizedLinear(" + extraRepr() + ")";
  }
}
