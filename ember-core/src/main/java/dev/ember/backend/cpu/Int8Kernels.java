package dev.ember.backend.cpu;

/**
 * The int8 GEMM inner kernel: dot products of int8 rows, accumulated exactly in int32. {@code a} is [m, k] and
 * {@code b} is [n, k], both row-major (b is a Linear weight as stored: its rows are output channels), and
 * {@code acc[(i - row0) * ldAcc + (j - j0)] = sum_p a[i * k + p] * b[j * k + p]} for the rows
 * {@code [row0, row0 + rows)} and columns {@code [j0, j1)}. int32 cannot overflow for k up to 2^16 (|a * b| &lt;= 2^14), which {@link Int8Gemm} checks. Implementations: {@link ScalarInt8Kernels} (the oracle) and the
 * Vector API ones in {@code dev.ember.backend.cpu.vector}.
 */
public interface Int8Kernels {
  void dotBlock(byte[] a, int row0, int rows, byte[] b, int j0, int j1, int k, int[] acc, int ldAcc);
}
