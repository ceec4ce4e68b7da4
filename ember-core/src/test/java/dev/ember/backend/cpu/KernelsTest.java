package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.cpu.vector.VectorKernels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

class KernelsTest {
  private static final int[] SIZES = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 1000, 4099};
  private static final int XO = 5, OO = 3;
  private static final EnumSet<BinaryOp> ARITH = EnumSet.range(BinaryOp.ADD, BinaryOp.MINIMUM);

  // ---------------------------------------------------------------------------------------------
  // Definitions at known points

  private static double ap(UnaryOp op, double x) {
    return ScalarKernels.apply(op, x, 0);
  }

  @Test
  void unaryDefinitions() {
    assertEquals(-2.5, ap(UnaryOp.NEG, 2.5));
    assertEquals(2.5, ap(UnaryOp.ABS, -2.5));
    assertEquals(-1.0, ap(UnaryOp.SIGN, -3));
    assertEquals(1.0, ap(UnaryOp.SIGN, 0.1));
    assertEquals(0.0, ap(UnaryOp.SIGN, 0));
    assertTrue(Double.isNaN(ap(UnaryOp.SIGN, Double.NaN)));
    assertEquals(Math.E, ap(UnaryOp.EXP, 1), 1e-15);
    assertEquals(1.0, ap(UnaryOp.LOG, Math.E), 1e-15);
    assertEquals(1e-20, ap(UnaryOp.LOG1P, 1e-20), 1e-35);
    assertEquals(1e-20, ap(UnaryOp.EXPM1, 1e-20), 1e-35);
    assertEquals(3.0, ap(UnaryOp.SQRT, 9));
    assertEquals(0.25, ap(UnaryOp.RSQRT, 16));
    assertEquals(9.0, ap(UnaryOp.SQUARE, -3));
    assertEquals(0.25, ap(UnaryOp.RECIPROCAL, 4));
    assertEquals(1.0, ap(UnaryOp.SIN, Math.PI / 2), 1e-15);
    assertEquals(-1.0, ap(UnaryOp.COS, Math.PI), 1e-15);
    assertEquals(0.7615941559557649, ap(UnaryOp.TANH, 1), 1e-15);
    assertEquals(0.7310585786300049, ap(UnaryOp.SIGMOID, 1), 1e-15);
    assertEquals(0.2689414213699951, ap(UnaryOp.SIGMOID, -1), 1e-15);
    assertEquals(0.0, ap(UnaryOp.SIGMOID, -800));
    assertEquals(1.0, ap(UnaryOp.SIGMOID, 800));
    assertEquals(0.0, ap(UnaryOp.RELU, -2));
    assertEquals(2.0, ap(UnaryOp.RELU, 2));
    assertTrue(Double.isNaN(ap(UnaryOp.RELU, Double.NaN)));
    assertEquals(-0.2, ScalarKernels.apply(UnaryOp.LEAKY_RELU, -2, 0.1), 1e-15);
    assertEquals(3.0, ScalarKernels.apply(UnaryOp.LEAKY_RELU, 3, 0.1));
    assertEquals(2 * Math.expm1(-1), ScalarKernels.apply(UnaryOp.ELU, -1, 2), 1e-15);
    assertEquals(3.0, ScalarKernels.apply(UnaryOp.ELU, 3, 2));
    assertEquals(0.8413447460685429, ap(UnaryOp.GELU, 1), 1e-12);
    assertEquals(-0.15426876936299344, ap(UnaryOp.GELU, -0.5), 1e-12);
    assertEquals(1.9544997361036416, ap(UnaryOp.GELU, 2), 1e-12);
    assertEquals(0.0, ap(UnaryOp.GELU, 0));
    // 0.5 x erfc(5/sqrt2) at x = -5: the 1+erf form would cancel to garbage here
    assertEquals(-1.4332578593959731e-6, ap(UnaryOp.GELU, -5), 1e-19);
    assertEquals(0.8411919906082768, ap(UnaryOp.GELU_TANH, 1), 1e-12);
    assertEquals(0.7310585786300049, ap(UnaryOp.SILU, 1), 1e-15);
    assertEquals(-0.0, ap(UnaryOp.SILU, -800));
    assertEquals(Math.log1p(Math.E), ScalarKernels.apply(UnaryOp.SOFTPLUS, 1, 1), 1e-15);
    assertEquals(Math.log1p(Math.exp(2)) / 2, ScalarKernels.apply(UnaryOp.SOFTPLUS, 1, 2), 1e-15);
    assertEquals(1000.0, ScalarKernels.apply(UnaryOp.SOFTPLUS, 1000, 1));
    assertEquals(25.0, ScalarKernels.apply(UnaryOp.SOFTPLUS, 25, 1));
    assertEquals(8.0, ScalarKernels.apply(UnaryOp.POW_SCALAR, 2, 3));
    assertEquals(-2.0, ap(UnaryOp.FLOOR, -1.5));
    assertEquals(-1.0, ap(UnaryOp.CEIL, -1.5));
    assertEquals(2.0, ap(UnaryOp.ROUND, 2.5));
    assertEquals(-2.0, ap(UnaryOp.ROUND, -1.5));
    assertEquals(4.0, ap(UnaryOp.ROUND, 3.5));
    assertEquals(-1.0, ap(UnaryOp.TRUNC, -1.7));
    assertEquals(1.0, ap(UnaryOp.TRUNC, 1.7));
  }

  @Test
  void erfMatchesKnownValues() {
    assertEquals(0.0, ScalarKernels.erf(0));
    assertEquals(0.8427007929497149, ScalarKernels.erf(1), 1e-16);
    assertEquals(-0.5204998778130465, ScalarKernels.erf(-0.5), 1e-16);
    assertEquals(0.9953222650189527, ScalarKernels.erf(2), 1e-16);
    assertEquals(1.5374597944280349e-12, ScalarKernels.erfc(5), 1e-26);
    assertEquals(2.088487583762545e-45, ScalarKernels.erfc(10), 1e-58);
  }

  @Test
  void binaryDefinitions() {
    assertEquals(5.0, ScalarKernels.apply(BinaryOp.ADD, 2, 3));
    assertEquals(-1.0, ScalarKernels.apply(BinaryOp.SUB, 2, 3));
    assertEquals(6.0, ScalarKernels.apply(BinaryOp.MUL, 2, 3));
    assertEquals(Double.POSITIVE_INFINITY, ScalarKernels.apply(BinaryOp.DIV, 1, 0));
    assertEquals(8.0, ScalarKernels.apply(BinaryOp.POW, 2, 3));
    assertTrue(Double.isNaN(ScalarKernels.apply(BinaryOp.MAXIMUM, 1, Double.NaN)));
    assertTrue(Double.isNaN(ScalarKernels.apply(BinaryOp.MINIMUM, Double.NaN, 1)));
    assertEquals(1.0, ScalarKernels.apply(BinaryOp.LT, 1, 2));
    assertEquals(0.0, ScalarKernels.apply(BinaryOp.EQ, Double.NaN, Double.NaN));
  }

  // ---------------------------------------------------------------------------------------------
  // Vector against scalar

  private static float[] random(Random r, int n, double lo, double hi) {
    float[] a = new float[n];
    for (int i = 0; i < n; i++) a[i] = (float) (lo + (hi - lo) * r.nextDouble());
    return a;
  }

  /** Input range over which each op is well defined and interesting. */
  private static double[] range(UnaryOp op) {
    return switch (op) {
      case LOG, SQRT, RSQRT -> new double[] {1e-3, 100};
      case LOG1P -> new double[] {-0.9, 50};
      case EXP, EXPM1 -> new double[] {-80, 80};
      case SIN, COS -> new double[] {-50, 50};
      case RECIPROCAL -> new double[] {0.01, 10};
      case POW_SCALAR -> new double[] {0.01, 10};
      case GELU, GELU_TANH, SILU, SIGMOID -> new double[] {-15, 15};
      case FLOOR, CEIL, ROUND, TRUNC -> new double[] {-6, 6};
      default -> new double[] {-30, 30};
    };
  }

  private static void assertClose(String what, float want, float got, double rel, double abs) {
    if (Float.isNaN(want) || Float.isNaN(got)) {
      if (Float.isNaN(want) != Float.isNaN(got)) fail(what + ": want " + want + " got " + got);
      return;
    }
    if (want == got) return;
    if (Math.abs(want - got) > abs + rel * Math.abs(want)) fail(what + ": want " + want + " got " + got);
  }

  /** Scalar and vector kernels on the same input, output offsets differ from input offsets. */
  private static void checkUnary(UnaryOp op, float p, float[] x, int n, double rel, double abs) {
    float[] want = new float[n + OO];
    float[] got = new float[n + OO];
    ScalarKernels.unary(op, p, x, XO, want, OO, n);
    VectorKernels.unary(op, p, x, XO, got, OO, n);
    for (int i = 0; i < n; i++) {
      assertClose(op + "(" + x[XO + i] + ") n=" + n + " i=" + i, want[OO + i], got[OO + i], rel, abs);
      // definition check for the scalar float path itself
      assertClose(op + " def", (float) ScalarKernels.apply(op, x[XO + i], p), want[OO + i], 0, 0);
    }
  }

  private static float param(UnaryOp op) {
    return switch (op) {
      case LEAKY_RELU -> 0.01f;
      case ELU -> 1.5f;
      case SOFTPLUS -> 2f;
      case POW_SCALAR -> 1.7f;
      default -> 0f;
    };
  }

  @Test
  void vectorUnaryMatchesScalar() {
    Random r = new Random(1);
    for (UnaryOp op : UnaryOp.values()) {
      double[] rg = range(op);
      for (int n : SIZES) {
        float[] x = random(r, n + XO, rg[0], rg[1]);
        checkUnary(op, param(op), x, n, 1e-5, 1e-6);
      }
    }
  }

  @Test
  void vectorUnarySpecialValues() {
    float[] special = {0f, -0f, 1f, -1f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, -0.3f, 0.7f, -0.7f,
        8388607.5f, -8388607.5f, 1e9f, -1e9f, Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY,
        20f, -20f, 100f, -100f, -800f, 800f, 14f, -14f, 15f, -15f, 1e-30f, -1e-30f, 9.5f, -9.5f};
    float[] x = new float[XO + 64];
    for (int rep = 0; rep < 64; rep++) x[XO + rep] = special[rep % special.length];
    EnumSet<UnaryOp> notAtSpecials = EnumSet.of(UnaryOp.SIN, UnaryOp.COS, UnaryOp.POW_SCALAR, UnaryOp.LOG,
        UnaryOp.LOG1P, UnaryOp.SQRT, UnaryOp.RSQRT);
    for (UnaryOp op : UnaryOp.values()) {
      if (notAtSpecials.contains(op)) continue;
      checkUnary(op, param(op), x, 64, 1e-5, 1e-6);
    }
    // ops with restricted domains still agree on NaN and the domain edges
    float[] edge = new float[XO + 16];
    float[] e = {0f, -0f, -1f, Float.NaN, Float.POSITIVE_INFINITY, 1f, 4f, 1e-30f};
    for (int i = 0; i < 16; i++) edge[XO + i] = e[i % e.length];
    for (UnaryOp op : EnumSet.of(UnaryOp.LOG, UnaryOp.SQRT, UnaryOp.RSQRT)) checkUnary(op, 0, edge, 16, 1e-5, 1e-6);
    // the exponents the vector kernel does without Math.pow give pow's bits at every special value
    for (float p : new float[] {0f, 1f, 2f}) checkUnary(UnaryOp.POW_SCALAR, p, x, 64, 0, 0);
  }

  /** Error in units of the float ulp of the double-precision answer. */
  private static double ulps(double want, float got) {
    if (Double.isNaN(want)) return Float.isNaN(got) ? 0 : Double.POSITIVE_INFINITY;
    if (want == got) return 0;
    float w = (float) want;
    if (Float.isInfinite(w) || Float.isInfinite(got)) return w == got ? 0 : Double.POSITIVE_INFINITY;
    return Math.abs(got - want) / Math.ulp(Math.max(Math.abs(w), Float.MIN_NORMAL));
  }

  /**
   * The vector transcendentals are our own polynomials (VMath), so their accuracy is ours to
   * prove: a dense sweep of each domain, including subnormals, overflow edges and the switch-over
   * points between branches, against Math.* in double.
   */
  @Test
  void vectorTranscendentalsWithinTwoUlp() {
    Random r = new Random(3);
    int n = 200_000;
    record Case(UnaryOp op, double lo, double hi, double maxUlp) {}
    Case[] cases = {
        new Case(UnaryOp.EXP, -104, 89, 1.5), new Case(UnaryOp.EXP, -1, 1, 1.5),
        new Case(UnaryOp.EXPM1, -0.4, 0.4, 1.5), new Case(UnaryOp.EXPM1, -20, 20, 2.5),
        new Case(UnaryOp.LOG, 0, 1e-37, 1.5), new Case(UnaryOp.LOG, 0.5, 2, 1.5), new Case(UnaryOp.LOG, 0, 3e38, 1.5),
        new Case(UnaryOp.LOG1P, -0.999, 1, 2.5), new Case(UnaryOp.LOG1P, -1e-6, 1e-6, 2.5), new Case(UnaryOp.LOG1P, 0, 1e30, 2.5),
        new Case(UnaryOp.TANH, -1, 1, 2.5), new Case(UnaryOp.TANH, -12, 12, 2.5), new Case(UnaryOp.TANH, -1e-5, 1e-5, 2.5),
    };
    for (Case c : cases) {
      float[] x = random(r, n, c.lo, c.hi);
      float[] edges = {-0f, 0f, Float.MIN_VALUE, Float.MIN_NORMAL, 0.34657359f, -0.34657359f, 88.72283f, -103.9f,
          -87.5f, 1e-30f, -1e-30f, 0.70710677f, 1.4142135f, 1f, -1f};
      for (int i = 0; i < edges.length; i++) x[i] = edges[i];
      float[] got = new float[n];
      VectorKernels.unary(c.op, 0, x, 0, got, 0, n);
      double worst = 0;
      float worstAt = 0;
      for (int i = 0; i < n; i++) {
        double u = ulps(ScalarKernels.apply(c.op, x[i], 0), got[i]);
        if (u > worst) {
          worst = u;
          worstAt = x[i];
        }
      }
      assertTrue(worst <= c.maxUlp, c.op + " on [" + c.lo + ", " + c.hi + "]: " + worst + " ulp at x=" + worstAt);
    }
  }

  /**
   * exp clamps its argument to [-110, 89] and lets the scaling by 2^n overflow to +inf or round to 0 by itself:
   * at the last finite argument and the next float up, at the last argument that does not round to 0 and the
   * next float down, beyond the clamps, at the infinities and NaN, every lane of a vector gives what Math.exp
   * rounded to float gives.
   */
  @Test
  void vectorExpAtAndBeyondItsClamps() {
    float hi = 88.72283935546875f, lo = -103.97208f;
    float[] x = {hi, Math.nextUp(hi), 88.8f, 89f, Math.nextUp(89f), 100f, 1e30f, Float.POSITIVE_INFINITY,
        Math.nextUp(lo), lo, Math.nextDown(lo), -104f, -110f, Math.nextDown(-110f), -1e30f, Float.NEGATIVE_INFINITY,
        Float.NaN, -87.3f, -100f, 0f};
    float[] got = new float[32];
    float[] in = new float[32];
    System.arraycopy(x, 0, in, 0, x.length);
    VectorKernels.unary(UnaryOp.EXP, 0, in, 0, got, 0, 32);
    for (int i = 0; i < x.length; i++) {
      float want = (float) Math.exp(x[i]);
      if (Float.isNaN(want)) {
        assertTrue(Float.isNaN(got[i]), "exp(" + x[i] + ") = " + got[i]);
      } else if (Float.isInfinite(want) || want == 0 || want < Float.MIN_NORMAL) {
        assertEquals(want, got[i], "exp(" + x[i] + ")"); // infinity, zero and subnormals exactly
      } else {
        assertTrue(ulps(Math.exp(x[i]), got[i]) <= 1.5, "exp(" + x[i] + ") = " + got[i] + ", want " + want);
      }
    }
  }

  /**
   * Every float argument from -110 (exp's lower clamp) up to the last one that rounds to 0 gives exactly +0, and so do
   * -inf and the arguments below the clamp, with lanes of other values in the same vectors: the arguments below
   * -105 skip the polynomial (whose last multiply would underflow, a microcode assist per instruction on Intel
   * cores) and must give what it gives; the softmax of a causal attention mask sends half its lanes there.
   */
  @Test
  void vectorExpIsPositiveZeroFromMinusInfinityToItsLastZero() {
    float lo = -103.97208f;
    java.util.List<Float> xs = new java.util.ArrayList<>();
    for (float x = -110f; x < lo; x = Math.nextUp(x)) xs.add(x);
    xs.add(Float.NEGATIVE_INFINITY);
    xs.add(-1e30f);
    xs.add(Math.nextDown(-110f));
    int n = xs.size() * 2;
    float[] in = new float[n + 16];
    float[] got = new float[n + 16];
    for (int i = 0; i < xs.size(); i++) {
      in[2 * i] = xs.get(i);
      in[2 * i + 1] = 0.5f * (i % 7) - 1f; // ordinary values in the same vectors
    }
    VectorKernels.unary(UnaryOp.EXP, 0, in, 0, got, 0, n);
    for (int i = 0; i < xs.size(); i++) {
      assertEquals(0, Float.floatToRawIntBits(got[2 * i]), "exp(" + xs.get(i) + ") = " + got[2 * i]);
      float want = (float) Math.exp(in[2 * i + 1]);
      assertTrue(ulps(Math.exp(in[2 * i + 1]), got[2 * i + 1]) <= 1.5, "exp(" + in[2 * i + 1] + ") = " + got[2 * i + 1]
          + ", want " + want);
    }
  }

  /**
   * VMath's functions and the kernels built on them pass values between passes through scratch blocks of
   * 512 floats: over several blocks and a tail, every op gives the same bits written over its own input
   * as into a separate array (a pass must read each element before a later pass writes it).
   */
  @Test
  void vectorUnaryInPlaceMatchesOutOfPlaceAcrossBlocks() {
    Random r = new Random(11);
    int n = 3 * 512 + 37;
    for (UnaryOp op : UnaryOp.values()) {
      float[] x = random(r, n, -6, 6);
      if (op == UnaryOp.LOG || op == UnaryOp.SQRT || op == UnaryOp.RSQRT) for (int i = 0; i < n; i++) x[i] = Math.abs(x[i]);
      float[] out = new float[n];
      VectorKernels.unary(op, 1.5f, x, 0, out, 0, n);
      VectorKernels.unary(op, 1.5f, x, 0, x, 0, n);
      for (int i = 0; i < n; i++) {
        assertEquals(Float.floatToRawIntBits(out[i]), Float.floatToRawIntBits(x[i]), op + " in place at " + i);
      }
    }
  }

  /**
   * The vector kernels pass no vector across a method boundary (see VMath's class comment): a helper that
   * takes or returns a vector or mask is fast only where C2 inlines it, and where it does not, each vector is
   * boxed at the call and the Vector API runs its Java fallback: tanh and log ran 4-5x slower as such helpers.
   * Whether C2 inlines one depends on what the JVM ran before (issue #40): VectorRowKernels.convBlock handed its
   * accumulators to a store helper, and once another shape had C2 compile that helper alone into more than
   * InlineSmallCode (2500 bytes), every later compile of convBlock called it instead ("already compiled into a big
   * method"): LeNet-5 at batch 128 ran 5x slower after a batch-1 pass of the pruned model than in a fresh JVM.
   * So every class of the package is checked, read from the class path (a hand-kept list had missed that one),
   * lambdas included.
   */
  @Test
  void vectorKernelsPassNoVectorBetweenMethods() throws Exception {
    List<String> names = vectorPackageClasses();
    assertTrue(names.containsAll(List.of("VMath", "VectorKernels", "VectorRowKernels", "VectorGemm", "SkinnyGemm",
        "VectorInt8Kernels", "VectorUpdateKernels", "VectorHalfKernels")), "classes found: " + names);
    List<String> crossing = new ArrayList<>();
    for (String name : names) {
      Class<?> c = Class.forName(VECTOR_PACKAGE + "." + name);
      for (java.lang.reflect.Method m : c.getDeclaredMethods()) {
        for (Class<?> t : m.getParameterTypes()) {
          if (t.getName().startsWith("jdk.incubator.vector")) {
            crossing.add(name + "." + m.getName() + " takes a " + t.getSimpleName());
          }
        }
        if (m.getReturnType().getName().startsWith("jdk.incubator.vector")) {
          crossing.add(name + "." + m.getName() + " returns a " + m.getReturnType().getSimpleName());
        }
      }
    }
    assertEquals(List.of(), crossing);
  }

  private static final String VECTOR_PACKAGE = "dev.ember.backend.cpu.vector";

  /** The simple (binary) names of the classes in dev.ember.backend.cpu.vector, nested ones included. */
  private static List<String> vectorPackageClasses() throws Exception {
    Path root = Path.of(VectorKernels.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    String dir = VECTOR_PACKAGE.replace('.', '/') + "/";
    List<String> out = new ArrayList<>();
    if (Files.isDirectory(root)) {
      try (Stream<Path> files = Files.list(root.resolve(dir))) {
        files.map(f -> f.getFileName().toString()).filter(f -> f.endsWith(".class"))
            .forEach(f -> out.add(f.substring(0, f.length() - ".class".length())));
      }
    } else {
      try (JarFile jar = new JarFile(root.toFile())) {
        jar.stream().map(JarEntry::getName)
            .filter(e -> e.startsWith(dir) && e.endsWith(".class") && e.indexOf('/', dir.length()) < 0)
            .forEach(e -> out.add(e.substring(dir.length(), e.length() - ".class".length())));
      }
    }
    out.remove("package-info");
    return out;
  }

  @Test
  void reluKeepsNaNAndZeroesNegativeZero() {
    float[] x = new float[XO + 32];
    for (int i = 0; i < 32; i++) x[XO + i] = i % 4 == 0 ? Float.NaN : i % 4 == 1 ? -0f : i - 16;
    float[] s = new float[32], v = new float[32];
    ScalarKernels.unary(UnaryOp.RELU, 0, x, XO, s, 0, 32);
    VectorKernels.unary(UnaryOp.RELU, 0, x, XO, v, 0, 32);
    for (int i = 0; i < 32; i++) {
      float want = Math.max(x[XO + i], 0f);
      assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(s[i]), "scalar relu " + x[XO + i]);
      assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(v[i]), "vector relu " + x[XO + i]);
    }
  }

  @Test
  void reluBackwardVectorMatchesScalarAndTheCompositeBitwise() {
    Random r = new Random(11);
    float[] specials = {Float.NaN, -0f, 0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.MIN_VALUE,
        -Float.MIN_VALUE};
    for (int n : SIZES) {
      float[] x = random(r, n + XO, -2, 2);
      float[] g = random(r, n + 2, -3, 3);
      for (int i = 0; i < n; i += 3) x[XO + i] = specials[(i / 3) % specials.length];
      for (int i = 1; i < n; i += 5) g[2 + i] = specials[(i / 5) % specials.length];
      float[] s = new float[n + OO], v = new float[n + OO];
      ScalarKernels.unaryBackward(UnaryOp.RELU, g, 2, x, XO, s, OO, n);
      VectorKernels.unaryBackward(UnaryOp.RELU, g, 2, x, XO, v, OO, n);
      for (int i = 0; i < n; i++) {
        float want = g[2 + i] * (float) ScalarKernels.apply(BinaryOp.GT, x[XO + i], 0); // the composite g * (x > 0)
        String what = "n=" + n + " i=" + i + " g=" + g[2 + i] + " x=" + x[XO + i];
        assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(s[OO + i]), "scalar " + what);
        assertEquals(Float.floatToRawIntBits(want), Float.floatToRawIntBits(v[OO + i]), "vector " + what);
      }
    }
    double[] gd = {1.5, -2, Double.NaN, Double.POSITIVE_INFINITY, 4};
    double[] xd = {0.1, -1, 3, -0.0, Double.NaN};
    double[] od = new double[5];
    ScalarKernels.unaryBackward(UnaryOp.RELU, gd, 0, xd, 0, od, 0, 5);
    assertEquals(1.5, od[0]);
    assertEquals(Double.doubleToRawLongBits(-0.0), Double.doubleToRawLongBits(od[1]));
    assertTrue(Double.isNaN(od[2]) && Double.isNaN(od[3]));
    assertEquals(0.0, od[4]);
  }

  /**
   * tanh's and sigmoid's one-pass backward give the bits of their composites (NaN as NaN), {@code g * (1 - r*r)} as
   * g.mul(r.mul(r).neg().add(1)) and {@code g * (r * (1 - r))} as g.mul(r.mul(r.neg().add(1))), each step
   * rounded to float as the composite's ops round, on every tail size and on NaN, infinities and signed zeros.
   */
  private static int bitsOrNaN(float f) {
    return Float.isNaN(f) ? Float.floatToIntBits(Float.NaN) : Float.floatToRawIntBits(f);
  }

  @Test
  void tanhAndSigmoidBackwardMatchTheirCompositesBitwise() {
    Random r = new Random(12);
    float[] specials = {Float.NaN, -0f, 0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 1f, -1f};
    for (UnaryOp op : new UnaryOp[] {UnaryOp.TANH, UnaryOp.SIGMOID}) {
      for (int n : SIZES) {
        float[] ref = random(r, n + XO, op == UnaryOp.TANH ? -1 : 0, 1);
        float[] g = random(r, n + 2, -3, 3);
        for (int i = 0; i < n; i += 7) ref[XO + i] = specials[(i / 7) % specials.length];
        for (int i = 2; i < n; i += 5) g[2 + i] = specials[(i / 5) % specials.length];
        float[] s = new float[n + OO], v = new float[n + OO];
        ScalarKernels.unaryBackward(op, g, 2, ref, XO, s, OO, n);
        VectorKernels.unaryBackward(op, g, 2, ref, XO, v, OO, n);
        for (int i = 0; i < n; i++) {
          float y = ref[XO + i];
          float want = op == UnaryOp.TANH
              ? (float) ScalarKernels.apply(BinaryOp.MUL, g[2 + i], (float) ScalarKernels.apply(BinaryOp.ADD, -(y * y), 1))
              : (float) ScalarKernels.apply(BinaryOp.MUL, g[2 + i], (float) ScalarKernels.apply(BinaryOp.MUL, y, (float) ScalarKernels.apply(BinaryOp.ADD, -y, 1)));
          String what = op + " n=" + n + " i=" + i + " g=" + g[2 + i] + " ref=" + y;
          // NaN is compared as NaN: which operand's NaN a product passes on (and so its sign) is the
          // hardware's choice, and the JIT may swap the operands of a commutative op
          assertEquals(bitsOrNaN(want), bitsOrNaN(s[OO + i]), "scalar " + what);
          assertEquals(bitsOrNaN(want), bitsOrNaN(v[OO + i]), "vector " + what);
        }
      }
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> ScalarKernels.unaryBackward(UnaryOp.EXP, new float[1], 0, new float[1], 0, new float[1], 0, 1));
    assertEquals("unaryBackward: EXP has no one-pass backward (RELU, TANH or SIGMOID)", e.getMessage());
  }

  @Test
  void argExtremeRowsVectorMatchesScalarAndTheFirstExtreme() {
    Random r = new Random(13);
    float[] specials = {Float.NaN, -0f, 0f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY};
    for (int cols : SIZES) {
      if (cols == 0) continue;
      int rows = 12;
      float[] x = random(r, XO + rows * cols, -3, 3);
      for (int row = 0; row < rows; row++) {
        int b = XO + row * cols;
        switch (row % 6) {
          case 1 -> { for (int j = 0; j < cols; j++) x[b + j] = Math.round(x[b + j]); } // many ties
          case 2 -> x[b + r.nextInt(cols)] = Float.NaN;
          case 3 -> { for (int j = 0; j < cols; j++) x[b + j] = specials[r.nextInt(specials.length)]; }
          case 4 -> { for (int j = 0; j < cols; j++) x[b + j] = r.nextBoolean() ? -0f : 0f; }
          case 5 -> x[b + cols - 1] = 9; // the extreme in the tail
          default -> { }
        }
      }
      for (boolean max : new boolean[] {true, false}) {
        long[] s = new long[rows + OO], v = new long[rows + OO];
        ScalarKernels.argExtremeRows(max, x, XO, rows, cols, s, OO);
        VectorKernels.argExtremeRows(max, x, XO, rows, cols, v, OO);
        for (int row = 0; row < rows; row++) {
          int b = XO + row * cols;
          int want = 0; // the first NaN, else the first element no other beats
          while (want < cols && !Float.isNaN(x[b + want])) want++;
          if (want == cols) {
            want = 0;
            for (int j = 1; j < cols; j++) if (max ? x[b + j] > x[b + want] : x[b + j] < x[b + want]) want = j;
          }
          String what = (max ? "argmax" : "argmin") + " cols=" + cols + " row=" + row;
          assertEquals(want, s[OO + row], "scalar " + what);
          assertEquals(want, v[OO + row], "vector " + what);
        }
      }
    }
  }

  @Test
  void vectorBinaryMatchesScalar() {
    Random r = new Random(2);
    for (BinaryOp op : ARITH) {
      double lo = op == BinaryOp.POW ? 0.1 : -10, hi = 10;
      for (int n : SIZES) {
        float[] a = random(r, n + XO, lo, hi);
        float[] b = random(r, n + 7, op == BinaryOp.POW ? -3 : lo, op == BinaryOp.POW ? 3 : hi);
        if (op == BinaryOp.MAXIMUM || op == BinaryOp.MINIMUM) {
          for (int i = 0; i < n; i += 5) a[XO + i] = Float.NaN;
          for (int i = 2; i < n; i += 7) b[7 + i] = Float.NaN;
        }
        float s = (float) (1 + r.nextDouble());
        float[][] want = new float[3][n + OO], got = new float[3][n + OO];
        ScalarKernels.binary(op, a, XO, b, 7, want[0], OO, n);
        VectorKernels.binary(op, a, XO, b, 7, got[0], OO, n);
        ScalarKernels.binaryScalarRight(op, a, XO, s, want[1], OO, n);
        VectorKernels.binaryScalarRight(op, a, XO, s, got[1], OO, n);
        ScalarKernels.binaryScalarLeft(op, s, b, 7, want[2], OO, n);
        VectorKernels.binaryScalarLeft(op, s, b, 7, got[2], OO, n);
        for (int k = 0; k < 3; k++) {
          for (int i = 0; i < n; i++) {
            assertClose(op + " form " + k + " n=" + n + " i=" + i, want[k][OO + i], got[k][OO + i], 1e-5, 1e-6);
          }
        }
        for (int i = 0; i < n; i++) {
          double d = ScalarKernels.apply(op, a[XO + i], b[7 + i]);
          assertClose(op + " def", (float) d, want[0][OO + i], 0, 0);
        }
      }
    }
  }

  @Test
  void maximumPropagatesNaN() {
    float[] a = new float[40], b = new float[40], o = new float[40];
    a[3] = Float.NaN;
    b[20] = Float.NaN;
    VectorKernels.binary(BinaryOp.MAXIMUM, a, 0, b, 0, o, 0, 40);
    assertTrue(Float.isNaN(o[3]) && Float.isNaN(o[20]) && o[4] == 0f);
    VectorKernels.binary(BinaryOp.MINIMUM, a, 0, b, 0, o, 0, 40);
    assertTrue(Float.isNaN(o[3]) && Float.isNaN(o[20]) && o[4] == 0f);
  }

  @Test
  void inPlaceAliasing() {
    Random r = new Random(3);
    float[] x = random(r, 100, -5, 5);
    float[] want = new float[100];
    ScalarKernels.unary(UnaryOp.GELU, 0, x, 0, want, 0, 100);
    float[] y = x.clone();
    VectorKernels.unary(UnaryOp.GELU, 0, y, 0, y, 0, 100);
    for (int i = 0; i < 100; i++) assertClose("in-place gelu", want[i], y[i], 1e-5, 1e-6);
    float[] z = x.clone();
    VectorKernels.softmaxRows(z, 0, z, 0, 4, 25, false);
    ScalarKernels.softmaxRows(x, 0, want, 0, 4, 25, false);
    for (int i = 0; i < 100; i++) assertClose("in-place softmax", want[i], z[i], 1e-5, 1e-7);
  }

  @Test
  void axpbMatchesScalarBitwise() {
    Random r = new Random(4);
    for (int n : SIZES) {
      float[] x = random(r, n + XO, -10, 10);
      float[] want = new float[n + OO], got = new float[n + OO];
      ScalarKernels.axpb(1.37f, x, XO, -0.21f, want, OO, n);
      VectorKernels.axpb(1.37f, x, XO, -0.21f, got, OO, n);
      for (int i = 0; i < n; i++) {
        assertEquals(want[OO + i], got[OO + i], "n=" + n + " i=" + i);
        assertEquals((float) Math.fma(1.37, x[XO + i], -0.21), want[OO + i], 1e-5);
      }
    }
  }

  @Test
  void reductionsMatchScalar() {
    Random r = new Random(5);
    for (int n : SIZES) {
      float[] x = random(r, n + XO, -3, 7);
      double meanAbs = 0;
      double exact = 0;
      for (int i = 0; i < n; i++) {
        meanAbs += Math.abs(x[XO + i]);
        exact += x[XO + i];
      }
      meanAbs = n == 0 ? 0 : meanAbs / n;
      double tol = 1e-6 * n * meanAbs + 1e-7;
      assertEquals(exact, ScalarKernels.sum(x, XO, n), Math.ulp((float) exact) + 1e-7, "scalar sum n=" + n);
      assertEquals(ScalarKernels.sum(x, XO, n), VectorKernels.sum(x, XO, n), tol, "vector sum n=" + n);
      double[] xd = new double[n + XO];
      for (int i = 0; i < n + XO; i++) xd[i] = x[i];
      assertEquals(exact, ScalarKernels.sum(xd, XO, n), 1e-9 * (n + 1));
      if (n == 0) continue;
      float mx = Float.NEGATIVE_INFINITY, mn = Float.POSITIVE_INFINITY;
      for (int i = 0; i < n; i++) {
        mx = Math.max(mx, x[XO + i]);
        mn = Math.min(mn, x[XO + i]);
      }
      assertEquals(mx, ScalarKernels.max(x, XO, n));
      assertEquals(mx, VectorKernels.max(x, XO, n));
      assertEquals(mn, ScalarKernels.min(x, XO, n));
      assertEquals(mn, VectorKernels.min(x, XO, n));
    }
  }

  @Test
  void maxMinPropagateNaNAnywhere() {
    for (int n : new int[] {1, 7, 16, 17, 64, 65, 1000}) {
      for (int pos : new int[] {0, n / 2, n - 1}) {
        float[] x = random(new Random(n), n + XO, -1, 1);
        x[XO + pos] = Float.NaN;
        assertTrue(Float.isNaN(ScalarKernels.max(x, XO, n)), "scalar max n=" + n + " pos=" + pos);
        assertTrue(Float.isNaN(VectorKernels.max(x, XO, n)), "vector max n=" + n + " pos=" + pos);
        assertTrue(Float.isNaN(ScalarKernels.min(x, XO, n)), "scalar min n=" + n + " pos=" + pos);
        assertTrue(Float.isNaN(VectorKernels.min(x, XO, n)), "vector min n=" + n + " pos=" + pos);
      }
    }
  }

  @Test
  void softmaxMatchesScalarAndSumsToOne() {
    Random r = new Random(6);
    for (int cols : SIZES) {
      if (cols == 0) continue;
      int rows = 3;
      float[] x = random(r, rows * cols + XO, -20, 20);
      for (boolean log : new boolean[] {false, true}) {
        float[] want = new float[rows * cols + OO], got = new float[rows * cols + OO];
        ScalarKernels.softmaxRows(x, XO, want, OO, rows, cols, log);
        VectorKernels.softmaxRows(x, XO, got, OO, rows, cols, log);
        for (int i = 0; i < rows * cols; i++) {
          assertClose("softmax log=" + log + " cols=" + cols, want[OO + i], got[OO + i], 1e-5, log ? 1e-5 : 1e-7);
        }
        for (int row = 0; row < rows; row++) {
          double s = 0, sv = 0;
          for (int j = 0; j < cols; j++) {
            float w = want[OO + row * cols + j], g = got[OO + row * cols + j];
            s += log ? Math.exp(w) : w;
            sv += log ? Math.exp(g) : g;
          }
          assertEquals(1.0, s, 1e-5, "scalar row sum cols=" + cols);
          assertEquals(1.0, sv, 1e-5, "vector row sum cols=" + cols);
        }
      }
    }
    double[] xd = {1, 2, 3, 1000, 1001, 1002};
    double[] od = new double[6];
    ScalarKernels.softmaxRows(xd, 0, od, 0, 2, 3, false);
    for (int k = 0; k < 2; k++) assertEquals(0.6652409557748219, od[3 * k + 2], 1e-15);
    ScalarKernels.softmaxRows(xd, 0, od, 0, 2, 3, true);
    assertEquals(-2.4076059644443806, od[3], 1e-12);
  }

  /**
   * Rows shorter than any vector (1-7 classes) take a scalar loop; its bits must be the vector row
   * loop's with only its scalar tails run: max seeded with x[0], sums from +0, exp in double rounded
   * to float, {@code (x - m) - log(sum)}, and softmax scaled by {@code 1 / sum}; in place too.
   */
  @Test
  void shortSoftmaxRowsKeepTheRowLoopsBits() {
    Random r = new Random(11);
    for (int cols = 1; cols < 8; cols++) {
      int rows = 5;
      float[] x = random(r, rows * cols, -30, 30);
      for (boolean log : new boolean[] {false, true}) {
        float[] want = new float[rows * cols];
        for (int row = 0; row < rows; row++) {
          int b = row * cols;
          float m = x[b];
          for (int i = 0; i < cols; i++) m = Math.max(m, x[b + i]);
          float s = 0f;
          for (int i = 0; i < cols; i++) s += (float) Math.exp(x[b + i] - m);
          float ls = (float) Math.log(s), inv = 1f / s;
          for (int i = 0; i < cols; i++) {
            want[b + i] = log ? (x[b + i] - m) - ls : (float) Math.exp(x[b + i] - m) * inv;
          }
        }
        float[] got = new float[rows * cols];
        VectorKernels.softmaxRows(x, 0, got, 0, rows, cols, log);
        float[] inPlace = x.clone();
        VectorKernels.softmaxRows(inPlace, 0, inPlace, 0, rows, cols, log);
        for (int i = 0; i < rows * cols; i++) {
          assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(got[i]), "cols=" + cols + " log=" + log + " i=" + i);
          assertEquals(Float.floatToRawIntBits(want[i]), Float.floatToRawIntBits(inPlace[i]), "in place cols=" + cols + " i=" + i);
        }
      }
    }
  }

  @Test
  void logSoftmaxStableAtExtremes() {
    float[] x = new float[40];
    for (int i = 0; i < 20; i++) x[i] = i % 2 == 0 ? 1000f : -1000f;
    for (int i = 20; i < 40; i++) x[i] = i % 2 == 0 ? -1000f : -1001f;
    for (boolean vec : new boolean[] {false, true}) {
      float[] o = new float[40];
      if (vec) VectorKernels.softmaxRows(x, 0, o, 0, 2, 20, true);
      else ScalarKernels.softmaxRows(x, 0, o, 0, 2, 20, true);
      for (float v : o) assertFalse(Float.isNaN(v) || Float.isInfinite(v), "finite log_softmax, vec=" + vec);
      assertEquals(-Math.log(10), o[0], 1e-5);
      assertEquals(-2000 - Math.log(10), o[1], 1e-2);
      float[] p = new float[40];
      if (vec) VectorKernels.softmaxRows(x, 0, p, 0, 2, 20, false);
      else ScalarKernels.softmaxRows(x, 0, p, 0, 2, 20, false);
      assertEquals(0.1f, p[0], 1e-6);
      assertEquals(0f, p[1]);
      double lse = Math.log(10 + 10 * Math.exp(-1));
      assertEquals(-lse, o[20], 1e-5);
      assertEquals(-1 - lse, o[21], 1e-5);
    }
  }
}
