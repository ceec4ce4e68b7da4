package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.backend.Int8Matrix;
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
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.nio.ByteBuffer;
import java.util.Map;

/**
 * One dynamically quantized matrix product {@code y = x W^T + b} of a quantized module, over four of its buffers:
 * {@code W} (I8 [out, in], per-row symmetric qint8), its scales (F32 [out]), zero points (I32 [out], all 0) and an
 * optional float32 bias. The kernel's operands (bytes, row sums, float scales and bias) are derived from the buffers
 * and cached against their identity and storage version, so a {@code loadStateDict} (in place) or a
 * {@code Module.to(dtype)} (which replaces float buffers) is seen by the next call.
 */
final class Int8Linear {
  static final QScheme WEIGHT_SCHEME = QScheme.perChannelSymmetric(QDType.QINT8, 0);
  static final QScheme INPUT_SCHEME = QScheme.perTensorAffine(QDType.QINT8);

  final String weightKey;
  final String scaleKey;
  final String zeroPointKey;
  final String biasKey;
  final int out;
  final int in;
  private Tensor[] seen;
  private int[] versions;
  private byte[] w;
  /** {@link #w} as the backend's prepared operand: packed on its first product and kept until the weight changes. */
  private Int8Matrix packed;
  private int[] rowSum;
  private float[] scale;
  private float[] bias;

  private Int8Linear(String weightKey, String biasKey, int out, int in) {
    this.weightKey = weightKey;
    this.scaleKey = weightKey + "_scale";
    this.zeroPointKey = weightKey + "_zero_point";
    this.biasKey = biasKey;
    this.out = out;
    this.in = in;
  }

  /**
   * Quantizes {@code weight} [out, in] per row (symmetric qint8) into buffers {@code weightKey},
   * {@code weightKey_scale}, {@code weightKey_zero_point} of {@code owner}, and {@code bias} (may be null) into
   * {@code biasKey} as float32.
   */
  static Int8Linear register(Module owner, String op, String weightKey, Tensor weight, String biasKey, Tensor bias) {
    int out = weight.size(0);
    int in = weight.size(1);
    if (in > Backend.INT8_MAX_K) {
      throw new IllegalArgumentException(op + ": " + weightKey + " has " + in + " input features, more than "
          + Backend.INT8_MAX_K + " (int32 accumulation)");
    }
    PerChannelMinMaxObserver obs = new PerChannelMinMaxObserver(WEIGHT_SCHEME, false);
    obs.observe(weight.detach());
    QTensor q = Quantization.quantize(weight.detach(), obs.calculateQParams());
    owner.registerBuffer(weightKey, TensorData.wrapInt8(q.bytes(), out, in));
    owner.registerBuffer(weightKey + "_scale", Tensor.of(q.params().scales(), out));
    owner.registerBuffer(weightKey + "_zero_point", Tensor.of(q.params().zeroPoints(), out));
    if (bias != null) owner.registerBuffer(biasKey, Tensor.of(bias.detach().toFloatArray(), out));
    return new Int8Linear(weightKey, bias == null ? null : biasKey, out, in);
  }

  /** Brings the cached operands up to date with {@code owner}'s buffers. */
  private void refresh(Module owner) {
    Tensor[] now = biasKey == null ? new Tensor[] {owner.buffer(weightKey), owner.buffer(scaleKey)}
        : new Tensor[] {owner.buffer(weightKey), owner.buffer(scaleKey), owner.buffer(biasKey)};
    if (seen != null) {
      boolean same = true;
      for (int i = 0; i < now.length && same; i++) same = now[i] == seen[i] && now[i].storage().version() == versions[i];
      if (same) return;
    }
    int[] v = new int[now.length];
    for (int i = 0; i < now.length; i++) v[i] = now[i].storage().version();
    byte[] bytes = new byte[out * in];
    TensorData.read(TensorData.hostContiguous(now[0]), 0, bytes.length, ByteBuffer.wrap(bytes));
    w = bytes;
    packed = new Int8Matrix(bytes, out, in);
    rowSum = Quantization.rowSums(bytes, out, in);
    scale = now[1].toFloatArray();
    bias = biasKey == null ? null : now[2].toFloatArray();
    seen = now;
    versions = v;
  }

  /** The int8 weight with its per-row scales (zero points 0). */
  QTensor weight(Module owner) {
    refresh(owner);
    return QTensor.of(w, new int[] {out, in}, QParams.perChannel(QDType.QINT8, 0, scale, new int[out]));
  }

  /** The float32 bias, or null. */
  float[] bias(Module owner) {
    refresh(owner);
    return bias == null ? null : bias.clone();
  }

  /**
   * {@code x W^T + b} for the {@code m} rows of {@code x} [m, in] (row-major, the values of {@code input}, which
   * errors name): x quantized per tensor (qint8 affine,
   * the range of these rows), the int8 GEMM with int32 sums, dequantized with the per-row scales, bias added.
   */
  float[] apply(Module owner, String op, Tensor input, float[] x, int m) {
    refresh(owner);
    float[] y = new float[m * out];
    if (m == 0) return y;
    if (in == 0) {
      if (bias != null) for (int i = 0; i < m; i++) System.arraycopy(bias, 0, y, i * out, out);
      return y;
    }
    Backend cpu = Device.CPU.backend();
    float[] range = cpu.minMax(x, 0, m * in);
    float lo = range[0];
    float hi = range[1];
    if (Float.isNaN(lo) || Float.isNaN(hi)) {
      throw Check.fail(op, "input contains NaN (it has no quantized value)", "input", input);
    }
    MinMaxObserver obs = new MinMaxObserver(INPUT_SCHEME, false);
    obs.observeRange(lo, hi);
    QParams p = obs.calculateQParams();
    float aScale = p.scales()[0];
    int aZero = p.zeroPoints()[0];
    byte[] a = new byte[m * in];
    cpu.quantizeInt8(x, 0, m * in, aScale, aZero, QDType.QINT8.min(), QDType.QINT8.max(), a, 0);
    cpu.int8LinearDequantize(a, aZero, aScale, packed, rowSum, scale, bias, y, m);
    return y;
  }

  /**
   * Rejects state entries (keys {@code prefix + key}) that cannot be this product's state: the weight must be I8,
   * the scales F32, positive and finite, the zero points I32 and 0, the bias F32 and finite. Absent keys and shapes
   * are left to {@code Module.loadStateDict}.
   */
  void checkState(String prefix, Map<String, Tensor> state) {
    Tensor wt = state.get(prefix + weightKey);
    Tensor s = state.get(prefix + scaleKey);
    Tensor z = state.get(prefix + zeroPointKey);
    Tensor b = biasKey == null ? null : state.get(prefix + biasKey);
    requireDtype(prefix + weightKey, wt, DType.I8);
    requireDtype(prefix + scaleKey, s, DType.F32);
    requireDtype(prefix + zeroPointKey, z, DType.I32);
    if (biasKey != null) requireDtype(prefix + biasKey, b, DType.F32);
    if (s != null) {
      float[] v = s.toFloatArray();
      for (int c = 0; c < v.length; c++) {
        if (!(v[c] > 0) || Float.isInfinite(v[c])) {
          throw new QuantizedStateException(prefix + scaleKey, "scale must be positive and finite, got scale[" + c
              + "]=" + v[c]);
        }
      }
    }
    if (z != null) {
      long[] v = z.toLongArray();
      for (int c = 0; c < v.length; c++) {
        if (v[c] < QDType.QINT8.min() || v[c] > QDType.QINT8.max()) {
          throw new QuantizedStateException(prefix + zeroPointKey, "zero point out of range for qint8 ("
              + QDType.QINT8.min() + ".." + QDType.QINT8.max() + "), got zero_point[" + c + "]=" + v[c]);
        }
        if (v[c] != 0) {
          throw new QuantizedStateException(prefix + zeroPointKey, "weights are per-channel symmetric, so every zero "
              + "point must be 0, got zero_point[" + c + "]=" + v[c]);
        }
      }
    }
    if (b != null) {
      float[] v = b.toFloatArray();
      for (int c = 0; c < v.length; c++) {
        if (!Float.isFinite(v[c])) {
          throw new QuantizedStateException(prefix + biasKey, "bias must be finite, got bias[" + c + "]=" + v[c]);
        }
      }
    }
  }

  private static void requireDtype(String key, Tensor t, DType want) {
    if (t != null && t.dtype() != want) {
      throw new QuantizedStateException(key, "dtype must be " + want.torchName() + ", got " + t.dtype().torchName());
    }
  }
}
