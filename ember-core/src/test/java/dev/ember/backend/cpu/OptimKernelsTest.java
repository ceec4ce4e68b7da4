package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The Vector API update loops against the scalar ones on sizes 0, 1, 7, 17, 1000 and 4099, at
 * non-zero storage offsets and from a start that is not a multiple of the vector length: every
 * elementwise result is bitwise equal (the loops do the same float operations in the same order),
 * nothing outside [lo, hi) is written, and the double sums of squares (LAMB, SAM), which the
 * vector loop adds in a different order, agree to 1e-12 relative.
 */
class OptimKernelsTest {
  private static final int[] SIZES = {0, 1, 7, 17, 1000, 4099};
  private static final UpdateKernels SCALAR = ScalarUpdateKernels.F32;
  private static final UpdateKernels VECTOR = CpuOptimizer.vectorOrNull();

  /** One kernel call on slots s (lo, hi given); returns the sums it adds, or null for elementwise kernels. */
  @FunctionalInterface
  private interface Call {
    double[] run(UpdateKernels k, Slot[] s, int lo, int hi);
  }

  /** A kernel: its slot count, which slots hold non-negative state (bit i), and the call. */
  private record Kernel(String name, int slots, int nonNegative, Call call) {}

  private static List<Kernel> kernels() {
    List<Kernel> ks = new ArrayList<>();
    ks.add(new Kernel("sgd", 2, 0, (k, s, lo, hi) -> {
      k.sgd(s[0], s[1], lo, hi, 0.1f, 0.01f, 1f);
      return null;
    }));
    ks.add(new Kernel("sgd maximize", 2, 0, (k, s, lo, hi) -> {
      k.sgd(s[0], s[1], lo, hi, 0.1f, 0f, -1f);
      return null;
    }));
    for (boolean nesterov : new boolean[] {false, true}) {
      ks.add(new Kernel("sgd momentum nesterov=" + nesterov, 3, 0, (k, s, lo, hi) -> {
        k.sgdMomentum(s[0], s[1], s[2], lo, hi, 0.05f, 1e-3f, 1f, 0.9f, 0.75f, nesterov, 0.9f);
        return null;
      }));
    }
    ks.add(new Kernel("sgd momentum first step", 3, 0, (k, s, lo, hi) -> {
      k.sgdMomentum(s[0], s[1], s[2], lo, hi, 0.05f, 0f, -1f, 0f, 1f, false, 0.9f);
      return null;
    }));
    // slots: p, g, m, v, vmax
    ks.add(new Kernel("adam", 4, 0b1000, (k, s, lo, hi) -> {
      k.adam(s[0], s[1], s[2], s[3], null, lo, hi, 1f, 0.01f, 1f, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999),
          1e-8f, 3.2e-3f, 22.4f);
      return null;
    }));
    // sign 1 and no L2 term: the vector set's loop without the gradient's extra operations
    ks.add(new Kernel("adamw plain", 4, 0b1000, (k, s, lo, hi) -> {
      k.adam(s[0], s[1], s[2], s[3], null, lo, hi, 1f, 0f, 0.99999f, 0.9f, 0.999f, (float) (1 - 0.9),
          (float) (1 - 0.999), 1e-8f, 3.2e-3f, 22.4f);
      return null;
    }));
    ks.add(new Kernel("adamw amsgrad maximize", 5, 0b11000, (k, s, lo, hi) -> {
      k.adam(s[0], s[1], s[2], s[3], s[4], lo, hi, -1f, 0f, 0.9999f, 0.8f, 0.99f, (float) (1 - 0.8), (float) (1 - 0.99),
          1e-8f, 2e-3f, 3.3f);
      return null;
    }));
    ks.add(new Kernel("adam amsgrad plain", 5, 0b11000, (k, s, lo, hi) -> {
      k.adam(s[0], s[1], s[2], s[3], s[4], lo, hi, 1f, 0f, 1f, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999),
          1e-8f, 3.2e-3f, 22.4f);
      return null;
    }));
    ks.add(new Kernel("adamax", 4, 0b1000, (k, s, lo, hi) -> {
      k.adamax(s[0], s[1], s[2], s[3], lo, hi, 1f, 0.01f, 0.9f, 0.999f, (float) (1 - 0.9), 1e-8f, 2e-2f);
      return null;
    }));
    ks.add(new Kernel("adadelta", 4, 0b1100, (k, s, lo, hi) -> {
      k.adadelta(s[0], s[1], s[2], s[3], lo, hi, 1f, 0.01f, 0.9f, (float) (1 - 0.9), 1e-6f, 1f);
      return null;
    }));
    ks.add(new Kernel("adagrad", 3, 0b100, (k, s, lo, hi) -> {
      k.adagrad(s[0], s[1], s[2], lo, hi, -1f, 0.01f, 1e-10f, 0.01f);
      return null;
    }));
    for (boolean centered : new boolean[] {false, true}) {
      for (boolean momentum : new boolean[] {false, true}) {
        // slots: p, g, s, a, b
        ks.add(new Kernel("rmsprop centered=" + centered + " momentum=" + momentum, 5, 0b100, (k, s, lo, hi) -> {
          k.rmsprop(s[0], s[1], s[2], centered ? s[3] : null, momentum ? s[4] : null, lo, hi, 1f, 0.01f, 0.99f,
              (float) (1 - 0.99), 1e-8f, 0.9f, 1e-2f);
          return null;
        }));
      }
    }
    ks.add(new Kernel("nadam", 4, 0b1000, (k, s, lo, hi) -> {
      k.nadam(s[0], s[1], s[2], s[3], lo, hi, 1f, 0.01f, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999), 0.003f,
          1e-8f, 1e-4f, 1.7e-3f);
      return null;
    }));
    for (boolean adaptive : new boolean[] {false, true}) {
      ks.add(new Kernel("radam adaptive=" + adaptive, 4, 0b1000, (k, s, lo, hi) -> {
        k.radam(s[0], s[1], s[2], s[3], lo, hi, -1f, 0.01f, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999), 1e-8f,
            2.5e-3f, adaptive);
        return null;
      }));
    }
    ks.add(new Kernel("lion", 3, 0, (k, s, lo, hi) -> {
      k.lion(s[0], s[1], s[2], lo, hi, 1f, 0.99f, 1e-4f, 0.9f, (float) (1 - 0.9), 0.99f, (float) (1 - 0.99));
      return null;
    }));
    ks.add(new Kernel("lion maximize", 3, 0, (k, s, lo, hi) -> {
      k.lion(s[0], s[1], s[2], lo, hi, -1f, 1f, 3e-4f, 0.95f, (float) (1 - 0.95), 0.98f, (float) (1 - 0.98));
      return null;
    }));
    ks.add(new Kernel("lamb moments", 4, 0b1000, (k, s, lo, hi) -> {
      double[] acc = {0.25, 0.5};
      k.lambMoments(s[0], s[1], s[2], s[3], lo, hi, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999), 0.19f, 0.002f,
          1e-6f, 0.01f, acc);
      return acc;
    }));
    ks.add(new Kernel("lamb apply", 3, 0b100, (k, s, lo, hi) -> {
      k.lambApply(s[0], s[1], s[2], lo, hi, 0.19f, 0.002f, 1e-6f, 0.01f, 1.3e-3f);
      return null;
    }));
    ks.add(new Kernel("sophia", 4, 0b1000, (k, s, lo, hi) -> {
      k.sophia(s[0], s[1], s[2], s[3], lo, hi, 0.99f, 6e-4f, 0.965f, (float) (1 - 0.965) * -1f, 0.05f * 480f);
      return null;
    }));
    ks.add(new Kernel("sophia hessian ema", 2, 0b1, (k, s, lo, hi) -> {
      k.sophiaEma(s[0], s[1], lo, hi, 0.99f, (float) (1 - 0.99));
      return null;
    }));
    for (boolean adaptive : new boolean[] {false, true}) {
      ks.add(new Kernel("sam squares adaptive=" + adaptive, 2, 0, (k, s, lo, hi) ->
          new double[] {k.samSquares(s[0], s[1], lo, hi, adaptive)}));
      ks.add(new Kernel("sam ascend adaptive=" + adaptive, 2, 0, (k, s, lo, hi) -> {
        k.samAscend(s[0], s[1], lo, hi, 0.037f, adaptive);
        return null;
      }));
    }
    return ks;
  }

  static Stream<Arguments> cases() {
    List<Arguments> out = new ArrayList<>();
    for (Kernel k : kernels()) {
      for (int n : SIZES) out.add(Arguments.of(k.name(), n, k));
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} n={1}")
  @MethodSource("cases")
  void vectorLoopsMatchTheScalarLoops(String name, int n, Kernel kernel) {
    assertNotNull(VECTOR, "the Vector API optimizer kernels did not load (tests run with jdk.incubator.vector)");
    assertEquals("vector", VECTOR.name());
    // the whole range, and a start that leaves a partial vector at both ends of the range
    for (int lo : new int[] {0, Math.min(n, 3)}) {
      float[][] data = data(kernel, n, 17L * n + kernel.name().hashCode());
      float[][] a = copy(data), b = copy(data);
      double[] sa = kernel.call().run(SCALAR, slots(a, n), lo, n);
      double[] sb = kernel.call().run(VECTOR, slots(b, n), lo, n);
      for (int j = 0; j < a.length; j++) {
        for (int i = 0; i < a[j].length; i++) {
          if (Float.floatToIntBits(a[j][i]) != Float.floatToIntBits(b[j][i])) {
            fail(name + " n=" + n + " lo=" + lo + ": slot " + j + " element " + (i - offset(j)) + ": scalar " + a[j][i]
                + ", vector " + b[j][i]);
          }
        }
      }
      if (sa != null) {
        for (int j = 0; j < sa.length; j++) {
          assertEquals(sa[j], sb[j], 1e-12 * Math.abs(sa[j]), name + " n=" + n + " lo=" + lo + ": sum " + j);
        }
      }
    }
  }

  static Stream<Arguments> kernelCases() {
    return kernels().stream().map(k -> Arguments.of(k.name(), k));
  }

  /** The same after 300 calls on 4099 elements, so C2 has compiled the vector loops (intrinsics, not the Java fallback). */
  @ParameterizedTest(name = "{0}")
  @MethodSource("kernelCases")
  void compiledVectorLoopsMatchTheScalarLoops(String name, Kernel kernel) {
    assertNotNull(VECTOR, "the Vector API optimizer kernels did not load");
    int n = 4099;
    float[][] data = data(kernel, n, 99);
    float[][] a = copy(data), b = copy(data);
    Slot[] slotsA = slots(a, n), slotsB = slots(b, n);
    double[] sa = null, sb = null;
    for (int it = 0; it < 300; it++) {
      sa = kernel.call().run(SCALAR, slotsA, 0, n);
      sb = kernel.call().run(VECTOR, slotsB, 0, n);
    }
    for (int j = 0; j < a.length; j++) {
      for (int i = 0; i < a[j].length; i++) {
        if (Float.floatToIntBits(a[j][i]) != Float.floatToIntBits(b[j][i])) {
          fail(name + " after warm-up: slot " + j + " element " + (i - offset(j)) + ": scalar " + a[j][i] + ", vector " + b[j][i]);
        }
      }
    }
    if (sa != null) {
      for (int j = 0; j < sa.length; j++) assertEquals(sa[j], sb[j], 1e-12 * Math.abs(sa[j]), name + ": sum " + j);
    }
  }

  /** Slot j lives at offset j + 2 of an array with 3 spare elements after it (which must stay untouched). */
  private static int offset(int slot) {
    return slot + 2;
  }

  /**
   * Random slot contents: standard normal, absolute values for non-negative state, with exact
   * zeros of both signs every few elements (sign and max/min edge cases).
   */
  private static float[][] data(Kernel k, int n, long seed) {
    Random r = new Random(seed);
    float[][] out = new float[k.slots()][];
    for (int j = 0; j < k.slots(); j++) {
      float[] a = new float[offset(j) + n + 3];
      boolean nonNeg = (k.nonNegative() >> j & 1) != 0;
      for (int i = 0; i < a.length; i++) {
        float v = (float) r.nextGaussian();
        if (nonNeg) v = Math.abs(v) * 0.1f;
        if (i % 7 == 3) v = 0f;
        if (i % 11 == 5) v = nonNeg ? 0f : -0f;
        a[i] = v;
      }
      out[j] = a;
    }
    return out;
  }

  private static float[][] copy(float[][] d) {
    float[][] c = new float[d.length][];
    for (int j = 0; j < d.length; j++) c[j] = d[j].clone();
    return c;
  }

  /**
   * Without maximize or an L2 term Adam uses the gradient as it is, as torch does with weight_decay 0: an
   * infinite parameter stays infinite and its moments stay finite (sign * g + 0 * x would make them NaN), in
   * both loop sets, with and without AMSGrad, in whole vectors and the tail.
   */
  @ParameterizedTest(name = "amsgrad={0}")
  @ValueSource(booleans = {false, true})
  void plainAdamIgnoresANonFiniteParameter(boolean ams) {
    int n = 37;
    for (UpdateKernels k : new UpdateKernels[] {SCALAR, VECTOR}) {
      float[] p = new float[n], g = new float[n], m = new float[n], v = new float[n], x = new float[n];
      for (int i = 0; i < n; i++) {
        p[i] = i % 3 == 0 ? Float.POSITIVE_INFINITY : i - 5f;
        g[i] = 0.25f * i - 3f;
      }
      k.adam(new Slot(p, 0), new Slot(g, 0), new Slot(m, 0), new Slot(v, 0), ams ? new Slot(x, 0) : null, 0, n, 1f, 0f,
          1f, 0.9f, 0.999f, (float) (1 - 0.9), (float) (1 - 0.999), 1e-8f, 1e-3f, 31.6f);
      for (int i = 0; i < n; i++) {
        String at = k.name() + " element " + i;
        assertEquals((float) (0.1 * g[i]), m[i], 1e-6f, at + ": exp_avg");
        assertEquals((float) (0.001 * g[i] * g[i]), v[i], 1e-6f, at + ": exp_avg_sq");
        if (i % 3 == 0) assertEquals(Float.POSITIVE_INFINITY, p[i], at + ": parameter");
        else assertTrue(Float.isFinite(p[i]), at + ": parameter " + p[i]);
      }
    }
  }

  /**
   * Gradients so small that Adam's {@code c2 * g * g} falls below the smallest normal float (a model that fits
   * its batch) add nothing to the second moment, in both loop sets and bitwise alike: the product would be a
   * subnormal (a microcode assist per element on Intel) or 0, below half an ulp of the moment. Larger ones add
   * their square as before, and the first moment takes every gradient as it is. A second moment of 0 shows the
   * difference: it stays 0 instead of becoming a subnormal.
   */
  @ParameterizedTest(name = "amsgrad={0}")
  @ValueSource(booleans = {false, true})
  void adamDropsSecondMomentTermsBelowTheSmallestNormalFloat(boolean ams) {
    int n = 67;
    float c2 = (float) (1 - 0.999);
    double floor = UpdateKernels.adamSquareFloor(c2);
    assertTrue((float) (floor * c2) * (float) floor >= Float.MIN_NORMAL * 0.999f, "floor " + floor);
    float[][] results = new float[2][];
    int r = 0;
    for (UpdateKernels k : new UpdateKernels[] {SCALAR, VECTOR}) {
      float[] p = new float[n], g = new float[n], m = new float[n], v = new float[n], x = new float[n];
      for (int i = 0; i < n; i++) {
        p[i] = 1f + i;
        // from 1e-30 (its square term underflows) through the floor to 1e-12 (a normal square term)
        g[i] = (float) ((i % 2 == 0 ? 1 : -1) * Math.pow(10, -30 + 18.0 * i / (n - 1)));
        v[i] = i % 3 == 0 ? 0f : 1e-20f;
      }
      k.adam(new Slot(p, 0), new Slot(g, 0), new Slot(m, 0), new Slot(v, 0), ams ? new Slot(x, 0) : null, 0, n, 1f, 0f,
          1f, 0.9f, 0.999f, (float) (1 - 0.9), c2, 1e-8f, 1e-3f, 31.6f);
      for (int i = 0; i < n; i++) {
        String at = k.name() + " element " + i + " g=" + g[i];
        float term = (float) (c2 * g[i]) * g[i];
        float kept = i % 3 == 0 ? 0f : 0.999f * 1e-20f;
        float expected = Math.abs(g[i]) < floor ? kept : kept + term;
        assertEquals(expected, v[i], 0f, at + ": exp_avg_sq");
        assertEquals((float) (0.1f * g[i]), m[i], 0f, at + ": exp_avg");
        if (Math.abs(g[i]) < floor) assertTrue(Math.abs(term) < Float.MIN_NORMAL, at + ": term " + term);
      }
      results[r++] = v;
    }
    assertArrayEquals(results[0], results[1], "scalar and vector second moments");
  }

  /** productFloor(c): the smallest float x >= MIN_NORMAL whose product with c, rounded to float, is normal. */
  @ParameterizedTest(name = "c={0}")
  @ValueSource(floats = {0.9f, 0.1f, 0.999f, 1e-3f, 1.2e-3f, 0.99999f, 1f, 3f, -1f, 0f, 7.3e-9f})
  void productFloorIsTheSmallestOperandOfANormalProduct(float c) {
    float f = (float) UpdateKernels.productFloor(c);
    float a = Math.abs(c);
    assertTrue(f >= Float.MIN_NORMAL, "floor " + f);
    if (a > 0) assertTrue(a * f >= Float.MIN_NORMAL, "c * floor = " + a * f);
    if (f > Float.MIN_NORMAL) assertTrue(a * Math.nextDown(f) < Float.MIN_NORMAL, "below the floor: " + a * Math.nextDown(f));
  }

  /**
   * A model that fits its batches leaves many gradients at exactly 0 (dead ReLU units), and Adam's first moment
   * of such a weight decays by beta1 per step through the whole subnormal range (seed_medium: 2.4M of 4.2M first
   * moments of one layer subnormal at once), each a microcode assist per operation on Intel. Both loop sets, bitwise
   * alike, take every operand whose product would be subnormal as 0: first and second moments that small, a
   * gradient below MIN_NORMAL / c1, a first moment whose update term stepSize * m would be subnormal. So a
   * decaying moment reaches 0 without a subnormal value, and elements with only normal terms get the bits of the
   * formula as it was.
   */
  @ParameterizedTest(name = "amsgrad={0} decoupled={1}")
  @MethodSource("adamVariants")
  void adamTakesNoSubnormalOperand(boolean ams, boolean decoupled) {
    int n = 211;
    float b1 = 0.9f, b2 = 0.999f, c1 = (float) (1 - 0.9), c2 = (float) (1 - 0.999), eps = 1e-8f, stepSize = 1e-3f;
    float decay = decoupled ? 1 - 1e-3f * 0.01f : 1f;
    float inv = 1.0005f;
    float[][] out = new float[2][];
    int r = 0;
    for (UpdateKernels k : new UpdateKernels[] {SCALAR, VECTOR}) {
      float[] p = new float[n], g = new float[n], m = new float[n], v = new float[n], x = new float[n];
      float[] p0 = new float[n], g0 = new float[n], m0 = new float[n], v0 = new float[n];
      for (int i = 0; i < n; i++) {
        // magnitudes from 1.4e-45 (the smallest subnormal) to 1e-30 and a few normal ones; zeros in between
        double e = -45 + 15.0 * ((i * 37) % n) / (n - 1);
        float tiny = (float) ((i % 2 == 0 ? 1 : -1) * Math.pow(10, e));
        m0[i] = i % 5 == 0 ? 0f : i % 7 == 0 ? 0.01f : tiny;
        g0[i] = i % 3 == 0 ? 0f : i % 11 == 0 ? -0.02f : (float) (tiny * (i % 4 == 1 ? 1e5 : 1));
        v0[i] = i % 13 == 0 ? 1e-4f : Math.abs(tiny);
        p0[i] = i % 17 == 0 ? tiny : 0.5f - i * 1e-3f;
      }
      System.arraycopy(p0, 0, p, 0, n);
      System.arraycopy(g0, 0, g, 0, n);
      System.arraycopy(m0, 0, m, 0, n);
      System.arraycopy(v0, 0, v, 0, n);
      k.adam(new Slot(p, 0), new Slot(g, 0), new Slot(m, 0), new Slot(v, 0), ams ? new Slot(x, 0) : null, 0, n, 1f, 0f,
          decay, b1, b2, c1, c2, eps, stepSize, inv);
      float fm = (float) UpdateKernels.productFloor(b1), fg = (float) UpdateKernels.productFloor(c1);
      float fv = (float) UpdateKernels.productFloor(b2), fs = (float) UpdateKernels.productFloor(stepSize);
      float fsq = (float) UpdateKernels.adamSquareFloor(c2);
      for (int i = 0; i < n; i++) {
        String at = k.name() + " element " + i + " m=" + m0[i] + " g=" + g0[i] + " v=" + v0[i] + " p=" + p0[i];
        float mi = b1 * flush(m0[i], fm) + c1 * flush(g0[i], fg);
        float gs = flush(g0[i], fsq);
        float vi = b2 * flush(v0[i], fv) + c2 * gs * gs;
        float denom = (float) Math.sqrt(vi) * inv + eps;
        float pi = p0[i] * decay - stepSize * flush(mi, fs) / denom;
        assertEquals(mi, m[i], 0f, at + ": exp_avg");
        assertEquals(vi, v[i], 0f, at + ": exp_avg_sq");
        assertEquals(pi, p[i], 0f, at + ": param");
        // a moment is subnormal only where two normal terms cancel
        assertTrue(!subnormal(m[i]) || flush(m0[i], fm) != 0 && flush(g0[i], fg) != 0, at + ": exp_avg " + m[i]);
        assertTrue(!subnormal(v[i]), at + ": exp_avg_sq " + v[i]);
        boolean allNormal = !subnormal(b1 * m0[i]) && !subnormal(c1 * g0[i]) && !subnormal(b2 * v0[i])
            && !subnormal(c2 * g0[i] * g0[i]) && !subnormal(stepSize * (b1 * m0[i] + c1 * g0[i]))
            && !subnormal(p0[i]) && !subnormal(b1 * m0[i] + c1 * g0[i]);
        if (allNormal) { // the formula without any flush, as before
          float om = b1 * m0[i] + c1 * g0[i];
          float ov = b2 * v0[i] + c2 * g0[i] * g0[i];
          float op = p0[i] * decay - stepSize * om / ((float) Math.sqrt(ov) * inv + eps);
          assertEquals(om, m[i], 0f, at + ": unflushed exp_avg");
          assertEquals(ov, v[i], 0f, at + ": unflushed exp_avg_sq");
          assertEquals(op, p[i], 0f, at + ": unflushed param");
        }
      }
      out[r++] = m;
      // the moments of a weight whose gradient stays 0 decay to 0 without a subnormal value on the way
      float[] dp = new float[n], dg = new float[n], dm = new float[n], dv = new float[n];
      for (int i = 0; i < n; i++) {
        dp[i] = 0.5f;
        dm[i] = (float) ((i % 2 == 0 ? 1 : -1) * Math.pow(10, -30 - 5.0 * i / n));
        dv[i] = (float) (1e-36 * (1 + i));
      }
      for (int step = 0; step < 400; step++) {
        k.adam(new Slot(dp, 0), new Slot(dg, 0), new Slot(dm, 0), new Slot(dv, 0), ams ? new Slot(new float[n], 0) : null,
            0, n, 1f, 0f, decay, b1, 0.9f, c1, c2, eps, stepSize, inv);
        for (int i = 0; i < n; i++) {
          assertTrue(!subnormal(dm[i]) && !subnormal(dv[i]), k.name() + " step " + step + " element " + i + ": m " + dm[i]
              + ", v " + dv[i]);
        }
      }
      for (int i = 0; i < n; i++) assertEquals(0f, dm[i], 0f, k.name() + " decayed exp_avg " + i);
    }
    assertArrayEquals(out[0], out[1], "scalar and vector first moments");
  }

  /**
   * SGD with momentum: the buffer of a weight whose gradient stays 0 decays by the momentum per step through the
   * subnormals; both loop sets, bitwise alike, take the operands of sign * g, keep * b, mom * b and lr * step as 0
   * below their floors, so it reaches 0 without a subnormal value. Elements with only normal terms get the
   * formula's bits as before.
   */
  @ParameterizedTest(name = "nesterov={0}")
  @ValueSource(booleans = {false, true})
  void sgdMomentumTakesNoSubnormalOperand(boolean nesterov) {
    int n = 173;
    float lr = 0.01f, wd = 1e-4f, keep = 0.9f, add = 0.75f, mom = 0.9f;
    float[][] out = new float[2][];
    int r = 0;
    for (UpdateKernels k : new UpdateKernels[] {SCALAR, VECTOR}) {
      float[] p = new float[n], g = new float[n], b = new float[n];
      float[] p0 = new float[n], g0 = new float[n], b0 = new float[n];
      for (int i = 0; i < n; i++) {
        double e = -45 + 15.0 * ((i * 41) % n) / (n - 1);
        float tiny = (float) ((i % 2 == 0 ? 1 : -1) * Math.pow(10, e));
        b0[i] = i % 5 == 0 ? 0f : i % 7 == 0 ? 0.01f : tiny;
        g0[i] = i % 3 == 0 ? 0f : i % 11 == 0 ? -0.02f : tiny;
        p0[i] = i % 17 == 0 ? tiny : 0.5f - i * 1e-3f;
      }
      System.arraycopy(p0, 0, p, 0, n);
      System.arraycopy(g0, 0, g, 0, n);
      System.arraycopy(b0, 0, b, 0, n);
      k.sgdMomentum(new Slot(p, 0), new Slot(g, 0), new Slot(b, 0), 0, n, lr, wd, 1f, keep, add, nesterov, mom);
      float fsg = (float) UpdateKernels.productFloor(1f), fk = (float) UpdateKernels.productFloor(keep);
      float fmo = (float) UpdateKernels.productFloor(mom), flr = (float) UpdateKernels.productFloor(lr);
      for (int i = 0; i < n; i++) {
        String at = k.name() + " element " + i + " b=" + b0[i] + " g=" + g0[i] + " p=" + p0[i];
        float d = 1f * flush(g0[i], fsg) + wd * p0[i];
        float bi = keep * flush(b0[i], fk) + add * d;
        float step = nesterov ? d + mom * flush(bi, fmo) : bi;
        float pi = p0[i] - lr * flush(step, flr);
        assertEquals(bi, b[i], 0f, at + ": momentum_buffer");
        assertEquals(pi, p[i], 0f, at + ": param");
        float od = 1f * g0[i] + wd * p0[i];
        float ob = keep * b0[i] + add * od;
        float ostep = nesterov ? od + mom * ob : ob;
        boolean allNormal = !subnormal(g0[i]) && !subnormal(wd * p0[i]) && !subnormal(keep * b0[i])
            && !subnormal(add * od) && !subnormal(ob) && !subnormal(mom * ob) && !subnormal(lr * ostep);
        if (allNormal) {
          assertEquals(ob, b[i], 0f, at + ": unflushed momentum_buffer");
          assertEquals(p0[i] - lr * ostep, p[i], 0f, at + ": unflushed param");
        }
      }
      out[r++] = p;
      // the buffer of a weight whose gradient stays 0 decays to 0 without a subnormal value on the way
      float[] dp = new float[n], dg = new float[n], db = new float[n];
      for (int i = 0; i < n; i++) {
        dp[i] = 0.5f;
        db[i] = (float) ((i % 2 == 0 ? 1 : -1) * Math.pow(10, -30 - 5.0 * i / n));
      }
      for (int step = 0; step < 400; step++) {
        k.sgdMomentum(new Slot(dp, 0), new Slot(dg, 0), new Slot(db, 0), 0, n, lr, 0f, 1f, keep, add, nesterov, mom);
        for (int i = 0; i < n; i++) assertTrue(!subnormal(db[i]), k.name() + " step " + step + " element " + i + ": " + db[i]);
      }
      for (int i = 0; i < n; i++) assertEquals(0f, db[i], 0f, k.name() + " decayed buffer " + i);
    }
    assertArrayEquals(out[0], out[1], "scalar and vector parameters");
  }

  static Stream<Arguments> adamVariants() {
    return Stream.of(Arguments.of(false, false), Arguments.of(false, true), Arguments.of(true, true));
  }

  private static float flush(float a, float floor) {
    return Math.abs(a) < floor ? 0f : a;
  }

  private static boolean subnormal(float a) {
    return a != 0 && Math.abs(a) < Float.MIN_NORMAL;
  }

  /** Slots over [offset(j), offset(j) + n) of each array, sharing the arrays (the kernels write them). */
  private static Slot[] slots(float[][] arrays, int n) {
    Slot[] s = new Slot[arrays.length];
    for (int j = 0; j < arrays.length; j++) {
      Tensor whole = Tensor.of(arrays[j], arrays[j].length);
      Tensor view = whole.narrow(0, offset(j), n);
      s[j] = new Slot(view);
      // Tensor.of copies: point the test's array at the storage the kernel writes
      arrays[j] = whole.storage().floats();
    }
    return s;
  }

  /**
   * forRange's tasks: contiguous, covering [0, n) once, each starting on a 64-byte line, equal to within one
   * line, so that two threads split a tensor in halves (the MNIST MLP's 784 x 128 weight at its row 64).
   */
  @Test
  void forRangeTasksAreEqualAndLineAligned() {
    assertEquals(List.of(0, 25088, 50176, 75264, 100352), bounds(100352));
    for (int n : new int[] {CpuOptimizer.CHUNK + 1, 65537, 100352, 1 << 20, 3_000_017}) {
      List<Integer> b = bounds(n);
      int tasks = b.size() - 1;
      assertEquals((n + CpuOptimizer.CHUNK - 1) / CpuOptimizer.CHUNK, tasks, "n=" + n);
      assertEquals(0, b.get(0));
      assertEquals(n, b.get(tasks));
      int size = n / tasks;
      for (int t = 0; t < tasks; t++) {
        int lo = b.get(t), hi = b.get(t + 1);
        if (t > 0) assertEquals(0, lo % 16, "n=" + n + " task " + t + " starts at " + lo);
        assertTrue(Math.abs(hi - lo - size) <= 16, "n=" + n + " task " + t + ": " + lo + ".." + hi);
      }
    }
    // and the tasks run cover every element once
    int n = 3 * CpuOptimizer.CHUNK + 5;
    int[] seen = new int[n];
    CpuOptimizer.forRange(n, (lo, hi) -> {
      for (int i = lo; i < hi; i++) seen[i]++;
    });
    for (int i = 0; i < n; i++) assertEquals(1, seen[i], "element " + i);
  }

  private static List<Integer> bounds(int n) {
    int tasks = (n + CpuOptimizer.CHUNK - 1) / CpuOptimizer.CHUNK;
    List<Integer> b = new ArrayList<>();
    for (int t = 0; t <= tasks; t++) b.add(CpuOptimizer.bound(n, tasks, t));
    return b;
  }
}
