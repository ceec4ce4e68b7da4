package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.cpu.HalfOperand;
import dev.ember.tensor.HalfFloats;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * op(A) = A packed p-major for wide B blocks ({@code VectorGemm.packA}, {@link VectorGemm#PMAJOR_MIN_N}) against
 * the row layout of narrower ones: the layout must change no bits.
 */
class VectorGemmPackTest {
  private static float[] floats(int n, SplittableRandom rnd) {
    float[] f = new float[n];
    for (int i = 0; i < n; i++) f[i] = (float) (rnd.nextDouble() * 4 - 2);
    return f;
  }

  @Test
  void transpose12WritesEachColumnOfTwelveRowsAndAtMostFourFloatsPastTheBlock() {
    SplittableRandom rnd = new SplittableRandom(5);
    int ldb = 37;
    float[] b = floats(3 + 12 * ldb, rnd);
    float[] dst = new float[16 * 12 + 4 + 8];
    java.util.Arrays.fill(dst, Float.NaN);
    Transpose16.transpose12(b, 3, ldb, dst, 0);
    for (int t = 0; t < 16; t++) {
      for (int r = 0; r < 12; r++) assertEquals(b[3 + r * ldb + t], dst[t * 12 + r], "column " + t + ", row " + r);
    }
    for (int i = 192; i < 196; i++) assertEquals(0f, dst[i], "the last result's zero lanes at " + i);
    for (int i = 196; i < dst.length; i++) assertTrue(Float.isNaN(dst[i]), "written past the room at " + i);
  }

  /**
   * C = A B with B PMAJOR_MIN_N or more columns wide (A packed p-major) against the same product computed as
   * column slices narrower than that (A packed as rows): every element bitwise the same. C at least as tall as
   * it is wide, so that on two threads the product splits its rows and each task's B block is the whole width;
   * and a product of few rows and long K (rowsOfB, K in parts of 128-row B blocks), its slices on the same path.
   * The shapes give short edge tiles of rows and columns, K blocks that are not a whole number of 16-column
   * transposes, two K blocks (the second added into C) and alpha/beta other than 1/0.
   */
  @Test
  void pMajorPackGivesTheBitsOfTheRowPack() {
    int[][] shapes = {{520, 520, 600}, {530, 520, 40}, {520, 520, 17}, {40, 1020, 1100}};
    for (int[] sh : shapes) {
      int m = sh[0];
      int n = sh[1];
      int k = sh[2];
      assertTrue(n >= VectorGemm.PMAJOR_MIN_N && n / 2 < VectorGemm.PMAJOR_MIN_N, "shape " + m + "x" + n + "x" + k);
      SplittableRandom rnd = new SplittableRandom(m * 31L + n * 7L + k);
      int lda = k + 3;
      int ldb = n + 5;
      int ldc = n + 2;
      float[] a = floats(m * lda, rnd);
      float[] b = floats(k * ldb, rnd);
      float[] c0 = floats(m * ldc, rnd);
      for (float[] ab : new float[][] {{1f, 0f}, {1.5f, 0.5f}}) {
        float[] whole = c0.clone();
        VectorGemm.sgemm(false, false, m, n, k, ab[0], a, 0, lda, b, 0, ldb, ab[1], whole, 0, ldc);
        float[] slices = c0.clone();
        int half = n / 2;
        VectorGemm.sgemm(false, false, m, half, k, ab[0], a, 0, lda, b, 0, ldb, ab[1], slices, 0, ldc);
        VectorGemm.sgemm(false, false, m, n - half, k, ab[0], a, 0, lda, b, half, ldb, ab[1], slices, half, ldc);
        for (int i = 0; i < m; i++) {
          for (int j = 0; j < n; j++) {
            int ci = i * ldc + j;
            if (Float.floatToRawIntBits(whole[ci]) != Float.floatToRawIntBits(slices[ci])) {
              fail(m + "x" + n + "x" + k + " alpha/beta " + ab[0] + "/" + ab[1] + ": C[" + i + "][" + j + "] is "
                  + whole[ci] + " with A packed p-major, " + slices[ci] + " with A packed as rows");
            }
            if (i % 7 != 0) continue;
            double ref = 0;
            for (int p = 0; p < k; p++) ref += (double) a[i * lda + p] * b[p * ldb + j];
            ref = ab[0] * ref + ab[1] * c0[ci];
            assertEquals(ref, whole[ci], 1e-3 * (1 + Math.abs(ref)), "C[" + i + "][" + j + "] of " + m + "x" + n + "x" + k);
          }
        }
      }
    }
  }

  /** A BF16 A through the p-major pack (widened a tile of rows at a time) has the bits of its floats packed. */
  @Test
  void halfAThroughThePMajorPackHasTheBitsOfItsFloats() {
    int m = 520;
    int n = 520;
    int k = 40;
    SplittableRandom rnd = new SplittableRandom(11);
    short[] ah = new short[m * k];
    float[] a = new float[m * k];
    for (int i = 0; i < ah.length; i++) {
      ah[i] = HalfFloats.bf16((float) (rnd.nextDouble() * 4 - 2));
      a[i] = HalfFloats.bf16ToFloat(ah[i]);
    }
    float[] b = floats(k * n, rnd);
    float[] expected = new float[m * n];
    VectorGemm.sgemm(false, false, m, n, k, 1f, a, 0, k, b, 0, n, 0f, expected, 0, n);
    float[] got = new float[m * n];
    VectorGemm.sgemmHalf(false, false, m, n, k, 1f, null, new HalfOperand(ah, true), 0, k, b, null, 0, n, 0f, got, 0, n);
    for (int i = 0; i < expected.length; i++) {
      if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(got[i])) {
        fail("element " + i + " is " + got[i] + " from the BF16 A, " + expected[i] + " from its floats");
      }
    }
  }
}
