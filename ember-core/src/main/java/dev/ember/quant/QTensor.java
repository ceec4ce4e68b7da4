package dev.ember.quant;

import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * An int8 tensor: one byte per element (row-major, contiguous) and its {@link QParams}; the real value of
 * element i is {@code (value(i) - zeroPoint) * scale}, with the scale and zero point of i's channel when the
 * parameters are per channel. Made by {@link Quantization#quantize}; immutable.
 */
public final class QTensor {
  private final byte[] data;
  private final int[] shape;
  private final QParams params;

  QTensor(byte[] data, int[] shape, QParams params) {
    this.data = data;
    this.shape = shape;
    this.params = params;
  }

  /**
   * Wraps stored int8 values (copied) with their parameters, e.g. read back from a file.
   *
   * @throws IllegalArgumentException when the sizes disagree or the channel axis is out of range
   */
  public static QTensor of(byte[] data, int[] shape, QParams params) {
    long numel = 1;
    for (int d : shape) {
      if (d < 0) throw new IllegalArgumentException("QTensor: negative dimension in shape " + Arrays.toString(shape));
      numel *= d;
    }
    if (numel != data.length) {
      throw new IllegalArgumentException("QTensor: " + data.length + " values do not fill shape " + Arrays.toString(shape));
    }
    Quantization.checkChannels("QTensor", shape, params);
    return new QTensor(data.clone(), shape.clone(), params);
  }

  public int[] shape() {
    return shape.clone();
  }

  public int dim() {
    return shape.length;
  }

  public int numel() {
    return data.length;
  }

  public QParams params() {
    return params;
  }

  public QDType dtype() {
    return params.dtype();
  }

  /** The scale of a per-tensor quantized tensor. */
  public double scale() {
    requirePerTensor("scale");
    return params.scaleAt(0);
  }

  /** The zero point of a per-tensor quantized tensor. */
  public int zeroPoint() {
    requirePerTensor("zeroPoint");
    return params.zeroPointAt(0);
  }

  /** The integer value of element {@code i} (row-major index). */
  public int value(int i) {
    return params.dtype().read(data[i]);
  }

  /** All integer values, row-major (torch's {@code int_repr()}). */
  public int[] intRepr() {
    int[] out = new int[data.length];
    QDType t = params.dtype();
    for (int i = 0; i < out.length; i++) out[i] = t.read(data[i]);
    return out;
  }

  /** A copy of the stored bytes (qint8 as signed, quint8 as the low 8 bits). */
  public byte[] bytes() {
    return data.clone();
  }

  /** The stored bytes themselves, for kernels in this library: must not be modified. */
  byte[] data() {
    return data;
  }

  /** Back to float32: {@code (q - zeroPoint) * scale} per element. */
  public Tensor dequantize() {
    return Quantization.dequantize(this);
  }

  private void requirePerTensor(String what) {
    if (params.perChannel()) {
      throw new IllegalStateException("QTensor." + what + ": tensor is quantized per channel (axis " + params.axis()
          + "); use params().scales() / zeroPoints()");
    }
  }

  @Override
  public String toString() {
    return "QTensor(shape=" + Arrays.toString(shape) + ", " + params + ")";
  }
}
