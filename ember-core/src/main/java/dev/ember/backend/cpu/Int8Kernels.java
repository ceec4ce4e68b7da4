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
}
