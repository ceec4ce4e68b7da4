package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.cpu.vector.VectorGemm;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class GemmTest {
  private static final int[][] SHAPES = {
      {0, 5, 3}, {5, 0, 3}, {4, 6, 0}, {1, 1, 1}, {3, 3, 3}, {7, 7, 7}, {15, 15, 15}, {16, 16, 16},
      {17, 17, 17}, {33, 33, 33}, {100, 100, 100}, {13, 37, 19}, {1, 1000, 3}, {130, 70, 300},
      {12, 32, 256}, {25, 65, 513}, {121, 33, 257}, {64, 160, 40}, {3, 7, 1}, {200, 9, 100},
      // short A against a wide B: A B^T goes through C^T = B A^T, written back in 16 x 16 blocks
      // with scalar edges (rows past the last whole 16 and columns past the last whole 16)
      {32, 1024, 256}, {5, 200, 300}, {8, 512, 300}, {20, 1000, 300}, {33, 2050, 600},
      // at most 4 rows of op(A): SkinnyGemm, unpacked dot products / row sums, split over columns when big
      {1, 128, 784}, {4, 300, 1000}, {2, 70, 33}, {3, 129, 17}, {1, 10, 128}, {4, 65, 16},
      // over 16M multiply-adds with more rows than columns: row chunks sharing packed B blocks, three
      // K blocks (the next packed while the current one is multiplied) and an edge panel
      {260, 130, 1100},
      // one B panel wide with op(A) = A: 8-row tiles read A in place in one K block, short tiles (4 and 7
      // rows here) copied and run through the same kernel; past 4096, two K blocks (32 x 300 x 4200 A B^T runs as
      // C^T = B A^T: 300 rows of B in place, a 4-row edge)
      {28, 20, 1100}, {23, 20, 700}, {20, 20, 4200}, {32, 300, 4200},
      // at most 48 rows of op(A) against a B of 256K+ elements and K >= 512 (op(B) = B): K in two parts of
      // 128-row blocks of whole B rows, a partial C each; an edge panel (1000 = 31 x 32 + 8), an 8-row edge
      // tile, a short last block (1100 = 8 x 128 + 76); at the thresholds, 4 blocks split 2 + 2, and 5
      // (600 = 4 x 128 + 88) split 2 + 3
      {20, 1000, 1100}, {32, 512, 512}, {44, 520, 600},
      // full 12 x 32 tiles written to C from the kernels' accumulators, on the first K block and on the two
      // later ones (1030 = 3 x 344), beside a 6-row edge tile and a 4-column edge panel
      {150, 100, 1030},
      // wider than a B block where the L2 sets it to 1024 columns (VectorGemm.nc): the row-split schedule's column
      // blocks (1100 x 1060, 16M+ multiply-adds) and one thread's (100 x 2100)
      {1100, 1060, 20}, {100, 2100, 100},
      // 16M+ multiply-adds, wider than tall: four column tasks, a thread packing each block of op(A) once for the two
      // it runs (VectorGemm.packedA): one A block and one K block, then two of each
      {100, 1000, 300}, {200, 1000, 700}};
  private static final float[][] ALPHA_BETA = {{1f, 0f}, {1f, 1f}, {1.5f, 0.5f}, {-0.75f, 0f}};

  private interface Sgemm {
    void run(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
        float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc);
  }

  /** Operands laid out with offsets and padded leading dimensions, so overruns show up. */
  private record Case(boolean transA, boolean transB, int m, int n, int k, float alpha, float beta,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float[] c, int cOff, int ldc) {
    static Case make(boolean transA, boolean transB, int m, int n, int k, float alpha, float beta, long seed,
        boolean nanC) {
      SplittableRandom rnd = new SplittableRandom(seed);
      int aRows = transA ? k : m;
      int aCols = transA ? m : k;
      int bRows = transB ? n : k;
      int bCols = transB ? k : n;
      int lda = aCols + 3;
      int ldb = bCols + 5;
      int ldc = n + 2;
      int aOff = 7;
      int bOff = 11;
      int cOff = 4;
      float[] a = fill(aOff + aRows * lda + 3, rnd);
      float[] b = fill(bOff + bRows * ldb + 3, rnd);
      float[] c = fill(cOff + m * ldc + 3, rnd);
      if (nanC) Arrays.fill(c, Float.NaN);
      return new Case(transA, transB, m, n, k, alpha, beta, a, aOff, lda, b, bOff, ldb, c, cOff, ldc);
    }

    float[] run(Sgemm g) {
      float[] out = c.clone();
      g.run(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, out, cOff, ldc);
      return out;
    }

    double opA(int i, int p) {
      return transA ? a[aOff + p * lda + i] : a[aOff + i * lda + p];
    }

    double opB(int p, int j) {
      return transB ? b[bOff + j * ldb + p] : b[bOff + p * ldb + j];
    }

    /** Double-precision oracle; the window's old value is read only when beta != 0. */
    double expected(int i, int j) {
      double s = 0;
      for (int p = 0; p < k; p++) s += opA(i, p) * opB(p, j);
      double old = c[cOff + i * ldc + j];
      return beta == 0 ? alpha * s : alpha * s + (double) beta * old;
    }

    void check(float[] got, String who) {
      double tol = 1e-5 * Math.max(k, 1) * 4 * Math.abs(alpha) + 1e-5 * Math.max(Math.abs(beta), 1) * 2 + 1e-6;
      String label = who + " tA=" + transA + " tB=" + transB + " m=" + m + " n=" + n + " k=" + k
          + " alpha=" + alpha + " beta=" + beta;
      boolean[] inside = new boolean[c.length];
      for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
          int idx = cOff + i * ldc + j;
          inside[idx] = true;
          double want = expected(i, j);
          float g = got[idx];
          if (!Float.isFinite(g) || Math.abs(g - want) > tol) {
            fail(label + ": C[" + i + "," + j + "] = " + g + ", expected " + want);
          }
        }
      }
      for (int idx = 0; idx < c.length; idx++) {
        if (!inside[idx] && Float.floatToRawIntBits(got[idx]) != Float.floatToRawIntBits(c[idx])) {
          fail(label + ": C outside the window changed at flat index " + idx);
        }
      }
    }
  }

  private static float[] fill(int size, SplittableRandom rnd) {
    float[] x = new float[size];
    for (int i = 0; i < size; i++) x[i] = (float) (rnd.nextDouble() * 2 - 1);
    return x;
  }

  private static void checkAll(Sgemm g, String who) {
    long seed = 1;
    for (int[] s : SHAPES) {
      for (int t = 0; t < 4; t++) {
        for (float[] ab : ALPHA_BETA) {
          Case cs = Case.make((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], ab[0], ab[1], seed++, false);
          cs.check(cs.run(g), who);
        }
        Case nan = Case.make((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 0.5f, 0f, seed++, true);
        nan.check(nan.run(g), who + " (NaN-filled C, beta=0)");
      }
    }
  }

  /**
   * The skinny path's dot products (m <= 4, B transposed) sum each vector's lanes in lane order, the
   * same bits before and after C2 compiles the loop: reduceLanes(ADD) reduced in a different order
   * once compiled, so a result depended on how warm the JIT was (a trainer test comparing two runs
   * of the same batches failed by one ulp depending on which tests ran before it). The blocks of eight and four
   * rows and the single rows sum alike.
   */
  @Test
  void skinnyDotsSumLanesInOrderColdAndCompiled() {
    int lanes = jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.length();
    int m = 3, n = 15, k = 5 * lanes + 3, kv = k - k % lanes; // rows of B in a block of 8, one of 4, then one by one
    SplittableRandom rnd = new SplittableRandom(5);
    float[] a = fill(m * k, rnd), b = fill(n * k, rnd);
    float[] want = new float[m * n];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        float[] acc = new float[lanes];
        for (int p = 0; p < kv; p++) acc[p % lanes] = Math.fma(a[i * k + p], b[j * k + p], acc[p % lanes]);
        float d = acc[0];
        for (int l = 1; l < lanes; l++) d += acc[l];
        for (int p = kv; p < k; p++) d = Math.fma(a[i * k + p], b[j * k + p], d);
        want[i * n + j] = d;
      }
    }
    for (int rep = 0; rep < 20_000; rep++) {
      float[] c = new float[m * n];
      VectorGemm.sgemm(false, true, m, n, k, 1f, a, 0, k, b, 0, k, 0f, c, 0, n);
      if (rep % 5_000 == 0 || rep == 19_999) {
        for (int i = 0; i < c.length; i++) {
          assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(c[i]), "call " + rep + " element " + i);
        }
      }
    }
  }

  @Test
  void vectorSgemmMatchesOracle() {
    checkAll(VectorGemm::sgemm, "VectorGemm.sgemm");
  }

  @Test
  void vectorSgemmMatchesOracleOnTwoThreads() {
    int before = Parallel.threads();
    Parallel.setThreads(2);
    try {
      checkAll(VectorGemm::sgemm, "VectorGemm.sgemm(2 threads)");
    } finally {
      Parallel.setThreads(before);
    }
  }

  @Test
  void scalarSgemmMatchesOracle() {
    checkAll(ScalarGemm::sgemm, "ScalarGemm.sgemm");
  }

  /** dgemm runs through the float cases widened to double, with a tolerance at double precision. */
  @Test
  void scalarDgemmMatchesOracle() {
    long seed = 100;
    for (int[] s : SHAPES) {
      for (int t = 0; t < 4; t++) {
        for (float[] ab : ALPHA_BETA) {
          Case cs = Case.make((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], ab[0], ab[1], seed++, false);
          double[] a = widen(cs.a());
          double[] b = widen(cs.b());
          double[] c = widen(cs.c());
          ScalarGemm.dgemm(cs.transA(), cs.transB(), cs.m(), cs.n(), cs.k(), cs.alpha(), a, cs.aOff(), cs.lda(),
              b, cs.bOff(), cs.ldb(), cs.beta(), c, cs.cOff(), cs.ldc());
          for (int i = 0; i < cs.m(); i++) {
            for (int j = 0; j < cs.n(); j++) {
              assertEquals(cs.expected(i, j), c[cs.cOff() + i * cs.ldc() + j], 1e-12 * (cs.k() + 1),
                  "dgemm m=" + cs.m() + " n=" + cs.n() + " k=" + cs.k() + " at " + i + "," + j);
            }
          }
        }
      }
    }
    double[] c = new double[4];
    Arrays.fill(c, Double.NaN);
    ScalarGemm.dgemm(false, false, 2, 2, 1, 1, new double[] {1, 2}, 0, 1, new double[] {3, 4}, 0, 2, 0, c, 0, 2);
    assertTrue(Arrays.equals(new double[] {3, 4, 6, 8}, c));
  }

  private static double[] widen(float[] x) {
    double[] y = new double[x.length];
    for (int i = 0; i < x.length; i++) y[i] = x[i];
    return y;
  }

  /**
   * Column tasks of one product on two threads share their thread's packed blocks of op(A) (VectorGemm.packedA):
   * the next product, even on the same array rewritten in place and the same shapes, packs them again. A stale
   * block would give the first product's C; the result must be the one-thread product's bits. Shapes: one block,
   * 2 x 2 blocks, and 3 x 3 blocks, more than a thread keeps (the rest packed as usual).
   */
  @Test
  void columnTasksReusePackedAOnlyWithinOneProduct() {
    int before = Parallel.threads();
    try {
      for (int t = 0; t < 6; t++) {
        boolean transA = t % 2 == 1;
        int[] shape = new int[][] {{100, 1000, 300}, {200, 1000, 700}, {300, 1000, 1100}}[t / 2];
        int m = shape[0], n = shape[1], k = shape[2];
        SplittableRandom rnd = new SplittableRandom(7 + t);
        float[] a = fill(m * k, rnd), b = fill(k * n, rnd);
        int lda = transA ? m : k;
        float[] first = new float[m * n];
        Parallel.setThreads(2);
        VectorGemm.sgemm(transA, false, m, n, k, 1f, a, 0, lda, b, 0, n, 0f, first, 0, n);
        for (int i = 0; i < a.length; i++) a[i] = -0.5f * a[i] + 0.25f;
        float[] two = new float[m * n];
        VectorGemm.sgemm(transA, false, m, n, k, 1f, a, 0, lda, b, 0, n, 0f, two, 0, n);
        Parallel.setThreads(1);
        float[] one = new float[m * n];
        VectorGemm.sgemm(transA, false, m, n, k, 1f, a, 0, lda, b, 0, n, 0f, one, 0, n);
        String label = m + "x" + k + "x" + n + " tA=" + transA;
        assertTrue(Arrays.equals(one, two), label + ": the second product on two threads is not A's new values'");
        assertTrue(!Arrays.equals(first, two), label + ": rewriting A changed nothing");
      }
    } finally {
      Parallel.setThreads(before);
    }
  }

  @Test
  void vectorSgemmIsBitwiseIndependentOfThreadCount() {
    int before = Parallel.threads();
    try {
      for (int t = 0; t < 4; t++) {
        for (int[] s : new int[][] {{300, 257, 129}, {40, 700, 300}, {100, 20, 4200}, {40, 700, 1600},
            {1100, 1060, 20}, {100, 2100, 100}, {100, 1000, 300}, {200, 1000, 700}, {600, 300, 600},
            {600, 200, 1500}}) {
          Case cs = Case.make((t & 1) != 0, (t & 2) != 0, s[0], s[1], s[2], 0.75f, 0.5f, 42 + t, false);
          List<float[]> results = new ArrayList<>();
          for (int threads : new int[] {1, 2, 3}) {
            Parallel.setThreads(threads);
            results.add(cs.run(VectorGemm::sgemm));
          }
          for (float[] r : results) {
            assertTrue(Arrays.equals(results.get(0), r), "results differ across thread counts, tA/tB=" + t);
          }
        }
      }
    } finally {
      Parallel.setThreads(before);
    }
  }
}
