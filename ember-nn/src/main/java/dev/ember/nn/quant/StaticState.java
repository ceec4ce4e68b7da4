package dev.ember.nn.quant;

import dev.ember.nn.Module;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;

/**
 * The state of a static quantized layer in its buffers, so {@code stateDict()}, safetensors files and checkpoints
 * carry it (the layout of the package documentation): {@code weight} (I8), {@code weight_scale} (F32, one per output
 * channel or one), {@code weight_zero_point} (I32, all 0), {@code bias} (F32, absent without one), {@code input_scale}
 * / {@code input_zero_point} (F32 [1] / I32 [1]) and {@code scale} / {@code zero_point} of the output (as torch's
 * quantized modules name them). The kernel's operands are derived from the buffers and cached against their identity
 * and storage version, so a {@code loadStateDict} is seen by the next forward. The activation dtypes (qint8 or quint8)
 * and whether the weight is quantized per tensor or per channel are part of the layer, as its shape is (with one
 * output channel the buffers alone could not tell).
 */
final class StaticState {
  private static final String[] KEYS = {"weight", "weight_scale", "weight_zero_point", "input_scale",
      "input_zero_point", "scale", "zero_point", "bias"};

  final int out;
  final int rowLen;
  final int[] weightShape;
  final QDType inType;
  final QDType outType;
  final boolean hasBias;
  final boolean perTensorWeight;
  private Tensor[] seen;
  private int[] versions;
  byte[] w;
  /** {@link #w} as the kernel's matrix [out, rowLen]: its packed form is made on first use and kept. */
  dev.ember.backend.Int8Matrix wm;
  float[] wScales;   // as stored: one per channel, or one
  float[] rowScale;  // one per output channel
  int[] rowSum;
  float[] bias;
  QParams input;
  QParams output;

  private StaticState(int[] weightShape, QDType inType, QDType outType, boolean hasBias, boolean perTensorWeight) {
    this.weightShape = weightShape;
    this.out = weightShape[0];
    this.rowLen = out == 0 ? 0 : Arrays.stream(weightShape).skip(1).reduce(1, (a, b) -> a * b);
    this.inType = inType;
    this.outType = outType;
    this.hasBias = hasBias;
    this.perTensorWeight = perTensorWeight;
  }

  static StaticState register(Module owner, QTensor weight, Tensor bias, QParams in, QParams out) {
    int[] shape = weight.shape();
    owner.registerBuffer("weight", TensorData.wrapInt8(weight.bytes(), shape));
    float[] s = weight.params().scales();
    owner.registerBuffer("weight_scale", Tensor.of(s, s.length));
    owner.registerBuffer("weight_zero_point", Tensor.of(new int[s.length], s.length));
    owner.registerBuffer("input_scale", Tensor.of(in.scales(), 1));
    owner.registerBuffer("input_zero_point", Tensor.of(in.zeroPoints(), 1));
    owner.registerBuffer("scale", Tensor.of(out.scales(), 1));
    owner.registerBuffer("zero_point", Tensor.of(out.zeroPoints(), 1));
    if (bias != null) owner.registerBuffer("bias", Tensor.of(bias.detach().toFloatArray(), shape[0]));
    return new StaticState(shape, in.dtype(), out.dtype(), bias != null, !weight.params().perChannel());
  }

  /** Brings the cached operands up to date with {@code owner}'s buffers; whether they changed. */
  boolean refresh(Module owner) {
    int n = hasBias ? KEYS.length : KEYS.length - 1;
    Tensor[] now = new Tensor[n];
    for (int i = 0; i < n; i++) now[i] = owner.buffer(KEYS[i]);
    if (seen != null) {
      boolean same = true;
      for (int i = 0; i < n && same; i++) same = now[i] == seen[i] && now[i].storage().version() == versions[i];
      if (same) return false;
    }
    int[] v = new int[n];
    for (int i = 0; i < n; i++) v[i] = now[i].storage().version();
    byte[] bytes = new byte[out * rowLen];
    if (bytes.length > 0) TensorData.read(TensorData.hostContiguous(now[0]), 0, bytes.length, ByteBuffer.wrap(bytes));
    w = bytes;
    wm = new dev.ember.backend.Int8Matrix(bytes, out, rowLen);
    wScales = now[1].toFloatArray();
    rowScale = wScales.length == out ? wScales : filled(out, wScales[0]);
    rowSum = Quantization.rowSums(bytes, out, rowLen);
    input = new QParams(inType, -1, now[3].toFloatArray(), new int[] {(int) now[4].toLongArray()[0]});
    output = new QParams(outType, -1, now[5].toFloatArray(), new int[] {(int) now[6].toLongArray()[0]});
    bias = hasBias ? now[7].toFloatArray() : null;
    seen = now;
    versions = v;
    return true;
  }

  private static float[] filled(int n, float v) {
    float[] f = new float[n];
    Arrays.fill(f, v);
    return f;
  }

  QTensor weight(Module owner) {
    refresh(owner);
    QParams p = perTensorWeight ? QParams.perTensor(QDType.QINT8, wScales[0], 0)
        : QParams.perChannel(QDType.QINT8, 0, wScales, new int[wScales.length]);
    return QTensor.of(w, weightShape, p);
  }

  /**
   * Rejects state entries that cannot be this layer's: I8 weight; F32 positive finite scales; I32 zero points, 0 for
   * the weight and in the activation dtype's range otherwise; F32 finite bias.
   */
  void checkState(String prefix, Map<String, Tensor> state) {
    require(prefix, state, "weight", DType.I8);
    for (String k : new String[] {"weight_scale", "input_scale", "scale"}) {
      Tensor t = require(prefix, state, k, DType.F32);
      if (t == null) continue;
      float[] v = t.toFloatArray();
      for (int c = 0; c < v.length; c++) {
        if (!(v[c] > 0) || Float.isInfinite(v[c])) {
          throw new QuantizedStateException(prefix + k, "scale must be positive and finite, got " + k + "[" + c + "]="
              + v[c]);
        }
      }
    }
    Tensor wz = require(prefix, state, "weight_zero_point", DType.I32);
    if (wz != null) {
      long[] v = wz.toLongArray();
      for (int c = 0; c < v.length; c++) {
        if (v[c] != 0) {
          throw new QuantizedStateException(prefix + "weight_zero_point", "weights are symmetric, so every zero point"
              + " must be 0, got weight_zero_point[" + c + "]=" + v[c]);
        }
      }
    }
    zeroPoint(prefix, state, "input_zero_point", inType);
    zeroPoint(prefix, state, "zero_point", outType);
    if (hasBias) {
      Tensor b = require(prefix, state, "bias", DType.F32);
      if (b != null) {
        float[] v = b.toFloatArray();
        for (int c = 0; c < v.length; c++) {
          if (!Float.isFinite(v[c])) {
            throw new QuantizedStateException(prefix + "bias", "bias must be finite, got bias[" + c + "]=" + v[c]);
          }
        }
      }
    }
  }

  private static void zeroPoint(String prefix, Map<String, Tensor> state, String key, QDType t) {
    Tensor z = require(prefix, state, key, DType.I32);
    if (z == null) return;
    for (long v : z.toLongArray()) {
      if (v < t.min() || v > t.max()) {
        throw new QuantizedStateException(prefix + key, "zero point out of range for " + t.torchName() + " ("
            + t.min() + ".." + t.max() + "), got " + v);
      }
    }
  }

  private static Tensor require(String prefix, Map<String, Tensor> state, String key, DType want) {
    Tensor t = state.get(prefix + key);
    if (t != null && t.dtype() != want) {
      throw new QuantizedStateException(prefix + key, "dtype must be " + want.torchName() + ", got "
          + t.dtype().torchName());
    }
    return t;
  }
}
