package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import org.junit.jupiter.api.Test;

/**
 * CudaRandom on the GPU (skipped without one): Philox blocks equal to the Java reference and Random123's known
 * answers; uniform and Bernoulli fills equal to the reference bit for bit over 1M draws, normal ones within rounding;
 * the moments of 1M draws within 5 standard errors; truncation bounds; the same seed gives the same values and
 * successive calls differ. Each test prints one line of what it measured.
 */
class CudaRandomGpuTest {
  static final int N = 1_000_003; // not a multiple of 4

  /** Runs body with a CudaRandom and a zeroed device view of n elements of t, returning the downloaded view. */
  private interface Fill {
    void run(CudaRandom random, View out);
  }

  private static double[] fill(OnDevice d, DType t, int n, Fill body) {
    View out = d.upload(StridedView.allocate(t, n));
    body.run(new CudaRandom(d.ctx, d.ctx.kernels()), out);
    Storage s = d.download(out).storage();
    double[] v = new double[n];
    for (int i = 0; i < n; i++) v[i] = s.getDouble(i);
    return v;
  }

  @Test
  void philoxBlocksAreTheReferenceAndTheKnownAnswers() {
    try (OnDevice d = new OnDevice()) {
      long fn = d.ctx.kernels().function("random", CudaRandom.SOURCE, "rn_philox_blocks");
      int[][] keys = {{0, 0, 0, 0}, {-1, -1, -1, -1}, {0xa4093822, 0x299f31d0, 0x13198a2e, 0x03707344}, {1, 2, 3, 4}};
      long[] firsts = {0, -1, 0x85a308d3_243f6a88L, 1L << 40};
      int[] kat = {0, 1, 2, -1};
      for (int c = 0; c < keys.length; c++) {
        int[] k = keys[c];
        int blocks = 64;
        View out = d.upload(StridedView.allocate(DType.I32, 4 * blocks));
        d.ctx.kernels().launch1d(fn, blocks, KernelArgs.begin().ptr(KernelArgs.address(out)).i64(firsts[c]).i64(blocks)
            .i32(k[0]).i32(k[1]).i32(k[2]).i32(k[3]));
        int[] got = d.download(out).storage().ints();
        for (int b = 0; b < blocks; b++) {
          long ctr = firsts[c] + b;
          int[] want = PhiloxReference.philox(new int[] {(int) ctr, (int) (ctr >>> 32), k[2], k[3]}, k[0], k[1]);
          assertArrayEquals(want, java.util.Arrays.copyOfRange(got, 4 * b, 4 * b + 4), "key " + c + " block " + b);
        }
        if (kat[c] >= 0) {
          int[] a = RandomHostTest.KAT[kat[c]];
          assertArrayEquals(new int[] {a[6], a[7], a[8], a[9]}, java.util.Arrays.copyOfRange(got, 0, 4), "known answer " + c);
        }
      }
      System.out.println("CudaRandomGpuTest: Philox4x32-10 on the device = Java reference (256 blocks) and Random123 KAT");
    }
  }

  @Test
  void uniformIsTheReferenceToTheBitWithUniformMoments() {
    try (OnDevice d = new OnDevice()) {
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        double from = -1, to = 3;
        Generator gen = new Generator(11);
        int[] key = CudaRandom.drawKey(new Generator(11));
        double[] v = fill(d, t, N, (r, out) -> r.uniform(out, from, to, gen));
        double sum = 0, sq = 0;
        for (int e = 0; e < N; e++) {
          double want = t == DType.F32 ? PhiloxReference.uniformF32(key, e, from, to)
              : PhiloxReference.uniformF64(key, e, from, to);
          if (Double.doubleToRawLongBits(want) != Double.doubleToRawLongBits(v[e])) {
            throw new AssertionError("uniform " + t + " element " + e + " is " + v[e] + ", the reference " + want);
          }
          if (!(v[e] >= from && v[e] < to)) throw new AssertionError("uniform " + t + " element " + e + " = " + v[e]);
          sum += v[e];
          sq += (v[e] - 1) * (v[e] - 1);
        }
        double mean = sum / N, var = sq / N - (mean - 1) * (mean - 1);
        double se = 4 / Math.sqrt(12.0 * N);
        assertEquals(1, mean, 5 * se, "uniform mean " + t);
        assertEquals(16 / 12.0, var, 5 * (16 / 12.0) * Math.sqrt(0.8 / N), "uniform variance " + t); // var of (u-m)^2
        System.out.printf("CudaRandomGpuTest: uniform %s [-1, 3): %d values = reference, mean %.5f (1), var %.5f (%.5f)%n",
            t, N, mean, var, 16 / 12.0);
      }
    }
  }

  @Test
  void normalHasNormalMomentsAndIsTheReferenceWithinRounding() {
    try (OnDevice d = new OnDevice()) {
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        double m = 0.5, s = 2;
        Generator gen = new Generator(12);
        int[] key = CudaRandom.drawKey(new Generator(12));
        double[] v = fill(d, t, N, (r, out) -> r.normal(out, m, s, gen));
        double sum = 0, sq = 0, q4 = 0;
        for (int e = 0; e < N; e++) {
          sum += v[e];
          double z = (v[e] - m) / s;
          sq += z * z;
          q4 += z * z * z * z;
          if (e < 100_000) {
            double want = PhiloxReference.normal(key, e, t == DType.F32, m, s);
            double tol = t == DType.F32 ? 1e-5 : 1e-12;
            if (!(Math.abs(want - v[e]) <= tol * (1 + Math.abs(want)))) {
              throw new AssertionError("normal " + t + " element " + e + ": " + v[e] + " vs " + want);
            }
          }
        }
        double mean = sum / N, var = sq / N, kurt = q4 / N;
        assertEquals(m, mean, 5 * s / Math.sqrt(N), "normal mean " + t);
        assertEquals(1, var, 5 * Math.sqrt(2.0 / N), "normal variance / std^2 " + t);
        assertEquals(3, kurt, 5 * Math.sqrt(96.0 / N), "normal fourth moment " + t);
        System.out.printf("CudaRandomGpuTest: normal %s (0.5, 2): mean %.5f, var/std^2 %.5f, E z^4 %.4f (3)%n", t, mean,
            var, kurt);
      }
    }
  }

  @Test
  void bernoulliIsTheReferenceToTheBitWithItsRate() {
    try (OnDevice d = new OnDevice()) {
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        double keep = 0.7, value = 1 / 0.7;
        Generator gen = new Generator(13);
        int[] key = CudaRandom.drawKey(new Generator(13));
        double[] v = fill(d, t, N, (r, out) -> r.bernoulli(out, keep, value, gen));
        long kept = 0;
        for (int e = 0; e < N; e++) {
          double want = PhiloxReference.bernoulli(key, e, t == DType.F32, keep, value);
          if (want != v[e]) throw new AssertionError("bernoulli " + t + " element " + e + " is " + v[e] + ", want " + want);
          if (v[e] != 0) kept++;
        }
        double rate = kept / (double) N;
        assertEquals(keep, rate, 5 * Math.sqrt(keep * (1 - keep) / N), "bernoulli rate " + t);
        System.out.printf("CudaRandomGpuTest: bernoulli %s keep 0.7: rate %.5f, %d values = reference%n", t, rate, N);
      }
    }
  }

  @Test
  void truncatedNormalStaysInItsBounds() {
    try (OnDevice d = new OnDevice()) {
      for (DType t : new DType[] {DType.F32, DType.F64}) {
        double m = 0, s = 1, a = -2, b = 2;
        double[] v = fill(d, t, N, (r, out) -> r.truncatedNormal(out, m, s, a, b, new Generator(14)));
        double sum = 0, sq = 0, lo = Double.POSITIVE_INFINITY, hi = Double.NEGATIVE_INFINITY;
        for (int e = 0; e < N; e++) {
          if (!(v[e] >= a && v[e] <= b)) throw new AssertionError("truncated normal " + t + " element " + e + " = " + v[e]);
          sum += v[e];
          sq += v[e] * v[e];
          lo = Math.min(lo, v[e]);
          hi = Math.max(hi, v[e]);
        }
        // N(0, 1) truncated to [-2, 2]: mean 0, variance 1 - 4 phi(2) / (2 Phi(2) - 1) = 0.773741
        double mean = sum / N, var = sq / N - mean * mean;
        assertEquals(0, mean, 5 * Math.sqrt(0.774 / N), "truncated normal mean " + t);
        assertEquals(0.773741, var, 0.005, "truncated normal variance " + t);
        assertTrue(lo < -1.99 && hi > 1.99, "draws reach near both bounds: " + lo + ", " + hi);
        System.out.printf("CudaRandomGpuTest: truncated normal %s [-2, 2]: min %.4f max %.4f mean %.5f var %.5f (0.77374)%n",
            t, lo, hi, mean, var);
      }
    }
  }

  @Test
  void theSameSeedGivesTheSameValuesAndSuccessiveCallsDiffer() {
    try (OnDevice d = new OnDevice()) {
      Generator g1 = new Generator(7), g2 = new Generator(7);
      double[] a = fill(d, DType.F32, 4099, (r, out) -> r.normal(out, 0, 1, g1));
      double[] b = fill(d, DType.F32, 4099, (r, out) -> r.normal(out, 0, 1, g2));
      double[] c = fill(d, DType.F32, 4099, (r, out) -> r.normal(out, 0, 1, g1));
      assertArrayEquals(a, b, "same seed, same values");
      int same = 0;
      for (int i = 0; i < a.length; i++) if (a[i] == c[i]) same++;
      assertTrue(same < 5, "a second call draws new values: " + same + " of " + a.length + " equal");
      assertFalse(java.util.Arrays.equals(CudaRandom.drawKey(new Generator(7)), CudaRandom.drawKey(new Generator(8))));
      System.out.println("CudaRandomGpuTest: same seed -> same values; a second call differs");
    }
  }
}
