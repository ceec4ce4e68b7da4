package dev.ember.backend.cpu;

/**
 * The int8 kernels: dot products of int8 rows accumulated exactly in int32, and the float -&gt; int8 quantization
 * of activations. {@code a} is [m, k] and {@code b} is [n, k], both row-major (b is a Linear weight as stored: its
 * rows are output channels). int32 cannot overflow for k up to 2^16 (|a * b| &lt;= 2^14), which {@link Int8Gemm}
 * checks. Implementations: {@link ScalarInt8Kernels} (the oracle) and the Vector API ones in
 * {@code dev.ember.backend.cpu.vector}; every method gives the same bits in both.
 */
public interface Int8Kernels {
  /**
   * {@code acc[(i - row0) * ldAcc + (j - j0)] = sum_p a[i * k + p] * b[j * k + p]} for the rows
   * {@code [row0, row0 + rows)} and columns {@code [j0, j1)}.
   */
  void dotBlock(byte[] a, int row0, int rows, byte[] b, int j0, int j1, int k, int[] acc, int ldAcc);

  /** Columns of a packed panel of B ({@link #panelDot}); a multiple of the vector width. */
  int panelWidth();

  /**
   * The packed product: {@code acc[accOff + r * ldAcc + c] = sum_p a[aOff + r * k + p] * bp[bpOff + p * w + c]} for
   * {@code r < rows}, {@code c < w} ({@code w = panelWidth()}), where {@code a} holds int8 values widened to float
   * (rows of A, each widened once per product) and {@code bp} a panel of B packed k-major: {@code w} output
   * channels side by side for each p ({@link Int8Gemm#packPanels}).
   */
  void panelDot(float[] a, int aOff, int rows, int k, byte[] bp, int bpOff, int[] acc, int accOff, int ldAcc);

  /**
   * {@code out[outOff + i] = clamp(rint(x[off + i] * (1f / scale)) + zeroPoint, qmin, qmax)} for {@code i < n}
   * (float32 product, rint half to even), as {@code torch.quantize_per_tensor}.
   *
   * @throws IllegalArgumentException naming the element when a value is NaN (it has no quantized value)
   */
  void quantize(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax, byte[] out, int outOff);

  /** {@code {min, max}} of {@code x[off, off + n)} by {@link Math#min}/{@link Math#max} (NaN if any is NaN). */
  float[] minMax(float[] x, int off, int n);

  /**
   * The requantizing epilogue of a run of int32 sums that share one output channel (the convolution's orientation):
   * {@code out[outOff + i] = clamp(rint(v * inv) + outZero, outMin, outMax)} with {@code v = (acc[accOff + i] - corr)
   * * scale}, plus {@code bias} when {@code hasBias}, for {@code i < n}, in float32 and rint half to even. The caller
   * makes sure {@code acc - corr} cannot leave the int range, so the difference converts to the same float as the
   * long one of {@code Backend.int8LinearRequantize}.
   */
  default void requantizeRow(int[] acc, int accOff, int n, int corr, float scale, float bias, boolean hasBias,
      float inv, int outZero, int outMin, int outMax, byte[] out, int outOff) {
    for (int i = 0; i < n; i++) {
      float v = (acc[accOff + i] - corr) * scale;
      if (hasBias) v += bias;
      double q = Math.rint(v * inv) + outZero;
      out[outOff + i] = (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
    }
  }

  /**
   * {@link #requantizeRow} with one output channel per element (the linear's orientation): channel {@code col + i}
   * takes {@code corr[col + i]}, {@code scale[col + i]} and {@code bias[col + i]} ({@code bias} may be null).
   */
  default void requantizeColumns(int[] acc, int accOff, int n, int[] corr, float[] scale, float[] bias, int col,
      float inv, int outZero, int outMin, int outMax, byte[] out, int outOff) {
    for (int i = 0; i < n; i++) {
      float v = (acc[accOff + i] - corr[col + i]) * scale[col + i];
      if (bias != null) v += bias[col + i];
      double q = Math.rint(v * inv) + outZero;
      out[outOff + i] = (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
    }
  }
}
