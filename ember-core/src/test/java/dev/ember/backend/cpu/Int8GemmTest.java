package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The int8 GEMM (vector and scalar kernels) against a long-accumulating oracle, and its fused epilogues. */
class Int8GemmTest {
  private static byte[] bytes(SplittableRandom r, int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) b[i] = (byte) r.nextInt(-128, 128);
    return b;
  }

  private static int[] oracle(byte[] a, byte[] b, int m, int n, int k) {
    int[] c = new int[m * n];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        long s = 0;
        for (int p = 0; p < k; p++) s += (long) a[i * k + p] * b[j * k + p];
        c[i * n + j] = Math.toIntExact(s);
      }
    }
    return c;
  }

  @Test
  void exactOnOddShapes() {
    Int8Kernels vector = Int8Gemm.vectorKernelsOrNull();
    assertNotNull(vector, "tests run with jdk.incubator.vector");
    SplittableRandom r = new SplittableRandom(7);
    for (int m : new int[] {1, 3, 4, 5, 7, 8, 9, 17, 33}) {   // from 8 rows on: A widened once, B packed
      for (int n : new int[] {1, 3, 5, 7, 31, 32, 33, 64, 65, 130}) {
        for (int k : new int[] {1, 7, 15, 16, 17, 33, 100}) {
          byte[] a = bytes(r, m * k);
          byte[] b = bytes(r, n * k);
          int[] want = oracle(a, b, m, n, k);
          String what = "m=" + m + " n=" + n + " k=" + k;
          assertArrayEquals(want, Int8Gemm.gemm(vector, a, b, m, n, k), what);
          assertArrayEquals(want, Int8Gemm.gemm(new ScalarInt8Kernels(), a, b, m, n, k), what);
        }
      }
    }
  }

  @Test
  void extremesDoNotOverflow() {
    int m = 5, n = 6, k = 40009;  // more than one 1024-step segment of float lane sums at 8 or 16 lanes
    byte[] a = new byte[m * k];
    byte[] b = new byte[n * k];
    Arrays.fill(a, (byte) -128);
    Arrays.fill(b, (byte) -128);
    b[3] = 127;
    int[] want = oracle(a, b, m, n, k);
    assertEquals(16384 * k, want[n + 1]);
    assertArrayEquals(want, Int8Gemm.gemm(Int8Gemm.vectorKernelsOrNull(), a, b, m, n, k));
    // odd products (-127 * 127): a float lane sum past 2^24 would round, so this checks the segment length
    Arrays.fill(a, (byte) -127);
    Arrays.fill(b, (byte) 127);
    a[1] = 3;
    want = oracle(a, b, m, n, k);
    assertEquals(-16129 * (k - 1) + 3 * 127, want[0]);
    assertArrayEquals(want, Int8Gemm.gemm(Int8Gemm.vectorKernelsOrNull(), a, b, m, n, k));
  }

  @Test
  void extremesDoNotOverflowInThePackedProduct() {
    // 9 rows take the packed path (8-row tile + 1 row); k past several 1024-step segments, and k at its limit
    for (int k : new int[] {3001, Int8Gemm.MAX_K}) {
      int m = 9, n = 35;
      byte[] a = new byte[m * k];
      byte[] b = new byte[n * k];
      Arrays.fill(a, (byte) -128);
      Arrays.fill(b, (byte) -128);
      b[k + 5] = 127;
      a[2 * k + 7] = 127;
      int[] want = oracle(a, b, m, n, k);
      assertEquals(16384 * k, want[n * 4 + 3]);
      assertArrayEquals(want, Int8Gemm.gemm(Int8Gemm.vectorKernelsOrNull(), a, b, m, n, k), "k=" + k);
      assertArrayEquals(want, Int8Gemm.gemm(new ScalarInt8Kernels(), a, b, m, n, k), "k=" + k);
      Arrays.fill(a, (byte) -127);   // odd products: a float lane past 2^24 would round
      Arrays.fill(b, (byte) 127);
      a[1] = 3;
      want = oracle(a, b, m, n, k);
      assertArrayEquals(want, Int8Gemm.gemm(Int8Gemm.vectorKernelsOrNull(), a, b, m, n, k), "k=" + k);
    }
  }

  @Test
  void resultsDoNotDependOnTheThreadCount() {
    SplittableRandom r = new SplittableRandom(5);
    int m = 70, n = 90, k = 101;   // m n k above the size that runs on the calling thread
    byte[] a = bytes(r, m * k);
    byte[] b = bytes(r, n * k);
    int[] sums = dev.ember.quant.Quantization.rowSums(b, n, k);
    float[] scale = new float[n];
    Arrays.fill(scale, 0.013f);
    int old = Parallel.threads();
    try {
      float[][] outs = new float[3][m * n];
      for (int t = 1; t <= 3; t++) {
        Parallel.setThreads(t);
        Int8Gemm.gemmDequantize(a, 5, 0.03f, b, sums, scale, null, outs[t - 1], m, n, k);
        assertArrayEquals(oracle(a, b, m, n, k), Int8Gemm.gemm(Int8Gemm.kernels(), a, b, m, n, k), t + " threads");
      }
      assertArrayEquals(outs[0], outs[1]);
      assertArrayEquals(outs[0], outs[2]);
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void panelsAreKMajorAndZeroPadded() {
    int n = 5, k = 3, w = 4;
    byte[] b = new byte[n * k];
    for (int i = 0; i < b.length; i++) b[i] = (byte) (i + 1);
    byte[] bp = Int8Gemm.packPanels(b, n, k, w);
    assertEquals(2 * k * w, bp.length);
    assertEquals(b[2 * k + 1], bp[1 * w + 2]);          // channel 2, p = 1
    assertEquals(b[4 * k + 2], bp[(k + 2) * w]);        // channel 4 opens the second panel
    assertEquals(0, bp[(k + 2) * w + 1]);               // channels 5..7 do not exist
  }

  @Test
  void dequantizeAndRequantizeEpilogues() {
    SplittableRandom r = new SplittableRandom(11);
    int m = 19, n = 70, k = 45;
    byte[] a = bytes(r, m * k);
    byte[] b = bytes(r, n * k);
    int[] acc = oracle(a, b, m, n, k);
    int[] sums = dev.ember.quant.Quantization.rowSums(b, n, k);
    float aScale = 0.02f;
    int aZero = -7;
    float[] bScale = new float[n];
    float[] bias = new float[n];
    for (int j = 0; j < n; j++) {
      bScale[j] = 0.001f + j * 1e-4f;
      bias[j] = (float) r.nextDouble(-1, 1);
    }
    float[] out = new float[m * n];
    Int8Gemm.gemmDequantize(a, aZero, aScale, b, sums, bScale, bias, out, m, n, k);
    byte[] q = new byte[m * n];
    float outScale = 0.05f;
    int outZero = 3;
    Int8Gemm.gemmRequantize(a, aZero, aScale, b, sums, bScale, bias, outScale, outZero, -128, 127, q, m, n, k);
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        // the real product of the dequantized operands, in double
        double real = 0;
        for (int p = 0; p < k; p++) real += (a[i * k + p] - aZero) * (double) aScale * (b[j * k + p] * (double) bScale[j]);
        real += bias[j];
        float v = out[i * n + j];
        assertEquals(real, v, 1e-5 * Math.max(1, Math.abs(real)), "out[" + i + ", " + j + "]");
        float expect = (acc[i * n + j] - aZero * sums[j]) * (aScale * bScale[j]) + bias[j];
        assertEquals(expect, v, 0f);
        int wantQ = (int) Math.max(-128, Math.min(127, Math.rint(v * (1.0f / outScale)) + outZero));
        assertEquals(wantQ, q[i * n + j], "q[" + i + ", " + j + "]");
      }
    }
  }

  @Test
  void vectorRequantizeEpiloguesGiveTheScalarBits() {
    // ties (v * inv on .5), values past both ends of the range, NaN (an infinite scale times a zero difference),
    // infinities, odd lengths (vector body and scalar tail), qint8, quint8 and a fused ReLU's range
    Int8Kernels vector = Int8Gemm.vectorKernelsOrNull();
    assertNotNull(vector, "tests run with jdk.incubator.vector");
    Int8Kernels scalar = new ScalarInt8Kernels();
    SplittableRandom r = new SplittableRandom(41);
    for (int n : new int[] {1, 15, 16, 17, 64, 100}) {
      int[] acc = new int[n + 3];
      for (int i = 0; i < acc.length; i++) acc[i] = (i - 3) % 7 == 0 ? 5 : r.nextInt(-200_000, 200_000);
      int[] corr = new int[n + 2];
      float[] scale = new float[n + 2];
      float[] bias = new float[n + 2];
      for (int j = 0; j < corr.length; j++) {
        corr[j] = (j - 2) % 7 == 0 ? 5 : r.nextInt(-1000, 1000);
        scale[j] = (j - 2) % 14 == 0 ? Float.POSITIVE_INFINITY : (float) r.nextDouble(1e-4, 1e-2);
        bias[j] = (float) r.nextDouble(-2, 2);
      }
      for (int[] range : new int[][] {{-128, 127, -5}, {0, 255, 131}, {131, 255, 131}}) {
        for (float inv : new float[] {2f, 0.37f, 1e-30f, 1e30f}) {
          for (boolean withBias : new boolean[] {true, false}) {
            byte[] want = new byte[n + 4];
            byte[] got = new byte[n + 4];
            scalar.requantizeColumns(acc, 3, n, corr, scale, withBias ? bias : null, 2, inv, range[2], range[0],
                range[1], want, 1);
            vector.requantizeColumns(acc, 3, n, corr, scale, withBias ? bias : null, 2, inv, range[2], range[0],
                range[1], got, 1);
            assertArrayEquals(want, got, "columns n=" + n + " inv=" + inv + " bias=" + withBias);
            // element 0 is NaN: (5 - 5) * infinity
            assertEquals(0f * Float.POSITIVE_INFINITY, (acc[3] - corr[2]) * scale[2]);
            for (float s : new float[] {0.5f, 3e-3f, Float.POSITIVE_INFINITY}) {
              scalar.requantizeRow(acc, 3, n, 5, s, 0.25f, withBias, inv, range[2], range[0], range[1], want, 1);
              vector.requantizeRow(acc, 3, n, 5, s, 0.25f, withBias, inv, range[2], range[0], range[1], got, 1);
              assertArrayEquals(want, got, "row n=" + n + " scale=" + s + " inv=" + inv + " bias=" + withBias);
            }
          }
        }
      }
    }
  }

  @Test
  void mismatchedOperandsAreRejected() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> Int8Gemm.gemm(new ScalarInt8Kernels(), new byte[6], new byte[6], 2, 2, 4));
    assertEquals("int8 gemm: operands do not match (m=2, n=2, k=4, k <= 65536): a=6 bytes, b=6 bytes", e.getMessage());
  }
}
