package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class TensorCreationTest {

  @Test
  void zerosOnesFullEmpty() {
    Tensor z = Tensor.zeros(2, 3);
    assertArrayEquals(new int[] {2, 3}, z.shape());
    assertEquals(DType.F32, z.dtype());
    assertArrayEquals(new float[6], z.toFloatArray());
    assertArrayEquals(new float[] {1, 1, 1, 1}, Tensor.ones(4).toFloatArray());
    assertArrayEquals(new long[] {1, 1, 1}, Tensor.ones(DType.I64, 3).toLongArray());
    assertArrayEquals(new double[] {2.5, 2.5}, Tensor.full(2.5, DType.F64, 1, 2).toDoubleArray());
    assertEquals(DType.F64, Tensor.full(2.5, DType.F64, 1, 2).dtype());
    Tensor e = Tensor.empty(DType.I32, 0, 4);
    assertEquals(0, e.numel());
    assertArrayEquals(new int[] {0, 4}, e.shape());
    assertTrue(Tensor.zeros(3).isContiguous());
    assertTrue(Tensor.zeros(2, 0, 5).isContiguous(), "empty tensors are contiguous, as in PyTorch");
    assertEquals(0, Tensor.scalar(1).dim());
  }

  @Test
  void negativeShapeIsRejected() {
    TensorArgumentException ex = assertThrows(TensorArgumentException.class, () -> Tensor.zeros(2, -1));
    assertEquals("empty: negative dimension -1 in shape [2, -1]: shape=[2, -1]", ex.getMessage());
  }

  @Test
  void arangeIntegerAndFloatForms() {
    Tensor a = Tensor.arange(5);
    assertEquals(DType.I64, a.dtype());
    assertArrayEquals(new long[] {0, 1, 2, 3, 4}, a.toLongArray());
    Tensor b = Tensor.arange(2, 11, 3);
    assertEquals(DType.I64, b.dtype());
    assertArrayEquals(new long[] {2, 5, 8}, b.toLongArray());
    Tensor f = Tensor.arange(0, 1, 0.25);
    assertEquals(DType.F32, f.dtype());
    assertArrayEquals(new float[] {0f, 0.25f, 0.5f, 0.75f}, f.toFloatArray());
    Tensor d = Tensor.arange(1, 2.5, 0.5, DType.F64);
    assertArrayEquals(new double[] {1, 1.5, 2}, d.toDoubleArray());
    Tensor neg = Tensor.arange(5, 0, -2);
    assertArrayEquals(new long[] {5, 3, 1}, neg.toLongArray());
    assertArrayEquals(new float[] {1f, 0.5f}, Tensor.arange(1, 0, -0.5).toFloatArray());
    assertEquals(0, Tensor.arange(3, 3, 1).numel());
    // 1.0/0.1 is not exactly 10 in binary: torch.arange(0, 1, 0.1) has 10 elements
    assertEquals(10, Tensor.arange(0, 1, 0.1).numel());
  }

  @Test
  void arangeErrors() {
    TensorArgumentException zero = assertThrows(TensorArgumentException.class, () -> Tensor.arange(0, 5, 0));
    assertEquals("arange: step must be non-zero, got 0.0", zero.getMessage());
    TensorArgumentException wrongWay = assertThrows(TensorArgumentException.class, () -> Tensor.arange(0, 5, -1));
    assertTrue(wrongWay.getMessage().startsWith("arange: upper bound and step are inconsistent"), wrongWay.getMessage());
  }

  @Test
  void linspaceMatchesTorch() {
    assertArrayEquals(new float[] {0f, 0.25f, 0.5f, 0.75f, 1f}, Tensor.linspace(0, 1, 5).toFloatArray());
    assertArrayEquals(new float[] {-1f, 0f, 1f}, Tensor.linspace(-1, 1, 3).toFloatArray());
    assertArrayEquals(new float[] {3f}, Tensor.linspace(3, 7, 1).toFloatArray());
    assertEquals(0, Tensor.linspace(0, 1, 0).numel());
    assertArrayEquals(new float[] {10f, 7.5f, 5f, 2.5f, 0f}, Tensor.linspace(10, 0, 5).toFloatArray());
    // endpoints are exact even when the step is not representable
    double[] v = Tensor.linspace(0.1, 0.7, 7, DType.F64).toDoubleArray();
    assertEquals(0.1, v[0]);
    assertEquals(0.7, v[6]);
    for (int i = 0; i < 7; i++) assertEquals(0.1 + 0.1 * i, v[i], 1e-15);
    float[] w = Tensor.linspace(-3.3, 11.7, 101).toFloatArray();
    assertEquals(-3.3f, w[0]);
    assertEquals(11.7f, w[100]);
    assertThrows(TensorArgumentException.class, () -> Tensor.linspace(0, 1, -1));
  }

  @Test
  void eyeSquareAndRectangular() {
    assertArrayEquals(new float[] {1, 0, 0, 0, 1, 0, 0, 0, 1}, Tensor.eye(3).toFloatArray());
    Tensor r = Tensor.eye(2, 3, DType.I64);
    assertArrayEquals(new int[] {2, 3}, r.shape());
    assertArrayEquals(new long[] {1, 0, 0, 0, 1, 0}, r.toLongArray());
    Tensor tall = Tensor.eye(3, 2, DType.F64);
    assertArrayEquals(new double[] {1, 0, 0, 1, 0, 0}, tall.toDoubleArray());
  }

  @Test
  void ofArraysAndRows() {
    float[] src = {1, 2, 3, 4, 5, 6};
    Tensor t = Tensor.of(src, 2, 3);
    assertArrayEquals(new int[] {2, 3}, t.shape());
    assertEquals(6.0, t.getDouble(1, 2));
    assertEquals(4.0, t.getDouble(-1, 0));
    src[0] = 100; // of copies its input
    assertEquals(1.0, t.getDouble(0, 0));
    Tensor one = Tensor.of(new double[] {1, 2, 3});
    assertArrayEquals(new int[] {3}, one.shape());
    assertEquals(DType.F64, one.dtype());
    assertEquals(DType.I64, Tensor.of(new long[] {1, 2}).dtype());
    assertEquals(DType.I32, Tensor.of(new int[] {1, 2}).dtype());
    Tensor b = Tensor.of(new boolean[] {true, false, true});
    assertEquals(DType.BOOL, b.dtype());
    assertArrayEquals(new long[] {1, 0, 1}, b.toLongArray());
    Tensor rows = Tensor.of(new float[][] {{1, 2, 3}, {4, 5, 6}});
    assertArrayEquals(new int[] {2, 3}, rows.shape());
    assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, rows.toFloatArray());
    Tensor drows = Tensor.of(new double[][] {{1.5}, {2.5}});
    assertArrayEquals(new int[] {2, 1}, drows.shape());
    assertArrayEquals(new double[] {1.5, 2.5}, drows.toDoubleArray());
  }

  @Test
  void ofErrors() {
    TensorArgumentException bad = assertThrows(TensorArgumentException.class,
        () -> Tensor.of(new float[] {1, 2, 3}, 2, 2));
    assertEquals("of: shape [2, 2] needs 4 elements, got 3: shape=[2, 2]", bad.getMessage());
    TensorArgumentException ragged = assertThrows(TensorArgumentException.class,
        () -> Tensor.of(new float[][] {{1, 2}, {3}}));
    assertEquals("of: ragged rows: row 0 has 2 elements, row 1 has 1", ragged.getMessage());
    assertThrows(TensorArgumentException.class, () -> Tensor.of(new double[][] {{1}, {2, 3}}));
  }

  @Test
  void likeFactoriesAndScalar() {
    Tensor x = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 3, 2);
    Tensor z = Tensor.zerosLike(x);
    assertEquals(DType.F64, z.dtype());
    assertArrayEquals(new int[] {3, 2}, z.shape());
    assertArrayEquals(new double[6], z.toDoubleArray());
    assertArrayEquals(new double[] {1, 1, 1, 1, 1, 1}, Tensor.onesLike(x).toDoubleArray());
    assertArrayEquals(new double[] {-2, -2, -2, -2, -2, -2}, Tensor.fullLike(x, -2).toDoubleArray());
    assertArrayEquals(new int[] {3, 2}, Tensor.emptyLike(x).shape());
    assertFalse(Tensor.zerosLike(x).storage() == x.storage());
    Tensor s = Tensor.scalar(3.5);
    assertEquals(0, s.dim());
    assertEquals(1, s.numel());
    assertEquals(3.5, s.item());
    assertEquals(7L, Tensor.scalar(7, DType.I64).getLong());
  }

  @Test
  void dataAccess() {
    Tensor t = Tensor.of(new float[] {1.5f, -2.25f, 3f, 4f}, 2, 2);
    assertArrayEquals(new double[] {1.5, -2.25, 3, 4}, t.toDoubleArray());
    assertArrayEquals(new long[] {1, -2, 3, 4}, t.toLongArray());
    // a transposed view reads in its own row-major order
    assertArrayEquals(new float[] {1.5f, 3f, -2.25f, 4f}, t.t().toFloatArray());
    assertEquals(-2.25, t.getDouble(0, 1));
    assertEquals(3.0, t.t().getDouble(0, 1));
    assertEquals(4.0, Tensor.of(new float[] {4f}).item());
    TensorArgumentException item = assertThrows(TensorArgumentException.class, () -> Tensor.zeros(2, 3).item());
    assertEquals("item: only one-element tensors can be converted to a number (numel 6): x=[2, 3]", item.getMessage());
    TensorArgumentException idx = assertThrows(TensorArgumentException.class, () -> t.getDouble(2, 0));
    assertEquals("getDouble: index 2 out of range for dimension 0 of size 2: x=[2, 2]", idx.getMessage());
    TensorArgumentException rank = assertThrows(TensorArgumentException.class, () -> t.getDouble(0));
    assertEquals("getDouble: expected 2 indices, got 1: x=[2, 2]", rank.getMessage());
  }

  // ------------------------------------------------------------------ random

  @Test
  void sameSeedSameNumbersDifferentSeedDifferent() {
    assertArrayEquals(Tensor.rand(new Generator(42), 100).toFloatArray(), Tensor.rand(new Generator(42), 100).toFloatArray());
    assertArrayEquals(Tensor.randn(new Generator(42), DType.F64, 50).toDoubleArray(),
        Tensor.randn(new Generator(42), DType.F64, 50).toDoubleArray());
    assertArrayEquals(Tensor.randint(new Generator(7), 0, 1000, 64).toLongArray(),
        Tensor.randint(new Generator(7), 0, 1000, 64).toLongArray());
    assertArrayEquals(Tensor.randperm(new Generator(7), 50).toLongArray(), Tensor.randperm(new Generator(7), 50).toLongArray());
    Tensor p = Tensor.full(0.5, 200);
    assertArrayEquals(Tensor.bernoulli(new Generator(3), p).toFloatArray(), Tensor.bernoulli(new Generator(3), p).toFloatArray());

    assertFalse(Arrays.equals(Tensor.rand(new Generator(1), 100).toFloatArray(), Tensor.rand(new Generator(2), 100).toFloatArray()));
    assertFalse(Arrays.equals(Tensor.randn(new Generator(1), 100).toFloatArray(), Tensor.randn(new Generator(2), 100).toFloatArray()));
    assertFalse(Arrays.equals(Tensor.randint(new Generator(1), 0, 1000, 100).toLongArray(),
        Tensor.randint(new Generator(2), 0, 1000, 100).toLongArray()));
    assertFalse(Arrays.equals(Tensor.randperm(new Generator(1), 100).toLongArray(), Tensor.randperm(new Generator(2), 100).toLongArray()));
    // consecutive draws from one generator differ
    Generator g = new Generator(5);
    assertFalse(Arrays.equals(Tensor.rand(g, 100).toFloatArray(), Tensor.rand(g, 100).toFloatArray()));
  }

  @Test
  void globalGeneratorManualSeed() {
    Generator.manualSeed(123);
    float[] a = Tensor.rand(10).toFloatArray();
    Generator.manualSeed(123);
    assertArrayEquals(a, Tensor.rand(10).toFloatArray());
  }

  @Test
  void randRanges() {
    float[] u = Tensor.rand(new Generator(11), 100_000).toFloatArray();
    double mean = 0;
    for (float v : u) {
      assertTrue(v >= 0f && v < 1f, "rand out of [0,1): " + v);
      mean += v;
    }
    assertEquals(0.5, mean / u.length, 0.01);
    double[] ud = Tensor.rand(new Generator(11), DType.F64, 10_000).toDoubleArray();
    for (double v : ud) assertTrue(v >= 0 && v < 1);

    long[] r = Tensor.randint(new Generator(12), -3, 4, 10_000).toLongArray();
    int[] counts = new int[7];
    for (long v : r) {
      assertTrue(v >= -3 && v < 4, "randint out of [-3,4): " + v);
      counts[(int) (v + 3)]++;
    }
    for (int c : counts) assertTrue(c > 1200 && c < 1660, "randint counts " + Arrays.toString(counts));
    assertArrayEquals(new int[] {2, 5}, Tensor.randint(new Generator(1), 0, 2, 2, 5).shape());
    assertThrows(TensorArgumentException.class, () -> Tensor.randint(new Generator(1), 5, 5, 3));
    assertThrows(TensorArgumentException.class, () -> Tensor.rand(new Generator(1), DType.I64, 3));
  }

  @Test
  void randpermIsPermutation() {
    for (int n : new int[] {0, 1, 2, 17, 1000}) {
      long[] p = Tensor.randperm(new Generator(n), n).toLongArray();
      assertEquals(n, p.length);
      long[] sorted = p.clone();
      Arrays.sort(sorted);
      for (int i = 0; i < n; i++) assertEquals(i, sorted[i]);
    }
    long[] big = Tensor.randperm(new Generator(9), 1000).toLongArray();
    int fixed = 0;
    for (int i = 0; i < big.length; i++) if (big[i] == i) fixed++;
    assertTrue(fixed < 10, "a shuffled permutation has few fixed points, got " + fixed);
  }

  @Test
  void randnMomentsAndBernoulliFrequency() {
    float[] x = Tensor.randn(new Generator(2024), 100_000).toFloatArray();
    double sum = 0;
    double sq = 0;
    for (float v : x) {
      assertTrue(Float.isFinite(v));
      sum += v;
      sq += (double) v * v;
    }
    double mean = sum / x.length;
    double std = Math.sqrt(sq / x.length - mean * mean);
    assertEquals(0, mean, 0.02);
    assertEquals(1, std, 0.02);

    Tensor p = Tensor.full(0.3, 100_000);
    float[] b = Tensor.bernoulli(new Generator(77), p).toFloatArray();
    double ones = 0;
    for (float v : b) {
      assertTrue(v == 0f || v == 1f);
      ones += v;
    }
    assertEquals(0.3, ones / b.length, 0.01);
    Tensor edges = Tensor.bernoulli(new Generator(1), Tensor.of(new double[] {0, 1, 0, 1}));
    assertEquals(DType.F64, edges.dtype());
    assertArrayEquals(new double[] {0, 1, 0, 1}, edges.toDoubleArray());
    assertThrows(TensorArgumentException.class, () -> Tensor.bernoulli(new Generator(1), Tensor.of(new float[] {1.5f})));
  }

  @Test
  void generatorStateSaveRestore() {
    Generator g = new Generator(99);
    assertEquals(99, g.initialSeed());
    Tensor.rand(g, 13); // advance
    Tensor.randn(g, 3); // leaves a cached normal value, which the state must carry
    long[] saved = g.state();
    float[] a = Tensor.randn(g, 20).toFloatArray();
    long[] b = Tensor.randint(g, 0, 100, 20).toLongArray();
    g.setState(saved);
    assertArrayEquals(a, Tensor.randn(g, 20).toFloatArray());
    assertArrayEquals(b, Tensor.randint(g, 0, 100, 20).toLongArray());
    // a second generator restored to the same state continues identically
    Generator h = new Generator(0);
    h.setState(g.state());
    assertEquals(99, h.initialSeed(), "the seed travels with the state");
    assertEquals(g.nextLong(), h.nextLong());
    assertEquals(g.nextDouble(), h.nextDouble());
    assertEquals(g.nextGaussian(), h.nextGaussian());
    assertThrows(IllegalArgumentException.class, () -> h.setState(new long[3]));
    long[] corrupt = g.state();
    corrupt[Generator.STATE_LONGS - 4] = 625; // position past the 624 words
    assertThrows(IllegalArgumentException.class, () -> h.setState(corrupt));
    assertNotEquals(new Generator(1).nextLong(), new Generator(2).nextLong());
    assertSame(Generator.global(), Generator.global());
  }

  /**
   * Float randn evaluates log, sin and cos with its own double polynomials (PyTorch's own are float
   * approximations; StrictMath was 4x slower): against the same Box-Muller with StrictMath, within
   * 2 float ulps everywhere and equal almost always; the log alone to 1e-12 over (0, 1].
   */
  @Test
  void floatNormalsAgreeWithStrictMath() {
    int n = 1 << 16;
    float[] got = new float[n];
    new Generator(7).fillNormal(got, 0, n, 0, 1);
    float[] u = new float[n];
    new Generator(7).fillUniform(u, 0, n, 0, 1);
    float twoPi = (float) (2 * Math.PI);
    int differ = 0;
    for (int b = 0; b < n; b += 16) {
      for (int j = 0; j < 8; j++) {
        float u1 = 1f - u[b + j];
        float theta = twoPi * u[b + j + 8];
        float radius = (float) StrictMath.sqrt(-2f * (float) StrictMath.log(u1));
        float[] want = {radius * (float) StrictMath.cos(theta), radius * (float) StrictMath.sin(theta)};
        float[] have = {got[b + j], got[b + j + 8]};
        for (int t = 0; t < 2; t++) {
          if (want[t] != have[t]) differ++;
          assertTrue(Math.abs(want[t] - have[t]) <= 2 * Math.ulp(Math.max(Math.abs(want[t]), 1e-3f)),
              "element " + (b + j + 8 * t) + ": " + have[t] + " vs " + want[t]);
        }
      }
    }
    assertTrue(differ < n / 1000, differ + " of " + n + " differ");
    for (float x = 0x1p-24f; x <= 1f; x = Math.nextUp(x * 1.0001f)) {
      double want = StrictMath.log(x);
      assertEquals(want, Generator.logUnit(x), 1e-12, "log " + x);
    }
  }

  @Test
  void generatorNextLongBound() {
    Generator g = new Generator(4);
    for (int i = 0; i < 1000; i++) {
      long v = g.nextLong(3);
      assertTrue(v >= 0 && v < 3);
    }
    long big = Long.MAX_VALUE / 3 * 2;
    for (int i = 0; i < 1000; i++) {
      long v = g.nextLong(big);
      assertTrue(v >= 0 && v < big);
    }
    assertThrows(IllegalArgumentException.class, () -> g.nextLong(0));
  }
}
