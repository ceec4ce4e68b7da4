package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.ScalarKernels;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * random.cu without a GPU: its Philox4x32-10 and fills compiled as host C++ (HostDriver, g++) and checked against
 * Random123's known answers and the Java reference (PhiloxReference): the Philox words and the uniform and Bernoulli
 * fills to the bit, normal and truncated-normal values within a tolerance (the host's libm stands in for CUDA's).
 */
class RandomHostTest {
  /**
   * Random123's known-answer vectors for philox4x32 with 10 rounds (tests/kat_vectors of
   * github.com/DEShawResearch/random123): counter (4 words), key (2 words), output (4 words).
   */
  static final int[][] KAT = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {-1, -1, -1, -1, -1, -1, 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb, 0x5001e420,
          0x24126ea1}};

  @TempDir static java.nio.file.Path dir;
  static HostDriver host;

  @BeforeAll
  static void compile() throws Exception {
    host = HostDriver.compile(dir, "random.cu", CudaRandom.SOURCE, "random_host.cpp");
  }

  private static String hex(int v) {
    return Integer.toHexString(v);
  }

  @Test
  void javaReferenceGivesTheKnownAnswers() {
    for (int[] k : KAT) {
      int[] got = PhiloxReference.philox(new int[] {k[0], k[1], k[2], k[3]}, k[4], k[5]);
      assertArrayEquals(new int[] {k[6], k[7], k[8], k[9]}, got);
    }
  }

  @Test
  void philoxOnTheHostGivesTheKnownAnswersAndTheReference() throws Exception {
    StringBuilder req = new StringBuilder();
    List<int[]> want = new ArrayList<>();
    for (int[] k : KAT) {
      req.append("P");
      for (int i = 0; i < 6; i++) req.append(' ').append(hex(k[i]));
      req.append('\n');
      want.add(new int[] {k[6], k[7], k[8], k[9]});
    }
    Random r = new Random(39);
    for (int c = 0; c < 200; c++) {
      int[] in = new int[6];
      for (int i = 0; i < 6; i++) in[i] = c < 100 ? (i == 0 ? c : 0) : r.nextInt();
      req.append("P");
      for (int v : in) req.append(' ').append(hex(v));
      req.append('\n');
      want.add(PhiloxReference.philox(new int[] {in[0], in[1], in[2], in[3]}, in[4], in[5]));
    }
    List<String> got = host.answer(req.toString(), want.size());
    for (int i = 0; i < want.size(); i++) {
      long[] g = HostDriver.hex(got.get(i));
      int[] gi = new int[g.length];
      for (int j = 0; j < g.length; j++) gi[j] = (int) g[j];
      assertArrayEquals(want.get(i), gi, "request " + i);
    }
  }

  /** The answer to one fill request: n elements of rn_kind in f32 or f64 under key, as doubles. */
  private static double[] fill(String kind, boolean f32, int n, int[] key, double... p) throws Exception {
    StringBuilder req = new StringBuilder("F ").append(kind).append(' ').append(f32 ? 0 : 1).append(' ').append(n);
    for (int k : key) req.append(' ').append(hex(k));
    req.append(' ').append(p.length);
    for (double d : p) req.append(' ').append(Long.toHexString(Double.doubleToRawLongBits(d)));
    long[] bits = HostDriver.hex(host.answer(req.append('\n').toString(), 1).get(0));
    assertEquals(n, bits.length, kind + " writes n elements");
    double[] v = new double[n];
    for (int i = 0; i < n; i++) v[i] = f32 ? Float.intBitsToFloat((int) bits[i]) : Double.longBitsToDouble(bits[i]);
    return v;
  }

  static final int[] KEY = {0x12345678, 0x9abcdef0, 7, 0x80000001};

  @Test
  void uniformIsTheReferenceToTheBitAndNeverReachesTo() throws Exception {
    for (boolean f32 : new boolean[] {true, false}) {
      for (double[] range : new double[][] {{0, 1}, {-1, 2}, {1, 2}, {0.1, 0.1000001}, {3, 3}}) {
        int n = 1003; // not a multiple of 4: the last thread writes 3
        double[] v = fill("uniform", f32, n, KEY, range[0], range[1]);
        for (int e = 0; e < n; e++) {
          double want = f32 ? PhiloxReference.uniformF32(KEY, e, range[0], range[1])
              : PhiloxReference.uniformF64(KEY, e, range[0], range[1]);
          assertEquals(Double.doubleToRawLongBits(want), Double.doubleToRawLongBits(v[e]),
              "uniform " + (f32 ? "f32" : "f64") + " [" + range[0] + ", " + range[1] + ") element " + e);
          if (range[0] < range[1]) assertTrue(v[e] >= (f32 ? (float) range[0] : range[0]) && v[e] < range[1]);
        }
      }
    }
  }

  @Test
  void aValueThatRoundsToToBecomesFrom() throws Exception {
    // [2^24, 2^24 + 2) in float32 (2^53 in float64): the spacing is 2, so from + 2u rounds to `to` for u > 1/2 and
    // to `from` otherwise; every value must be `from`
    for (boolean f32 : new boolean[] {true, false}) {
      double from = f32 ? 0x1.0p24 : 0x1.0p53;
      double[] v = fill("uniform", f32, 400, KEY, from, from + 2);
      int rounded = 0;
      for (int e = 0; e < v.length; e++) {
        assertEquals(from, v[e], "element " + e);
        double u = f32 ? PhiloxReference.unitF32(KEY, e) : PhiloxReference.unitF64(KEY, e);
        if (u > 0.5) rounded++;
      }
      assertTrue(rounded > 100, "about half the draws round to `to`: " + rounded);
    }
  }

  @Test
  void bernoulliIsTheReferenceToTheBit() throws Exception {
    for (boolean f32 : new boolean[] {true, false}) {
      int n = 2001;
      double[] v = fill("bernoulli", f32, n, KEY, 0.7, 1 / 0.7);
      int kept = 0;
      for (int e = 0; e < n; e++) {
        assertEquals(PhiloxReference.bernoulli(KEY, e, f32, 0.7, 1 / 0.7), v[e], "bernoulli element " + e);
        if (v[e] != 0) kept++;
      }
      assertTrue(Math.abs(kept / (double) n - 0.7) < 0.05, "kept " + kept + " of " + n);
    }
  }

  @Test
  void normalIsTheReferenceWithinRounding() throws Exception {
    for (boolean f32 : new boolean[] {true, false}) {
      int n = 1001;
      double[] v = fill("normal", f32, n, KEY, 0.5, 2);
      double tol = f32 ? 1e-5 : 1e-12;
      for (int e = 0; e < n; e++) {
        double want = PhiloxReference.normal(KEY, e, f32, 0.5, 2);
        assertTrue(Math.abs(want - v[e]) <= tol * (1 + Math.abs(want)), "normal element " + e + ": " + v[e] + " vs " + want);
      }
    }
  }

  @Test
  void truncatedNormalInvertsTheCdfAndStaysInBounds() throws Exception {
    double mean = 0.2, std = 1.5, a = -1, b = 2;
    double lo = CudaRandom.normCdf((a - mean) / std), hi = CudaRandom.normCdf((b - mean) / std);
    for (boolean f32 : new boolean[] {true, false}) {
      int n = 1001;
      double[] v = fill("trunc_normal", f32, n, KEY, 2 * lo - 1, 2 * hi - 1, std * Math.sqrt(2), mean, a, b);
      for (int e = 0; e < n; e++) {
        assertTrue(v[e] >= a && v[e] <= b, "element " + e + " = " + v[e] + " outside [" + a + ", " + b + "]");
        double u = f32 ? PhiloxReference.uniformF32(KEY, e, 2 * lo - 1, 2 * hi - 1)
            : PhiloxReference.uniformF64(KEY, e, 2 * lo - 1, 2 * hi - 1);
        double back = ScalarKernels.erf((v[e] - mean) / (std * Math.sqrt(2))); // erf(erfinv(u)) = u
        if (v[e] > a && v[e] < b) assertEquals(u, back, f32 ? 1e-5 : 1e-9, "element " + e);
      }
    }
  }
}
