package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.NormalizationKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The normalization kernels against plain double loops, and their determinism contract. */
class CpuNormalizationTest {
  private static final NormalizationKernels K = Device.CPU.backend().normalization();

  @Test
  void rowStatsAreTheMeanAndReciprocalStd() {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor x = Tensor.randn(new Generator(1), dt, 5, 13);
      double[] v = x.toDoubleArray();
      double[][] st = K.rowStats(x, 5, 13, 1e-5, false);
      double[][] rms = K.rowStats(x, 5, 13, 1e-5, true);
      assertNull(rms[0]);
      for (int r = 0; r < 5; r++) {
        double s = 0, ss = 0, sq = 0;
        for (int i = 0; i < 13; i++) s += v[r * 13 + i];
        double mu = s / 13;
        for (int i = 0; i < 13; i++) {
          ss += (v[r * 13 + i] - mu) * (v[r * 13 + i] - mu);
          sq += v[r * 13 + i] * v[r * 13 + i];
        }
        // F32 rows are summed in float (the mean is the float mean the variance is centred on), F64 rows in double
        double tol = dt == DType.F32 ? 1e-6 : 1e-12;
        assertEquals(mu, st[0][r], tol);
        assertEquals(1 / Math.sqrt(ss / 13 + 1e-5), st[1][r], dt == DType.F32 ? 1e-5 : 1e-9);
        assertEquals(1 / Math.sqrt(sq / 13 + 1e-5), rms[1][r], dt == DType.F32 ? 1e-5 : 1e-9);
      }
    }
  }

  @Test
  void channelStatsAreTheMeanAndBiasedVariancePerChannel() {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      int n = 3, c = 4, s = 7;
      Tensor x = Tensor.randn(new Generator(2), dt, n, c, s);
      double[] v = x.toDoubleArray();
      double[][] st = K.channelStats(x, n, c, s);
      for (int ch = 0; ch < c; ch++) {
        double sum = 0, ss = 0;
        for (int b = 0; b < n; b++) for (int i = 0; i < s; i++) sum += v[(b * c + ch) * s + i];
        double mu = sum / (n * s);
        for (int b = 0; b < n; b++) for (int i = 0; i < s; i++) ss += Math.pow(v[(b * c + ch) * s + i] - mu, 2);
        assertEquals(mu, st[0][ch], 1e-6);
        assertEquals(ss / (n * s), st[1][ch], 1e-5);
      }
    }
  }

  @Test
  void rowAffineNormalizesEachRow() {
    Tensor x = Tensor.randn(new Generator(3), DType.F64, 4, 6);
    double[][] st = K.rowStats(x, 4, 6, 0, false);
    double[] w = {1, 2, 3, 4, 5, 6};
    double[] b = {0, 0, 0, 1, 1, 1};
    Tensor out = Tensor.empty(DType.F64, 4, 6);
    K.rowAffine(x, st[0], st[1], w, b, out, 4, 6);
    double[] v = x.toDoubleArray();
    double[] o = out.toDoubleArray();
    for (int r = 0; r < 4; r++) {
      for (int i = 0; i < 6; i++) {
        assertEquals((v[r * 6 + i] - st[0][r]) * st[1][r] * w[i] + b[i], o[r * 6 + i], 1e-12);
      }
    }
  }

  /**
   * The fused forwards (each row's statistics and output in one task) give the bits of their unfused definitions:
   * rowNormalize as rowStats then rowAffine, groupNormalize as rowStats then channelAffine with the documented
   * scale and shift; planes with and without a vector tail, with and without affine parameters.
   */
  @Test
  void fusedForwardsMatchTheirDefinitionsBitwise() {
    for (int[] shape : new int[][] {{4, 12, 67}, {3, 8, 64}, {40, 6, 1}}) {
      int n = shape[0], c = shape[1], s = shape[2], groups = c / 2;
      Tensor x = Tensor.randn(new Generator(6), DType.F32, n, c, s).mul(2).add(1);
      double[] w = new double[c];
      double[] b = new double[c];
      for (int ch = 0; ch < c; ch++) {
        w[ch] = 0.5 + 0.1 * ch;
        b[ch] = 0.2 - 0.05 * ch;
      }
      for (boolean affine : new boolean[] {true, false}) {
        double[] wa = affine ? w : null;
        double[] ba = affine ? b : null;
        Tensor fused = Tensor.empty(DType.F32, n, c, s);
        double[][] st = K.groupNormalize(x, n, c, s, groups, 1e-5, wa, ba, fused);
        double[][] ref = K.rowStats(x, n * groups, 2 * s, 1e-5, false);
        assertArrayEquals(ref[0], st[0]);
        assertArrayEquals(ref[1], st[1]);
        double[] scale = new double[n * c];
        double[] shift = new double[n * c];
        for (int bi = 0; bi < n; bi++) {
          for (int ch = 0; ch < c; ch++) {
            int r = bi * groups + ch / 2;
            scale[bi * c + ch] = ref[1][r] * (wa == null ? 1 : wa[ch]);
            shift[bi * c + ch] = (ba == null ? 0 : ba[ch]) - ref[0][r] * scale[bi * c + ch];
          }
        }
        Tensor unfused = Tensor.empty(DType.F32, n, c, s);
        K.channelAffine(x, scale, shift, unfused, n, c, s);
        assertArrayEquals(unfused.toFloatArray(), fused.toFloatArray(), "group norm " + n + "x" + c + "x" + s);

        int rows = n * c;
        Tensor rowFused = Tensor.empty(DType.F32, n, c, s);
        double[] rw = affine ? new double[s] : null;
        double[] rb = affine ? new double[s] : null;
        for (int i = 0; affine && i < s; i++) {
          rw[i] = 1 + 0.01 * i;
          rb[i] = -0.003 * i;
        }
        double[][] rst = K.rowNormalize(x, rows, s, 1e-5, false, rw, rb, rowFused);
        Tensor rowUnfused = Tensor.empty(DType.F32, n, c, s);
        K.rowAffine(x, rst[0], rst[1], rw, rb, rowUnfused, rows, s);
        assertArrayEquals(rowUnfused.toFloatArray(), rowFused.toFloatArray(), "layer norm rows of " + s);
        assertArrayEquals(K.rowStats(x, rows, s, 1e-5, false)[1], rst[1]);
      }
    }
  }

  @Test
  void backwardsAreBitwiseTheSameOnOneAndTwoThreads() {
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      double[][] one = backwards();
      Parallel.setThreads(2);
      double[][] two = backwards();
      for (int i = 0; i < one.length; i++) assertArrayEquals(one[i], two[i], "result " + i);
    } finally {
      Parallel.setThreads(old);
    }
  }

  /** Channel and row backwards on inputs large enough to split over the pool: {gx, gw, gb} of each. */
  private static double[][] backwards() {
    int n = 16, c = 8, s = 600;
    Tensor x = Tensor.randn(new Generator(4), DType.F32, n, c, s);
    Tensor g = Tensor.randn(new Generator(5), DType.F32, n, c, s);
    double[][] st = K.channelStats(x, n, c, s);
    double[] rstd = new double[c];
    for (int ch = 0; ch < c; ch++) rstd[ch] = 1 / Math.sqrt(st[1][ch] + 1e-5);
    double[] w = new double[c];
    for (int ch = 0; ch < c; ch++) w[ch] = 0.5 + ch;
    Tensor gx = Tensor.empty(DType.F32, n, c, s);
    Tensor gw = Tensor.zeros(DType.F64, c);
    Tensor gb = Tensor.zeros(DType.F64, c);
    K.channelBackward(x, g, st[0], rstd, w, n, c, s, true, gx, gw, gb);
    int rows = n * c;
    double[][] rs = K.rowStats(x, rows, s, 1e-5, false);
    Tensor rgx = Tensor.empty(DType.F32, n, c, s);
    Tensor rgw = Tensor.zeros(DType.F64, s);
    Tensor rgb = Tensor.zeros(DType.F64, s);
    double[] rw = new double[s];
    for (int i = 0; i < s; i++) rw[i] = 1 + i * 1e-3;
    K.rowBackward(x, g, rs[0], rs[1], rw, rows, s, 1, 1, rgx, rgw, rgb);
    return new double[][] {gx.toDoubleArray(), gw.toDoubleArray(), gb.toDoubleArray(), rgx.toDoubleArray(),
        rgw.toDoubleArray(), rgb.toDoubleArray()};
  }

  @Test
  void updateRunningMixesTheStatisticIn() {
    Tensor running = Tensor.of(new double[] {1, 2, 3}, 3);
    K.updateRunning(running, new double[] {3, 2, 1}, 0.25);
    assertArrayEquals(new double[] {1.5, 2, 2.5}, running.toDoubleArray());
  }

  @Test
  void renormRowsRescalesOnlyRowsAboveTheNorm() {
    Tensor w = Tensor.of(new double[] {3, 4, 0.3, 0.4, 6, 8}, 3, 2);
    assertTrue(K.renormRows(w, new long[] {0, 1, 0}, 1.0, 2.0));
    double[] v = w.toDoubleArray();
    assertEquals(1.0, Math.hypot(v[0], v[1]), 1e-6);
    assertEquals(0.3, v[2]);
    assertEquals(6.0, v[4]); // not referenced
    assertFalse(K.renormRows(w, new long[] {1}, 1.0, 2.0));
  }
}
