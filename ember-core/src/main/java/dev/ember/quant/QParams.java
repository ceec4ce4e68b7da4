package dev.ember.quant;

import java.util.Arrays;

/**
 * Quantization parameters: real = (q - zeroPoint) * scale, with one scale and zero point for the whole tensor
 * ({@code axis == -1}, arrays of length 1) or one per index of {@code axis}. Scales are float32 as PyTorch's
 * observers compute them.
 */
public record QParams(QDType dtype, int axis, float[] scales, int[] zeroPoints) {
  public QParams {
    if (dtype == null) throw new IllegalArgumentException("QParams: dtype must not be null");
    if (axis < -1) throw new IllegalArgumentException("QParams: axis must be >= -1, got " + axis);
    if (scales.length != zeroPoints.length || scales.length == 0 || (axis == -1 && scales.length != 1)) {
      throw new IllegalArgumentException("QParams: need " + (axis == -1 ? "one scale and one zero point" :
          "as many scales as zero points (>= 1)") + ", got scales=" + scales.length + ", zero_points=" + zeroPoints.length);
    }
    for (int c = 0; c < scales.length; c++) {
      if (!(scales[c] > 0) || Float.isInfinite(scales[c])) {
        throw new IllegalArgumentException("QParams: scale must be positive and finite, got scale[" + c + "]=" + scales[c]);
      }
      if (zeroPoints[c] < dtype.min() || zeroPoints[c] > dtype.max()) {
        throw new IllegalArgumentException("QParams: zero point out of range for " + dtype.torchName() + " ("
            + dtype.min() + ".." + dtype.max() + "), got zero_point[" + c + "]=" + zeroPoints[c]);
      }
    }
    scales = scales.clone();
    zeroPoints = zeroPoints.clone();
  }

  public static QParams perTensor(QDType dtype, double scale, int zeroPoint) {
    return new QParams(dtype, -1, new float[] {(float) scale}, new int[] {zeroPoint});
  }

  public static QParams perChannel(QDType dtype, int axis, float[] scales, int[] zeroPoints) {
    if (axis < 0) throw new IllegalArgumentException("QParams.perChannel: axis must be >= 0, got " + axis);
    return new QParams(dtype, axis, scales, zeroPoints);
  }

  public boolean perChannel() {
    return axis >= 0;
  }

  @Override
  public float[] scales() {
    return scales.clone();
  }

  @Override
  public int[] zeroPoints() {
    return zeroPoints.clone();
  }

  float scaleAt(int c) {
    return scales[c];
  }

  int zeroPointAt(int c) {
    return zeroPoints[c];
  }

  int channels() {
    return scales.length;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof QParams p && p.dtype == dtype && p.axis == axis && Arrays.equals(p.scales, scales)
        && Arrays.equals(p.zeroPoints, zeroPoints);
  }

  @Override
  public int hashCode() {
    return 31 * (31 * dtype.hashCode() + axis) + 31 * Arrays.hashCode(scales) + Arrays.hashCode(zeroPoints);
  }

  @Override
  public String toString() {
    return "QParams(" + dtype.torchName() + (axis >= 0 ? ", axis=" + axis : "") + ", scale=" + Arrays.toString(scales)
        + ", zero_point=" + Arrays.toString(zeroPoints) + ")";
  }
}
