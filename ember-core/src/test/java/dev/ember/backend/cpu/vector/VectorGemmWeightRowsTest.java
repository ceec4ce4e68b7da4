package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.cpu.Parallel;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link VectorGemm#sgemmWeightRows}: sgemm's bits for x W^T, on one thread and two, or a decline. */
class VectorGemmWeightRowsTest {
  @Test
  void keepsSgemmsBitsOnOneAndTwoThreads() {
    int old = Parallel.threads();
    Random rnd = new Random(7);
    // m: a tile edge, one panel, two panels with an edge; n: below one task, the MLP's 128, uneven chunks;
    // k: one K block, the MLP's 784 (two blocks of 392), a short last block, past INPLACE_KC with n <= NR
    int[][] shapes = {{32, 128, 784}, {5, 16, 100}, {24, 64, 513}, {31, 130, 784}, {33, 100, 1030}, {64, 128, 64},
        {17, 40, 300}, {8, 24, 4100}};
    try {
      for (int[] s : shapes) {
        int m = s[0];
        int n = s[1];
        int k = s[2];
        for (float beta : new float[] {0f, 1f, 0.5f}) {
          int ldx = k + 3;
          int ldw = k + 5;
          int ldc = n + 2;
          float[] x = random(rnd, 2 + m * ldx);
          float[] w = random(rnd, 1 + n * ldw);
          float[] c0 = random(rnd, 4 + m * ldc);
          if (beta == 0) c0[4] = Float.NaN; // beta 0 ignores C, NaN too
          float[] want = c0.clone();
          VectorGemm.sgemm(false, true, m, n, k, 1f, x, 2, ldx, w, 1, ldw, beta, want, 4, ldc);
          for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            float[] got = c0.clone();
            String what = m + "x" + n + "x" + k + ", beta " + beta + ", " + threads + " thread(s)";
            boolean ran = VectorGemm.sgemmWeightRows(m, n, k, x, 2, ldx, w, 1, ldw, beta, got, 4, ldc);
            // the 12-row kernels, and x within two NR-wide panels (NR = 2 vectors: 64 rows on AVX-512, 16 on NEON)
            boolean applies = VectorGemm.MR == 12
                && m <= 4 * jdk.incubator.vector.FloatVector.SPECIES_PREFERRED.length();
            assertEquals(applies, ran, what);
            if (!ran) continue;
            for (int i = 0; i < got.length; i++) {
              if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
                fail(what + ": element " + i + " is " + got[i] + ", sgemm gives " + want[i]);
              }
            }
          }
        }
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void declinesWhereSgemmTakesAnotherPathOrTheWeightIsNotTheLargerOperand() {
    float[] big = new float[1 << 20];
    assertFalse(VectorGemm.sgemmWeightRows(4, 128, 784, big, 0, 784, big, 0, 784, 0f, big, 0, 128),
        "SkinnyGemm's rows");
    assertFalse(VectorGemm.sgemmWeightRows(65, 256, 784, big, 0, 784, big, 0, 784, 0f, big, 0, 256),
        "more than 64 rows");
    assertFalse(VectorGemm.sgemmWeightRows(32, 63, 784, big, 0, 784, big, 0, 784, 0f, big, 0, 63), "W under 2m rows");
    assertFalse(VectorGemm.sgemmWeightRows(16, 2048, 2048, big, 0, 2048, big, 0, 2048, 0f, big, 0, 2048),
        "sgemm's swapped path");
  }

  private static float[] random(Random rnd, int size) {
    float[] a = new float[size];
    for (int i = 0; i < size; i++) a[i] = (float) rnd.nextGaussian();
    return a;
  }
}
