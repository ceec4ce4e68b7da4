package dev.ember.quant;

import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Quantize and dequantize, as PyTorch's {@code torch.quantize_per_tensor}, {@code torch.quantize_per_channel}
 * and {@code Tensor.dequantize} on the CPU: {@code q = clamp(rint(x * (1f / scale)) + zeroPoint, min, max)}
 * with the product in float32 and {@code rint} rounding half to even (fbgemm multiplies by the float
 * reciprocal instead of dividing, and so does this), and {@code x = (q - zeroPoint) * scale} back.
 */
public final class Quantization {
  private Quantization() {}

  /** Quantizes with parameters already chosen (by an observer or by hand). */
  public static QTensor quantize(Tensor x, QParams params) {
    int[] shape = x.shape();
    checkChannels("quantize", shape, params);
    float[] v = x.toFloatArray();
    byte[] out = new byte[v.length];
    if (!params.perChannel()) {
      quantizeRange(v, 0, v.length, params.scaleAt(0), params.zeroPointAt(0), params.dtype(), out, 0);
    } else {
      int axis = params.axis();
      int channels = shape[axis];
      int inner = 1;
      for (int d = axis + 1; d < shape.length; d++) inner *= shape[d];
      int outer = channels == 0 || inner == 0 ? 0 : v.length / (channels * inner);
      for (int o = 0; o < outer; o++) {
        for (int c = 0; c < channels; c++) {
          int off = (o * channels + c) * inner;
          quantizeRange(v, off, inner, params.scaleAt(c), params.zeroPointAt(c), params.dtype(), out, off);
        }
      }
    }
    return new QTensor(out, shape, params);
  }

  /**
   * Quantizes by a scheme: the parameters come from a {@link MinMaxObserver} (per tensor) or a
   * {@link PerChannelMinMaxObserver} (per channel) that has seen only {@code x}, as
   * {@code observer(x); quantize(x, *observer.calculate_qparams())} in PyTorch.
   */
  public static QTensor quantize(Tensor x, QScheme scheme) {
    Observer obs = scheme.perChannel() ? new PerChannelMinMaxObserver(scheme, false) : new MinMaxObserver(scheme, false);
    obs.observe(x);
    return quantize(x, obs.calculateQParams());
  }

  public static QTensor quantizePerTensor(Tensor x, double scale, int zeroPoint, QDType dtype) {
    return quantize(x, QParams.perTensor(dtype, scale, zeroPoint));
  }

  public static QTensor quantizePerChannel(Tensor x, float[] scales, int[] zeroPoints, int axis, QDType dtype) {
    return quantize(x, QParams.perChannel(dtype, axis, scales, zeroPoints));
  }

  /** {@code (q - zeroPoint) * scale} per element, as float32. */
  public static Tensor dequantize(QTensor q) {
    QParams p = q.params();
    byte[] data = q.data();
    float[] out = new float[data.length];
    QDType t = p.dtype();
    int[] shape = q.shape();
    if (!p.perChannel()) {
      float s = p.scaleAt(0);
      int z = p.zeroPointAt(0);
      for (int i = 0; i < out.length; i++) out[i] = (t.read(data[i]) - z) * s;
    } else {
      int axis = p.axis();
      int channels = shape[axis];
      int inner = 1;
      for (int d = axis + 1; d < shape.length; d++) inner *= shape[d];
      for (int i = 0; i < out.length; i++) {
        int c = (i / inner) % channels;
        out[i] = (t.read(data[i]) - p.zeroPointAt(c)) * p.scaleAt(c);
      }
    }
    return Tensor.of(out, shape);
  }

  /**
   * The quantization loop itself, for kernels that quantize slices of their own arrays (dynamic quantization
   * of activations): {@code out[outOff + i] = q(x[off + i])} for {@code i < n}, on the CPU backend's
   * {@link dev.ember.backend.Backend#quantizeInt8} (the Vector API kernel where it is readable, same bits).
   *
   * @throws IllegalArgumentException naming the element when a value is NaN (it has no quantized value)
   */
  public static void quantizeRange(float[] x, int off, int n, float scale, int zeroPoint, QDType dtype, byte[] out,
      int outOff) {
    Device.CPU.backend().quantizeInt8(x, off, n, scale, zeroPoint, dtype.min(), dtype.max(), out, outOff);
  }

  static void checkChannels(String op, int[] shape, QParams p) {
    if (!p.perChannel()) return;
    if (p.axis() >= shape.length) {
      throw new IllegalArgumentException(op + ": channel axis " + p.axis() + " out of range for rank " + shape.length
          + ": x=" + Arrays.toString(shape));
    }
    if (shape[p.axis()] != p.channels()) {
      throw new IllegalArgumentException(op + ": " + p.channels() + " scales for " + shape[p.axis()]
          + " channels along axis " + p.axis() + ": x=" + Arrays.toString(shape));
    }
  }

  /**
   * {@code sum_p b[j * k + p]} per row j of int8 values b [n, k]: the zero-point correction of an int8 product's
   * output channel j ({@link dev.ember.backend.Backend#int8LinearDequantize}'s {@code bRowSum}).
   */
  public static int[] rowSums(byte[] b, int n, int k) {
    int[] s = new int[n];
    for (int j = 0; j < n; j++) {
      int t = 0;
      for (int p = 0; p < k; p++) t += b[j * k + p];
      s[j] = t;
    }
    return s;
  }
}
