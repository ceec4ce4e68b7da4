package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.backend.Int8Matrix;
import dev.ember.tensor.Device;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.quant.MinMaxObserver;
import dev.ember.quant.PerChannelMinMaxObserver;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QScheme;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;

/**
 * A Linear with int8 weights for inference, as {@code torch.ao.nn.quantized.dynamic.Linear}: the weight is
 * quantized once, per output channel, symmetric qint8 (PyTorch's default per-channel weight observer); each
 * forward quantizes its input per tensor, affine, with the range of that batch (min-max observer formulas), runs
 * the int8 x int8 -&gt; int32 GEMM and dequantizes with the per-channel scales and adds the float32 bias in the
 * GEMM's output loop. Output is float32.
 *
 * <p>Activations use qint8 -128..127 with a zero point (fbgemm uses quint8 with reduce_range, 0..127, because its
 * u8 x s8 instruction saturates in 16 bits; the Vector API kernel widens to float32, where sums of up to 1024
 * products are exact, and needs no spare bit, so inputs keep a bit more resolution than torch's). The weight is
 * held as an {@link Int8Matrix}: the backend packs it for its GEMM on the first forward and keeps that. Inference
 * only: the output records no gradient, and there are no parameters to train.
 */
public class DynamicQuantizedLinear extends Module {
  private static final QScheme WEIGHT_SCHEME = QScheme.perChannelSymmetric(QDType.QINT8, 0);
  private static final QScheme INPUT_SCHEME = QScheme.perTensorAffine(QDType.QINT8);

  private final int inFeatures;
  private final int outFeatures;
  private final QTensor weight;
  private final Int8Matrix w;
  private final float[] wScale;
  private final int[] wRowSum;
  private final float[] bias;

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
    PerChannelMinMaxObserver obs = new PerChannelMinMaxObserver(WEIGHT_SCHEME, false);
    obs.observe(weight);
    this.weight = Quantization.quantize(weight, obs.calculateQParams());
    byte[] wBytes = this.weight.bytes();
    this.w = new Int8Matrix(wBytes, outFeatures, inFeatures);   // the backend packs it once, on the first forward
    this.wScale = this.weight.params().scales();
    this.wRowSum = Quantization.rowSums(wBytes, outFeatures, inFeatures);
    this.bias = bias == null ? null : bias.toFloatArray();
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

  /** The int8 weight with its per-channel scales (zero points 0). */
  public QTensor weight() {
    return weight;
  }

  /** The float32 bias, or null. */
  public Tensor bias() {
    return bias == null ? null : Tensor.of(bias.clone(), outFeatures);
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
    float[] v = x.toFloatArray();
    int m = inFeatures == 0 ? 0 : v.length / inFeatures;
    int[] outShape = x.shape();
    outShape[outShape.length - 1] = outFeatures;
    if (m == 0 || inFeatures == 0) {
      float[] out = new float[(int) (m * (long) outFeatures)];
      if (bias != null) for (int i = 0; i < m; i++) System.arraycopy(bias, 0, out, i * outFeatures, outFeatures);
      return Tensor.of(out, outShape);
    }
    Backend cpu = Device.CPU.backend();
    float[] range = cpu.minMax(v, 0, v.length);
    float lo = range[0];
    float hi = range[1];
    if (Float.isNaN(lo) || Float.isNaN(hi)) {
      throw Check.fail("DynamicQuantizedLinear", "input contains NaN (it has no quantized value)", "input", x);
    }
    MinMaxObserver obs = new MinMaxObserver(INPUT_SCHEME, false);
    obs.observeRange(lo, hi);
    QParams p = obs.calculateQParams();
    float aScale = p.scales()[0];
    int aZero = p.zeroPoints()[0];
    byte[] a = new byte[v.length];
    cpu.quantizeInt8(v, 0, v.length, aScale, aZero, QDType.QINT8.min(), QDType.QINT8.max(), a, 0);
    float[] out = new float[m * outFeatures];
    cpu.int8LinearDequantize(a, aZero, aScale, w, wRowSum, wScale, bias, out, m);
    return Tensor.of(out, outShape);
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
