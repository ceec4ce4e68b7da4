package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;

/**
 * Plain-Java elementwise and reduction kernels on contiguous ranges. They define the semantics
 * ({@link #apply(UnaryOp, double, double)} and {@link #apply(BinaryOp, double, double)} are the
 * specification the vector kernels are tested against) and are the fallback when
 * {@code jdk.incubator.vector} is not present, so this class must never touch that module.
 *
 * <p>Float kernels compute transcendental ops in double and round once, which makes them the most
 * accurate reference we can cheaply have. {@code out} may alias an input exactly (same array and
 * offset): every kernel reads element i before writing element i and never reads it again.
 * Arguments are trusted; bounds are only checked with assertions.
 */
public final class ScalarKernels {
  private ScalarKernels() {}

  private static final double SQRT1_2 = 0.7071067811865476;
  private static final double SQRT_2_OVER_PI = 0.7978845608028654;

  // ---------------------------------------------------------------------------------------------
  // Definitions

  /** The value of {@code op} at {@code x}; {@code p} is the op's parameter (see {@link UnaryOp}). */
  public static double apply(UnaryOp op, double x, double p) {
    return switch (op) {
      case NEG -> -x;
      case ABS -> Math.abs(x);
      case SIGN -> Math.signum(x);
      case EXP -> Math.exp(x);
      case LOG -> Math.log(x);
      case LOG1P -> Math.log1p(x);
      case EXPM1 -> Math.expm1(x);
      case SQRT -> Math.sqrt(x);
      case RSQRT -> 1.0 / Math.sqrt(x);
      case SQUARE -> x * x;
      case RECIPROCAL -> 1.0 / x;
      case SIN -> Math.sin(x);
      case COS -> Math.cos(x);
      case TANH -> Math.tanh(x);
      case SIGMOID -> sigmoid(x);
      // written as a compare-and-select so the vector kernel can use the identical form:
      // it equals Math.max(x, 0) for every input (NaN stays NaN, -0 becomes +0)
      case RELU -> x <= 0 ? 0.0 : x;
      case LEAKY_RELU -> x > 0 ? x : p * x;
      case ELU -> x > 0 ? x : p * Math.expm1(x);
      case GELU -> gelu(x);
      case GELU_TANH -> geluTanh(x);
      case SILU -> x * sigmoid(x);
      case SOFTPLUS -> softplus(x, p);
      case POW_SCALAR -> pow(x, p);
      case FLOOR -> Math.floor(x);
      case CEIL -> Math.ceil(x);
      case ROUND -> Math.rint(x);
      case TRUNC -> x < 0 ? Math.ceil(x) : Math.floor(x);
    };
  }

  /** Arithmetic ops as defined by PyTorch; comparisons and logical ops return 1 or 0. */
  public static double apply(BinaryOp op, double a, double b) {
    return switch (op) {
      case ADD -> a + b;
      case SUB -> a - b;
      case MUL -> a * b;
      case DIV -> a / b;
      case POW -> pow(a, b);
      case MAXIMUM -> Math.max(a, b);
      case MINIMUM -> Math.min(a, b);
      case EQ -> a == b ? 1 : 0;
      case NE -> a != b ? 1 : 0;
      case LT -> a < b ? 1 : 0;
      case LE -> a <= b ? 1 : 0;
      case GT -> a > b ? 1 : 0;
      case GE -> a >= b ? 1 : 0;
      case LOGICAL_AND -> (a != 0) & (b != 0) ? 1 : 0;
      case LOGICAL_OR -> (a != 0) | (b != 0) ? 1 : 0;
      case LOGICAL_XOR -> (a != 0) ^ (b != 0) ? 1 : 0;
    };
  }

  /**
   * Whether {@link #applyInteger(UnaryOp, long)} defines {@code op}: the ops that take an integer to an integer
   * (the others, exp, sqrt, ..., compute integers in a float dtype).
   */
  public static boolean definedOnIntegers(UnaryOp op) {
    return switch (op) {
      case NEG, ABS, SIGN, SQUARE, RELU, FLOOR, CEIL, ROUND, TRUNC -> true;
      default -> false;
    };
  }

  /**
   * The value of an integer op at {@code x} in 64-bit two's complement arithmetic, which wraps as PyTorch's
   * integer kernels do: neg and abs of the most negative value give it back, a square past the range wraps. A
   * narrower dtype stores the low bits of the result ({@code Storage.setLong}), the same wrap in its width. Going
   * through double instead rounded int64 values above 2^53 and saturated at the range's ends.
   */
  public static long applyInteger(UnaryOp op, long x) {
    return switch (op) {
      case NEG -> -x;
      case ABS -> x < 0 ? -x : x;
      case SIGN -> Long.signum(x);
      case SQUARE -> x * x;
      case RELU -> x <= 0 ? 0 : x;
      case FLOOR, CEIL, ROUND, TRUNC -> x; // an integer is its own rounding
      default -> throw new IllegalArgumentException("applyInteger: " + op + " is not defined on integers");
    };
  }

  /**
   * {@link #apply(BinaryOp, double, double)} on integers, in 64 bits (exact beyond 2^53, unlike going through
   * double) and wrapping as PyTorch's integer kernels: comparisons and logical ops give 1 or 0; DIV truncates as
   * C's, with 0 for a zero divisor (true division takes floats: integers never reach it from the op layer); POW
   * is {@link #powInteger}.
   */
  public static long applyInteger(BinaryOp op, long a, long b) {
    return switch (op) {
      case ADD -> a + b;
      case SUB -> a - b;
      case MUL -> a * b;
      case DIV -> b == 0 ? 0 : a / b;
      case POW -> powInteger(a, b);
      case MAXIMUM -> Math.max(a, b);
      case MINIMUM -> Math.min(a, b);
      case EQ -> a == b ? 1 : 0;
      case NE -> a != b ? 1 : 0;
      case LT -> a < b ? 1 : 0;
      case LE -> a <= b ? 1 : 0;
      case GT -> a > b ? 1 : 0;
      case GE -> a >= b ? 1 : 0;
      case LOGICAL_AND -> (a != 0) & (b != 0) ? 1 : 0;
      case LOGICAL_OR -> (a != 0) | (b != 0) ? 1 : 0;
      case LOGICAL_XOR -> (a != 0) ^ (b != 0) ? 1 : 0;
    };
  }

  /**
   * a^b by repeated squaring, each product wrapping in 64 bits: PyTorch's {@code powi} (ATen's Pow.h), so
   * 3^39 is 4052555153018976267 exactly and 3^41 wraps to a negative number, as there. A negative exponent
   * gives 1 for a base of 1, +-1 for -1 (by the exponent's parity) and 0 otherwise, as there.
   */
  public static long powInteger(long a, long b) {
    if (b < 0) return a == 1 ? 1 : a == -1 ? ((b & 1) == 0 ? 1 : -1) : 0;
    long result = 1;
    while (b != 0) {
      if ((b & 1) != 0) result *= a;
      b >>= 1;
      a *= a;
    }
    return result;
  }

  /**
   * out[oo + j so] = 1 where a[ao + j sa] op b[bo + j sb] holds, else 0, for j &lt; n and a comparison op: what
   * {@link #apply} gives, on float arrays and into a BOOL array without a per-element dtype dispatch.
   */
  public static void compare(BinaryOp op, float[] a, int ao, int sa, float[] b, int bo, int sb, byte[] out, int oo,
      int so, int n) {
    switch (op) {
      case EQ -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] == b[bo + j * sb] ? (byte) 1 : 0; }
      case NE -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] != b[bo + j * sb] ? (byte) 1 : 0; }
      case LT -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] < b[bo + j * sb] ? (byte) 1 : 0; }
      case LE -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] <= b[bo + j * sb] ? (byte) 1 : 0; }
      case GT -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] > b[bo + j * sb] ? (byte) 1 : 0; }
      case GE -> { for (int j = 0; j < n; j++) out[oo + j * so] = a[ao + j * sa] >= b[bo + j * sb] ? (byte) 1 : 0; }
      default -> throw new IllegalArgumentException("compare: " + op + " is not a comparison");
    }
  }

  /** out[oo + j so] = c[co + j sc] != 0 ? a[ao + j sa] : b[bo + j sb] for j &lt; n (a stride of 0 is one value). */
  public static void where(byte[] c, int co, int sc, float[] a, int ao, int sa, float[] b, int bo, int sb, float[] out,
      int oo, int so, int n) {
    for (int j = 0; j < n; j++) out[oo + j * so] = c[co + j * sc] != 0 ? a[ao + j * sa] : b[bo + j * sb];
  }

  /** See {@link FloatKernels#addTransposed}: 16 x 16 tiles, so that b's columns are read 16 at a time. */
  public static void addTransposed(float[] a, int ao, float[] b, int bo, int ldb, float[] out, int oo, int rows,
      int cols) {
    for (int r0 = 0; r0 < rows; r0 += 16) {
      int r1 = Math.min(rows, r0 + 16);
      for (int c0 = 0; c0 < cols; c0 += 16) {
        int c1 = Math.min(cols, c0 + 16);
        for (int r = r0; r < r1; r++) {
          for (int c = c0; c < c1; c++) out[oo + r * cols + c] = a[ao + r * cols + c] + b[bo + c * ldb + r];
        }
      }
    }
  }

  /** The logical ops ({@link #apply}'s) on BOOL arrays, strided as {@link #compare}. */
  public static void logical(BinaryOp op, byte[] a, int ao, int sa, byte[] b, int bo, int sb, byte[] out, int oo,
      int so, int n) {
    switch (op) {
      case LOGICAL_AND -> { for (int j = 0; j < n; j++) out[oo + j * so] = (byte) ((a[ao + j * sa] != 0) & (b[bo + j * sb] != 0) ? 1 : 0); }
      case LOGICAL_OR -> { for (int j = 0; j < n; j++) out[oo + j * so] = (byte) ((a[ao + j * sa] != 0) | (b[bo + j * sb] != 0) ? 1 : 0); }
      case LOGICAL_XOR -> { for (int j = 0; j < n; j++) out[oo + j * so] = (byte) ((a[ao + j * sa] != 0) ^ (b[bo + j * sb] != 0) ? 1 : 0); }
      default -> throw new IllegalArgumentException("logical: " + op + " is not a logical op");
    }
  }

  /**
   * C99's pow, which PyTorch's kernels call: Math.pow but for the two cases where the standards differ, 1^y = 1 for
   * every y (NaN and +-inf included) and (-1)^+-inf = 1, where Math.pow gives NaN. Every other value is Math.pow's.
   */
  public static double pow(double x, double y) {
    if (x == 1 || x == -1 && Double.isInfinite(y)) return 1;
    return Math.pow(x, y);
  }

  /** Two branches so that exp never overflows: 1/(1+inf) would be fine, but inf/inf is not. */
  static double sigmoid(double x) {
    if (x >= 0) return 1.0 / (1.0 + Math.exp(-x));
    double e = Math.exp(x);
    return e / (1.0 + e);
  }

  /**
   * 0.5 x (1 + erf(x/sqrt2)) rewritten as 0.5 x erfc(-x/sqrt2): for negative x the 1 + erf form
   * cancels to nothing, erfc keeps full relative precision all the way down.
   */
  static double gelu(double x) {
    return 0.5 * x * erfc(-x * SQRT1_2);
  }

  /** 0.5 (1 + tanh(u)) is exactly sigmoid(2u); the sigmoid form does not cancel for x << 0. */
  static double geluTanh(double x) {
    double u = SQRT_2_OVER_PI * (x + 0.044715 * x * x * x);
    return x * sigmoid(2 * u);
  }

  /** PyTorch's threshold (20) keeps exp from overflowing and is exact to double precision there. */
  static double softplus(double x, double beta) {
    double bx = beta * x;
    return bx > 20 ? x : Math.log1p(Math.exp(bx)) / beta;
  }

  // erfc from FreeBSD msun s_erf.c (Sun, 1993): rational fits with < 1 ulp error.
  private static final double ERX = 8.45062911510467529297e-01;
  private static final double PP0 = 1.28379167095512558561e-01, PP1 = -3.25042107247001499370e-01,
      PP2 = -2.84817495755985104766e-02, PP3 = -5.77027029648944159157e-03,
      PP4 = -2.37630166566501626084e-05;
  private static final double QQ1 = 3.97917223959155352819e-01, QQ2 = 6.50222499887672944485e-02,
      QQ3 = 5.08130628187576562776e-03, QQ4 = 1.32494738004321644526e-04,
      QQ5 = -3.96022827877536812320e-06;
  private static final double PA0 = -2.36211856075265944077e-03, PA1 = 4.14856118683748331666e-01,
      PA2 = -3.72207876035701323847e-01, PA3 = 3.18346619901161753674e-01,
      PA4 = -1.10894694282396677476e-01, PA5 = 3.54783043256182359371e-02,
      PA6 = -2.16637559486879084300e-03;
  private static final double QA1 = 1.06420880400844228286e-01, QA2 = 5.40397917702171048937e-01,
      QA3 = 7.18286544141962662868e-02, QA4 = 1.26171219808761642112e-01,
      QA5 = 1.36370839120290507362e-02, QA6 = 1.19844998467991074170e-02;
  private static final double RA0 = -9.86494403484714822705e-03, RA1 = -6.93858572707181764372e-01,
      RA2 = -1.05586262253232909814e+01, RA3 = -6.23753324503260060396e+01,
      RA4 = -1.62396669462573470355e+02, RA5 = -1.84605092906711035994e+02,
      RA6 = -8.12874355063065934246e+01, RA7 = -9.81432934416914548592e+00;
  private static final double SA1 = 1.96512716674392571292e+01, SA2 = 1.37657754143519042600e+02,
      SA3 = 4.34565877475229228821e+02, SA4 = 6.45387271733267880336e+02,
      SA5 = 4.29008140027567833386e+02, SA6 = 1.08635005541779435134e+02,
      SA7 = 6.57024977031928170135e+00, SA8 = -6.04244152148580987438e-02;
  private static final double RB0 = -9.86494292470009928597e-03, RB1 = -7.99283237680523006574e-01,
      RB2 = -1.77579549177547519889e+01, RB3 = -1.60636384855821916062e+02,
      RB4 = -6.37566443368389627722e+02, RB5 = -1.02509513161107724954e+03,
      RB6 = -4.83519191608651397019e+02;
  private static final double SB1 = 3.03380607434824582924e+01, SB2 = 3.25792512996573918826e+02,
      SB3 = 1.53672958608443695994e+03, SB4 = 3.19985821950859553908e+03,
      SB5 = 2.55305040643316442583e+03, SB6 = 4.74528541206955367215e+02,
      SB7 = -2.24409524465858183362e+01;

  /** Complementary error function, accurate to about 1 ulp (relative) over the whole line. */
  public static double erfc(double x) {
    if (Double.isNaN(x)) return x;
    double ax = Math.abs(x);
    boolean neg = x < 0;
    if (ax < 0.84375) {
      if (ax < 0x1p-56) return 1 - x;
      double z = x * x;
      double r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
      double s = 1 + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
      double y = r / s;
      if (x < 0.25) return 1 - (x + x * y);
      return 0.5 - (x - 0.5 + x * y);
    }
    if (ax < 1.25) {
      double s = ax - 1;
      double pq = (PA0 + s * (PA1 + s * (PA2 + s * (PA3 + s * (PA4 + s * (PA5 + s * PA6))))))
          / (1 + s * (QA1 + s * (QA2 + s * (QA3 + s * (QA4 + s * (QA5 + s * QA6))))));
      return neg ? 1 + (ERX + pq) : 1 - ERX - pq;
    }
    if (ax >= 28) return neg ? 2 : 0;
    if (neg && ax >= 6) return 2;
    double s = 1 / (ax * ax);
    double r;
    if (ax < 1 / 0.35) {
      r = (RA0 + s * (RA1 + s * (RA2 + s * (RA3 + s * (RA4 + s * (RA5 + s * (RA6 + s * RA7)))))))
          / (1 + s * (SA1 + s * (SA2 + s * (SA3 + s * (SA4 + s * (SA5 + s * (SA6 + s * (SA7
          + s * SA8))))))));
    } else {
      r = (RB0 + s * (RB1 + s * (RB2 + s * (RB3 + s * (RB4 + s * (RB5 + s * RB6))))))
          / (1 + s * (SB1 + s * (SB2 + s * (SB3 + s * (SB4 + s * (SB5 + s * (SB6 + s * SB7)))))));
    }
    // z has a short mantissa so z*z is exact; the exp is split to keep -x*x from rounding
    double z = Double.longBitsToDouble(Double.doubleToRawLongBits(ax) & 0xffffffff00000000L);
    double e = Math.exp(-z * z - 0.5625) * Math.exp((z - ax) * (z + ax) + r) / ax;
    return neg ? 2 - e : e;
  }

  /** Error function; near 0 it uses its own fit because 1 - erfc(x) would cancel there. */
  public static double erf(double x) {
    if (Math.abs(x) < 0.84375) return erfSmall(x);
    return x < 0 ? erfc(-x) - 1 : 1 - erfc(x);
  }

  private static double erfSmall(double x) {
    if (Math.abs(x) < 0x1p-28) return x + 1.28379167095512586316e-01 * x;
    double z = x * x;
    double r = PP0 + z * (PP1 + z * (PP2 + z * (PP3 + z * PP4)));
    double s = 1 + z * (QQ1 + z * (QQ2 + z * (QQ3 + z * (QQ4 + z * QQ5))));
    return x + x * (r / s);
  }

  // ---------------------------------------------------------------------------------------------
  // Elementwise

  /** Cheap ops get their own loops (so C2 can vectorize them); costly ones pay one switch per element. */
  public static void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n) {
    assert n >= 0 && xo >= 0 && oo >= 0 && xo + n <= x.length && oo + n <= out.length;
    switch (op) {
      case NEG -> { for (int i = 0; i < n; i++) out[oo + i] = -x[xo + i]; }
      case ABS -> { for (int i = 0; i < n; i++) out[oo + i] = Math.abs(x[xo + i]); }
      case SQUARE -> { for (int i = 0; i < n; i++) { float v = x[xo + i]; out[oo + i] = v * v; } }
      case SQRT -> { for (int i = 0; i < n; i++) out[oo + i] = (float) Math.sqrt(x[xo + i]); }
      case RECIPROCAL -> { for (int i = 0; i < n; i++) out[oo + i] = 1f / x[xo + i]; }
      // Math.max(v, 0) is the same function as the definition, and C2 vectorizes it (no branch)
      case RELU -> { for (int i = 0; i < n; i++) out[oo + i] = Math.max(x[xo + i], 0f); }
      case LEAKY_RELU -> { for (int i = 0; i < n; i++) { float v = x[xo + i]; out[oo + i] = v > 0 ? v : p * v; } }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, x[xo + i], p); }
    }
  }

  public static void unary(UnaryOp op, double p, double[] x, int xo, double[] out, int oo, int n) {
    assert n >= 0 && xo >= 0 && oo >= 0 && xo + n <= x.length && oo + n <= out.length;
    switch (op) {
      case NEG -> { for (int i = 0; i < n; i++) out[oo + i] = -x[xo + i]; }
      case ABS -> { for (int i = 0; i < n; i++) out[oo + i] = Math.abs(x[xo + i]); }
      case SQUARE -> { for (int i = 0; i < n; i++) { double v = x[xo + i]; out[oo + i] = v * v; } }
      case SQRT -> { for (int i = 0; i < n; i++) out[oo + i] = Math.sqrt(x[xo + i]); }
      case RECIPROCAL -> { for (int i = 0; i < n; i++) out[oo + i] = 1.0 / x[xo + i]; }
      case RELU -> { for (int i = 0; i < n; i++) out[oo + i] = Math.max(x[xo + i], 0.0); }
      case LEAKY_RELU -> { for (int i = 0; i < n; i++) { double v = x[xo + i]; out[oo + i] = v > 0 ? v : p * v; } }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = apply(op, x[xo + i], p); }
    }
  }

  /**
   * The backward of RELU (ref = x), TANH or SIGMOID (ref = the op's output) in one pass, each operation the
   * composite's in its order, so the bits are the composite's (NaN for NaN, its sign being the hardware's
   * choice of operand): RELU
   * {@code g * (x > 0 ? 1 : 0)} (the product, not a select, keeps NaN for an infinite or NaN g where x &lt;= 0
   * and -0 for a negative g there), TANH {@code g * (-(r*r) + 1)}, SIGMOID {@code g * (r * (-r + 1))}.
   */
  public static void unaryBackward(UnaryOp op, float[] g, int go, float[] ref, int ro, float[] out, int oo, int n) {
    assert n >= 0 && go + n <= g.length && ro + n <= ref.length && oo + n <= out.length;
    requireFusedBackward(op);
    for (int i = 0; i < n; i++) out[oo + i] = unaryBackward(op, g[go + i], ref[ro + i]);
  }

  /** The double version of {@link #unaryBackward(UnaryOp, float[], int, float[], int, float[], int, int)}. */
  public static void unaryBackward(UnaryOp op, double[] g, int go, double[] ref, int ro, double[] out, int oo,
      int n) {
    assert n >= 0 && go + n <= g.length && ro + n <= ref.length && oo + n <= out.length;
    requireFusedBackward(op);
    for (int i = 0; i < n; i++) out[oo + i] = unaryBackward(op, g[go + i], ref[ro + i]);
  }

  /** One element of {@link #unaryBackward}, in float (the loop above, and strided callers). */
  public static float unaryBackward(UnaryOp op, float g, float r) {
    return switch (op) {
      case RELU -> g * (r > 0 ? 1f : 0f);
      case TANH -> g * (-(r * r) + 1f);
      case SIGMOID -> g * (r * (-r + 1f));
      default -> throw noFusedBackward(op);
    };
  }

  /** One element of {@link #unaryBackward}, in double (the loop above, strided and mixed-dtype callers). */
  public static double unaryBackward(UnaryOp op, double g, double r) {
    return switch (op) {
      case RELU -> g * (r > 0 ? 1.0 : 0.0);
      case TANH -> g * (-(r * r) + 1.0);
      case SIGMOID -> g * (r * (-r + 1.0));
      default -> throw noFusedBackward(op);
    };
  }

  /** Throws {@link #noFusedBackward} unless op is RELU, TANH or SIGMOID, so an empty call fails as a full one. */
  public static void requireFusedBackward(UnaryOp op) {
    if (op != UnaryOp.RELU && op != UnaryOp.TANH && op != UnaryOp.SIGMOID) throw noFusedBackward(op);
  }

  public static IllegalArgumentException noFusedBackward(UnaryOp op) {
    return new IllegalArgumentException("unaryBackward: " + op + " has no one-pass backward (RELU, TANH or SIGMOID)");
  }

  public static void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    assert n >= 0 && ao + n <= a.length && bo + n <= b.length && oo + n <= out.length;
    switch (op) {
      case ADD -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] + b[bo + i]; }
      case SUB -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] - b[bo + i]; }
      case MUL -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] * b[bo + i]; }
      case DIV -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] / b[bo + i]; }
      case MAXIMUM -> { for (int i = 0; i < n; i++) out[oo + i] = Math.max(a[ao + i], b[bo + i]); }
      case MINIMUM -> { for (int i = 0; i < n; i++) out[oo + i] = Math.min(a[ao + i], b[bo + i]); }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, a[ao + i], b[bo + i]); }
    }
  }

  public static void binary(BinaryOp op, double[] a, int ao, double[] b, int bo, double[] out, int oo, int n) {
    assert n >= 0 && ao + n <= a.length && bo + n <= b.length && oo + n <= out.length;
    switch (op) {
      case ADD -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] + b[bo + i]; }
      case SUB -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] - b[bo + i]; }
      case MUL -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] * b[bo + i]; }
      case DIV -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] / b[bo + i]; }
      case MAXIMUM -> { for (int i = 0; i < n; i++) out[oo + i] = Math.max(a[ao + i], b[bo + i]); }
      case MINIMUM -> { for (int i = 0; i < n; i++) out[oo + i] = Math.min(a[ao + i], b[bo + i]); }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = apply(op, a[ao + i], b[bo + i]); }
    }
  }

  /** {@code out = a op s}. */
  public static void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n) {
    assert n >= 0 && ao + n <= a.length && oo + n <= out.length;
    switch (op) {
      case ADD -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] + s; }
      case SUB -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] - s; }
      case MUL -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] * s; }
      case DIV -> { for (int i = 0; i < n; i++) out[oo + i] = a[ao + i] / s; }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, a[ao + i], s); }
    }
  }

  /** {@code out = s op b}. */
  public static void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n) {
    assert n >= 0 && bo + n <= b.length && oo + n <= out.length;
    switch (op) {
      case ADD -> { for (int i = 0; i < n; i++) out[oo + i] = s + b[bo + i]; }
      case SUB -> { for (int i = 0; i < n; i++) out[oo + i] = s - b[bo + i]; }
      case MUL -> { for (int i = 0; i < n; i++) out[oo + i] = s * b[bo + i]; }
      case DIV -> { for (int i = 0; i < n; i++) out[oo + i] = s / b[bo + i]; }
      default -> { for (int i = 0; i < n; i++) out[oo + i] = (float) apply(op, s, b[bo + i]); }
    }
  }

  /** {@code out = alpha*x + beta} with one rounding (fma), so vector and scalar results agree bitwise. */
  public static void axpb(float alpha, float[] x, int xo, float beta, float[] out, int oo, int n) {
    assert n >= 0 && xo + n <= x.length && oo + n <= out.length;
    for (int i = 0; i < n; i++) out[oo + i] = Math.fma(alpha, x[xo + i], beta);
  }

  // ---------------------------------------------------------------------------------------------
  // Reductions

  /**
   * Accumulates in double, in four interleaved partial sums (independent chains hide the add
   * latency); the order is fixed so the result is deterministic, and the double accumulator makes
   * it the accurate reference the float-accumulating vector sum is checked against.
   */
  public static float sum(float[] x, int xo, int n) {
    assert n >= 0 && xo + n <= x.length;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += x[xo + i];
      s1 += x[xo + i + 1];
      s2 += x[xo + i + 2];
      s3 += x[xo + i + 3];
    }
    for (; i < n; i++) s0 += x[xo + i];
    return (float) ((s0 + s1) + (s2 + s3));
  }

  /** Four interleaved double partial sums, combined pairwise at the end; fixed order. */
  public static double sum(double[] x, int xo, int n) {
    assert n >= 0 && xo + n <= x.length;
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
      s0 += x[xo + i];
      s1 += x[xo + i + 1];
      s2 += x[xo + i + 2];
      s3 += x[xo + i + 3];
    }
    for (; i < n; i++) s0 += x[xo + i];
    return (s0 + s1) + (s2 + s3);
  }

  /** Largest element; any NaN makes the result NaN (Math.max semantics). */
  public static float max(float[] x, int xo, int n) {
    assert n >= 1 && xo + n <= x.length;
    float m = x[xo];
    for (int i = 1; i < n; i++) m = Math.max(m, x[xo + i]);
    return m;
  }

  /** Smallest element; any NaN makes the result NaN (Math.min semantics). */
  public static float min(float[] x, int xo, int n) {
    assert n >= 1 && xo + n <= x.length;
    float m = x[xo];
    for (int i = 1; i < n; i++) m = Math.min(m, x[xo + i]);
    return m;
  }

  private static double max(double[] x, int xo, int n) {
    double m = x[xo];
    for (int i = 1; i < n; i++) m = Math.max(m, x[xo + i]);
    return m;
  }

  /**
   * Index of the first largest (max) or smallest element of each of {@code rows} contiguous rows, or of
   * the row's first NaN: NaN wins, as it does in PyTorch's argmax, and ties go to the lower index.
   */
  public static void argExtremeRows(boolean max, float[] x, int xo, int rows, int cols, long[] out, int oo) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + rows <= out.length;
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols;
      int best = 0;
      float bv = x[xb];
      for (int j = 1; j < cols && !Float.isNaN(bv); j++) {
        float v = x[xb + j];
        if (Float.isNaN(v) || (max ? v > bv : v < bv)) {
          best = j;
          bv = v;
        }
      }
      out[oo + r] = best;
    }
  }

  /** {@link #argExtremeRows(boolean, float[], int, int, int, long[], int)} on doubles. */
  public static void argExtremeRows(boolean max, double[] x, int xo, int rows, int cols, long[] out, int oo) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + rows <= out.length;
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols;
      int best = 0;
      double bv = x[xb];
      for (int j = 1; j < cols && !Double.isNaN(bv); j++) {
        double v = x[xb + j];
        if (Double.isNaN(v) || (max ? v > bv : v < bv)) {
          best = j;
          bv = v;
        }
      }
      out[oo + r] = best;
    }
  }

  /**
   * Row-wise softmax (or log_softmax) of a row-major [rows, cols] block. The row max is subtracted
   * first so exp never overflows; log_softmax is x - max - log(sum exp(x - max)), which stays finite
   * where log(softmax) would give log(0). The exp sum is accumulated in double.
   */
  public static void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + (long) rows * cols <= out.length;
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols, ob = oo + r * cols;
      float m = max(x, xb, cols);
      double s = 0;
      if (log) {
        for (int j = 0; j < cols; j++) s += Math.exp(x[xb + j] - m);
        double ls = Math.log(s);
        for (int j = 0; j < cols; j++) out[ob + j] = (float) ((x[xb + j] - m) - ls);
      } else {
        for (int j = 0; j < cols; j++) {
          double e = Math.exp(x[xb + j] - m);
          s += e;
          out[ob + j] = (float) e;
        }
        double inv = 1.0 / s;
        for (int j = 0; j < cols; j++) out[ob + j] = (float) (out[ob + j] * inv);
      }
    }
  }

  public static void softmaxRows(double[] x, int xo, double[] out, int oo, int rows, int cols, boolean log) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + (long) rows * cols <= out.length;
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols, ob = oo + r * cols;
      double m = max(x, xb, cols);
      double s = 0;
      if (log) {
        for (int j = 0; j < cols; j++) s += Math.exp(x[xb + j] - m);
        double ls = Math.log(s);
        for (int j = 0; j < cols; j++) out[ob + j] = (x[xb + j] - m) - ls;
      } else {
        for (int j = 0; j < cols; j++) {
          double e = Math.exp(x[xb + j] - m);
          s += e;
          out[ob + j] = e;
        }
        double inv = 1.0 / s;
        for (int j = 0; j < cols; j++) out[ob + j] *= inv;
      }
    }
  }
}
