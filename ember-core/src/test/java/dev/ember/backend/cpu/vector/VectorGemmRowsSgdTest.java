package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.Slot;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link VectorGemm#sgemmRowsSgd}: SGD's update from the weight gradient's registers has the bits of sgemmRows
 * handing the gradient to the optimizer's sgd kernel, on one thread and two.
 */
class VectorGemmRowsSgdTest {
  @Test
  void keepsTheBitsOfSgemmRowsAndTheSgdKernel() {
    int old = Parallel.threads();
    Random rnd = new Random(11);
    VectorUpdateKernels sgd = new VectorUpdateKernels();
    // m x n x k: the MNIST MLP's first weight at batch 32 (short tiles of 8 rows on one thread, 4 on two); edges in
    // rows and columns; one tile; K = KC; a short tile of 6 rows (4 + 2) beside an edge column
    int[][] shapes = {{128, 784, 32}, {37, 70, 5}, {12, 32, 17}, {200, 100, 512}, {9, 33, 64}, {30, 65, 8}};
    try {
      for (int[] s : shapes) {
        int m = s[0];
        int n = s[1];
        int k = s[2];
        int lda = m + 3;
        int ldb = n + 1;
        float[] a = random(rnd, 2 + k * lda);
        float[] b = random(rnd, 5 + k * ldb);
        float[] w0 = random(rnd, 3 + m * n);
        for (float[] coef : new float[][] {{0.01f, 0f, 1f}, {0.5f, 1e-3f, -1f}}) {
          float lr = coef[0];
          float wd = coef[1];
          float sign = coef[2];
          float[] want = w0.clone();
          VectorGemm.sgemmRows(true, false, m, n, k, a, 2, lda, b, 5, ldb, (r0, r1, c, off) ->
              sgd.sgd(new Slot(want, 3), new Slot(c, off - r0 * n), r0 * n, r1 * n, lr, wd, sign));
          for (int threads = 1; threads <= 2; threads++) {
            Parallel.setThreads(threads);
            float[] got = w0.clone();
            String what = m + "x" + n + "x" + k + ", lr " + lr + ", wd " + wd + ", " + threads + " thread(s)";
            boolean ran = VectorGemm.sgemmRowsSgd(m, n, k, a, 2, lda, b, 5, ldb, got, 3, lr, wd, sign);
            assertEquals(VectorGemm.MR == 12, ran, what);
            if (!ran) continue;
            for (int i = 0; i < got.length; i++) {
              if (Float.floatToRawIntBits(got[i]) != Float.floatToRawIntBits(want[i])) {
                fail(what + ": element " + i + " is " + got[i] + ", sgemmRows + sgd gives " + want[i]);
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
  void declinesMoreThanOneKBlockAndSkinnyProducts() {
    float[] big = new float[1 << 16];
    assertFalse(VectorGemm.sgemmRowsSgd(16, 16, 513, big, 0, 16, big, 0, 16, big, 0, 0.1f, 0f, 1f), "K past one block");
    assertFalse(VectorGemm.sgemmRowsSgd(4, 64, 32, big, 0, 4, big, 0, 64, big, 0, 0.1f, 0f, 1f), "SkinnyGemm's rows");
  }

  private static float[] random(Random rnd, int size) {
    float[] x = new float[size];
    for (int i = 0; i < size; i++) x[i] = (float) rnd.nextGaussian();
    return x;
  }
}
