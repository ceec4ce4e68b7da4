package dev.ember.backend.cpu;

/**
 * Reference GEMM in plain Java: the oracle for the vector kernels and the fallback when
 * {@code jdk.incubator.vector} is not available.
 *
 * <p>Row-major: {@code C[i,j] = alpha * sum_p opA[i,p] * opB[p,j] + beta * C[i,j]}. Without
 * transA, A is m x k with {@code A[i,p] = a[aOff + i*lda + p]}; with transA it is stored k x m and
 * {@code opA[i,p] = a[aOff + p*lda + i]}. B likewise (k x n, or stored n x k when transB). beta == 0
 * overwrites C, so NaNs in the old C do not leak through.
 */
public final class ScalarGemm {
  /** Rows per dgemm task; fixed so results do not depend on the thread count. */
  private static final int DGEMM_ROWS = 16;

  private ScalarGemm() {}

  public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    if (m <= 0 || n <= 0) return;
    float[] acc = new float[n];
    for (int i = 0; i < m; i++) {
      if (transB) {
        // opB rows are strided but opB columns are contiguous: a dot product per C element reads both operands in order
        for (int j = 0; j < n; j++) {
          int bj = bOff + j * ldb;
          float s = 0;
          for (int p = 0; p < k; p++) s += opA(transA, a, aOff, lda, i, p) * b[bj + p];
          acc[j] = s;
        }
      } else {
        // i-p-j order streams rows of B and C, which is what keeps the reference usable on large shapes
        java.util.Arrays.fill(acc, 0f);
        for (int p = 0; p < k; p++) {
          float av = opA(transA, a, aOff, lda, i, p);
          int bp = bOff + p * ldb;
          for (int j = 0; j < n; j++) acc[j] += av * b[bp + j];
        }
      }
      int ci = cOff + i * ldc;
      for (int j = 0; j < n; j++) {
        c[ci + j] = beta == 0 ? alpha * acc[j] : alpha * acc[j] + beta * c[ci + j];
      }
    }
  }

  public static void dgemm(boolean transA, boolean transB, int m, int n, int k, double alpha,
      double[] a, int aOff, int lda, double[] b, int bOff, int ldb, double beta, double[] c, int cOff, int ldc) {
    if (m <= 0 || n <= 0) return;
    int tasks = (long) m * n * k < (1L << 18) ? 1 : Parallel.chunks(m, DGEMM_ROWS);
    int rowsPerTask = tasks == 1 ? m : DGEMM_ROWS;
    Parallel.forEach(tasks, t -> {
      int i0 = t * rowsPerTask;
      int i1 = Math.min(m, i0 + rowsPerTask);
      dgemmRows(transA, transB, i0, i1, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
    });
  }

  private static void dgemmRows(boolean transA, boolean transB, int i0, int i1, int n, int k, double alpha,
      double[] a, int aOff, int lda, double[] b, int bOff, int ldb, double beta, double[] c, int cOff, int ldc) {
    double[] acc = new double[n];
    for (int i = i0; i < i1; i++) {
      if (transB) {
        for (int j = 0; j < n; j++) {
          int bj = bOff + j * ldb;
          double s = 0;
          for (int p = 0; p < k; p++) {
            s += (transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p]) * b[bj + p];
          }
          acc[j] = s;
        }
      } else {
        java.util.Arrays.fill(acc, 0d);
        for (int p = 0; p < k; p++) {
          double av = transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p];
          int bp = bOff + p * ldb;
          for (int j = 0; j < n; j++) acc[j] += av * b[bp + j];
        }
      }
      int ci = cOff + i * ldc;
      for (int j = 0; j < n; j++) {
        c[ci + j] = beta == 0 ? alpha * acc[j] : alpha * acc[j] + beta * c[ci + j];
      }
    }
  }

  private static float opA(boolean transA, float[] a, int aOff, int lda, int i, int p) {
    return transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p];
  }
}
