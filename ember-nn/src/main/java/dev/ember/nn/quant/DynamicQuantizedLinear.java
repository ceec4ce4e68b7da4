package dev.ember.nn.quant;

import dev.ember.backend.Backend;
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
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * A Linear with int8 weights for inference, as {@code torch.ao.nn.quantized.dynamic.Linear}: the weight is
 * quantized once, per output channel, symmetric qint8 (PyTorch's default per-channel weight observer); each
 * forward quantizes its input per tensor, affine, with the range of that batch (min-max observer formulas), runs
 * the int8 x int8 -&gt; int32 GEMM and dequantizes with the per-channel scales and adds the float32 bias in the
 * GEMM's output loop. Output is float32.
 *
 * <p>Activations use qint8 -128..127 with a zero point (fbgemm uses quint8 with reduce_range, 0..127, because its
 * u8 x s8 instruction saturates in 16 bits; the Vector API kernel widens to int32 first and needs no spare bit,
 * so inputs keep a bit more resolution than torch's). Inference only: the output records no gradient, and there
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
  private static final QScheme WEIGHT_SCHEME = QScheme.perChannelSymmetric(QDType.QINT8, 0);
  private static final QScheme INPUT_SCHEME = QScheme.perTensorAffine(QDType.QINT8);

  private final int inFeatures;
  private final int outFeatures;
  private final boolean hasBias;
  /** The kernel's operands, derived from the buffers; rebuilt when a buffer is replaced or written (load). */
  private Operands operands;

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
    QTensor q = Quantization.quantize(weight, obs.calculateQParams());
    this.hasBias = bias != null;
    registerBuffer("weight", TensorData.wrapInt8(q.bytes(), outFeatures, inFeatures));
    registerBuffer("weight_scale", Tensor.of(q.params().scales(), outFeatures));
    registerBuffer("weight_zero_point", Tensor.of(q.params().zeroPoints(), outFeatures));
    if (hasBias) registerBuffer("bias", Tensor.of(bias.detach().toFloatArray(), outFeatures));
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
    Operands o = operands();
    return QTensor.of(o.w, new int[] {outFeatures, inFeatures}, QParams.perChannel(QDType.QINT8, 0, o.scale,
        new int[outFeatures]));
  }

  /** The float32 bias, or null. */
  public Tensor bias() {
    return hasBias ? Tensor.of(operands().bias.clone(), outFeatures) : null;
  }

  /**
   * The GEMM's operands: int8 weight bytes, their row sums, float32 scales and bias. Cached against the buffers'
   * identity and storage version, so {@link #loadStateDict} (which writes the buffers in place) and
   * {@link #to(dev.ember.tensor.DType)} (which replaces the float ones) are seen by the next forward.
   */
  private record Operands(Tensor[] buffers, int[] versions, byte[] w, int[] rowSum, float[] scale, float[] bias) {
    boolean current(Tensor[] now) {
      for (int i = 0; i < now.length; i++) {
        if (now[i] != buffers[i] || now[i].storage().version() != versions[i]) return false;
      }
      return true;
    }
  }

  private Operands operands() {
    Tensor[] now = hasBias ? new Tensor[] {buffer("weight"), buffer("weight_scale"), buffer("bias")}
        : new Tensor[] {buffer("weight"), buffer("weight_scale")};
    Operands o = operands;
    if (o != null && o.current(now)) return o;
    int[] versions = new int[now.length];
    for (int i = 0; i < now.length; i++) versions[i] = now[i].storage().version();
    Tensor wt = TensorData.hostContiguous(now[0]);
    byte[] w = new byte[outFeatures * inFeatures];
    ByteBuffer buf = ByteBuffer.wrap(w);
    TensorData.read(wt, 0, w.length, buf);
    o = new Operands(now, versions, w, Quantization.rowSums(w, outFeatures, inFeatures), now[1].toFloatArray(),
        hasBias ? now[2].toFloatArray() : null);
    operands = o;
    return o;
  }

  /**
   * Rejects a state dict whose entries for this layer are not a valid quantized state: {@code weight} must be I8,
   * {@code weight_scale} and {@code bias} F32 with finite values and positive finite scales, {@code
   * weight_zero_point} I32 and 0 (the weights are symmetric). Shapes are checked by {@link Module#loadStateDict}.
   */
  @Override
  protected void checkState(String prefix, Map<String, Tensor> state) {
    Tensor w = state.get(prefix + "weight");
    Tensor s = state.get(prefix + "weight_scale");
    Tensor z = state.get(prefix + "weight_zero_point");
    Tensor b = state.get(prefix + "bias");
    requireDtype(prefix + "weight", w, DType.I8);
    requireDtype(prefix + "weight_scale", s, DType.F32);
    requireDtype(prefix + "weight_zero_point", z, DType.I32);
    requireDtype(prefix + "bias", b, DType.F32);
    if (s != null) {
      float[] v = s.toFloatArray();
      for (int c = 0; c < v.length; c++) {
        if (!(v[c] > 0) || Float.isInfinite(v[c])) {
          throw new QuantizedStateException(prefix + "weight_scale", "scale must be positive and finite, got scale["
              + c + "]=" + v[c]);
        }
      }
    }
    if (z != null) {
      long[] v = z.toLongArray();
      for (int c = 0; c < v.length; c++) {
        if (v[c] < QDType.QINT8.min() || v[c] > QDType.QINT8.max()) {
          throw new QuantizedStateException(prefix + "weight_zero_point", "zero point out of range for qint8 ("
              + QDType.QINT8.min() + ".." + QDType.QINT8.max() + "), got zero_point[" + c + "]=" + v[c]);
        }
        if (v[c] != 0) {
          throw new QuantizedStateException(prefix + "weight_zero_point", "weights are per-channel symmetric, so "
              + "every zero point must be 0, got zero_point[" + c + "]=" + v[c]);
        }
      }
    }
    if (b != null) {
      float[] v = b.toFloatArray();
      for (int c = 0; c < v.length; c++) {
        if (!Float.isFinite(v[c])) {
          throw new QuantizedStateException(prefix + "bias", "bias must be finite, got bias[" + c + "]=" + v[c]);
        }
      }
    }
  }

  private static void requireDtype(String key, Tensor t, DType want) {
    if (t != null && t.dtype() != want) {
      throw new QuantizedStateException(key, "dtype must be " + want.torchName() + ", got " + t.dtype().torchName());
    }
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
    Operands o = operands();
    float[] v = x.toFloatArray();
    int m = inFeatures == 0 ? 0 : v.length / inFeatures;
    int[] outShape = x.shape();
    outShape[outShape.length - 1] = outFeatures;
    if (m == 0 || inFeatures == 0) {
      float[] out = new float[(int) (m * (long) outFeatures)];
      if (hasBias) for (int i = 0; i < m; i++) System.arraycopy(o.bias, 0, out, i * outFeatures, outFeatures);
      return Tensor.of(out, outShape);
    }
    float lo = Float.POSITIVE_INFINITY;
    float hi = Float.NEGATIVE_INFINITY;
    for (float f : v) {
      lo = Math.min(lo, f);
      hi = Math.max(hi, f);
    }
    if (Float.isNaN(lo) || Float.isNaN(hi)) {
      throw Check.fail("DynamicQuantizedLinear", "input contains NaN (it has no quantized value)", "input", x);
    }
    MinMaxObserver obs = new MinMaxObserver(INPUT_SCHEME, false);
    obs.observeRange(lo, hi);
    QParams p = obs.calculateQParams();
    float aScale = p.scales()[0];
    int aZero = p.zeroPoints()[0];
    byte[] a = new byte[v.length];
    Quantization.quantizeRange(v, 0, v.length, aScale, aZero, QDType.QINT8, a, 0);
    float[] out = new float[m * outFeatures];
    Device.CPU.backend().int8LinearDequantize(a, aZero, aScale, o.w, o.rowSum, o.scale, o.bias, out, m, outFeatures,
        inFeatures);
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
