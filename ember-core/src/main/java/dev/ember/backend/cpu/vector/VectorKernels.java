package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.FloatVector.fromArray;
import static jdk.incubator.vector.VectorOperators.ABS;
import static jdk.incubator.vector.VectorOperators.AND;
import static jdk.incubator.vector.VectorOperators.EQ;
import static jdk.incubator.vector.VectorOperators.GE;
import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.LE;
import static jdk.incubator.vector.VectorOperators.LT;
import static jdk.incubator.vector.VectorOperators.MAX;
import static jdk.incubator.vector.VectorOperators.MIN;
import static jdk.incubator.vector.VectorOperators.NE;
import static jdk.incubator.vector.VectorOperators.NEG;
import static jdk.incubator.vector.VectorOperators.OR;
import static jdk.incubator.vector.VectorOperators.SQRT;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.cpu.ScalarKernels;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Float kernels on the Vector API, same contracts as {@link ScalarKernels} (which they fall back to
 * for the tail after {@code loopBound} and are tested against). exp, log, expm1, log1p and tanh
 * come from {@link VMath}, fixed polynomials built from exact lane operations, never from the
 * Vector API's transcendental operators: those give different bits before and after C2 compiles
 * the loop, which would make results depend on JIT state. sin, cos and pow are left to the scalar
 * kernel (Math.*, which HotSpot keeps identical in the interpreter and compiled code).
 *
 * <p>Structure: the public methods switch on the op once, outside any loop, and call one small
 * method per op. Each returns how many elements it did; the scalar kernel finishes the rest. A
 * VectorOperators constant must be visible as a constant to C2 for it to intrinsify the lanewise
 * call, so loops are never shared across ops through an operator argument.
 *
 * <p>No jdk.incubator.vector type appears in a public signature, so callers compile without the
 * module; only loading this class needs it.
 */
public final class VectorKernels {
  private VectorKernels() {}

  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  /** Bytes with as many lanes as S: a BOOL tensor's elements, one per float lane. */
  private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(L * 8));

  // ---------------------------------------------------------------------------------------------
  // Unary

  public static void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n) {
    assert n >= 0 && xo >= 0 && oo >= 0 && xo + n <= x.length && oo + n <= out.length;
    int i = switch (op) {
      case NEG -> neg(x, xo, out, oo, n);
      case ABS -> abs(x, xo, out, oo, n);
      case SIGN -> sign(x, xo, out, oo, n);
      case EXP -> exp(x, xo, out, oo, n);
      case LOG -> log(x, xo, out, oo, n);
      case LOG1P -> log1p(x, xo, out, oo, n);
      case EXPM1 -> expm1(x, xo, out, oo, n);
      case SQRT -> sqrt(x, xo, out, oo, n);
      case RSQRT -> rsqrt(x, xo, out, oo, n);
      case SQUARE -> square(x, xo, out, oo, n);
      case RECIPROCAL -> reciprocal(x, xo, out, oo, n);
      case SIN -> 0; // Math.sin in the scalar kernel: see the class comment
      case COS -> 0; // Math.cos in the scalar kernel: see the class comment
      case TANH -> tanh(x, xo, out, oo, n);
      case SIGMOID -> sigmoid(x, xo, out, oo, n);
      case RELU -> relu(x, xo, out, oo, n);
      case LEAKY_RELU -> leakyRelu(p, x, xo, out, oo, n);
      case ELU -> elu(p, x, xo, out, oo, n);
      case GELU -> gelu(x, xo, out, oo, n);
      case GELU_TANH -> geluTanh(x, xo, out, oo, n);
      case SILU -> silu(x, xo, out, oo, n);
      case SOFTPLUS -> softplus(p, x, xo, out, oo, n);
      // x*x is bitwise what pow(x, 2) rounds to, and far cheaper than the pow intrinsic; pow(x, 1) is x and
      // pow(x, 0) is 1 for every x, NaN included (Math.pow's spec), as a square's backward asks for them
      case POW_SCALAR -> p == 2f ? square(x, xo, out, oo, n) : p == 1f ? copy(x, xo, out, oo, n) : p == 0f ? ones(out, oo, n) : 0;
      case FLOOR -> rounded(x, xo, out, oo, n, FLOOR);
      case CEIL -> rounded(x, xo, out, oo, n, CEIL);
      case ROUND -> rounded(x, xo, out, oo, n, ROUND);
      case TRUNC -> rounded(x, xo, out, oo, n, TRUNC);
    };
    ScalarKernels.unary(op, p, x, xo + i, out, oo + i, n - i);
  }

  private static int copy(float[] x, int xo, float[] out, int oo, int n) {
    System.arraycopy(x, xo, out, oo, n);
    return n;
  }

  private static int ones(float[] out, int oo, int n) {
    java.util.Arrays.fill(out, oo, oo + n, 1f);
    return n;
  }

  private static int neg(float[] x, int xo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, x, xo + i).lanewise(NEG).intoArray(out, oo + i);
    }
    return i;
  }

  private static int abs(float[] x, int xo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, x, xo + i).lanewise(ABS).intoArray(out, oo + i);
    }
    return i;
  }

  /** Two selects keep zeros (with their sign) and NaN as they are, like Math.signum. */
  private static int sign(float[] x, int xo, float[] out, int oo, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f), minusOne = FloatVector.broadcast(S, -1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, x, xo + i);
      v.blend(one, v.compare(GT, 0f)).blend(minusOne, v.compare(LT, 0f)).intoArray(out, oo + i);
    }
    return i;
  }

  private static int exp(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.exp(x, xo, out, oo, m);
    return m;
  }

  private static int log(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.log(x, xo, out, oo, m);
    return m;
  }

  private static int log1p(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.log1p(x, xo, out, oo, m);
    return m;
  }

  private static int expm1(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.expm1(x, xo, out, oo, m);
    return m;
  }

  private static int sqrt(float[] x, int xo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, x, xo + i).lanewise(SQRT).intoArray(out, oo + i);
    }
    return i;
  }

  /** A true divide, not the 12-bit rsqrt estimate: we want float accuracy, not an approximation. */
  private static int rsqrt(float[] x, int xo, float[] out, int oo, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      one.div(fromArray(S, x, xo + i).lanewise(SQRT)).intoArray(out, oo + i);
    }
    return i;
  }

  private static int square(float[] x, int xo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, x, xo + i);
      v.mul(v).intoArray(out, oo + i);
    }
    return i;
  }

  private static int reciprocal(float[] x, int xo, float[] out, int oo, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) one.div(fromArray(S, x, xo + i)).intoArray(out, oo + i);
    return i;
  }





  private static int tanh(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.tanh(x, xo, out, oo, m);
    return m;
  }

  private static int sigmoid(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.expForm(x, xo, out, oo, m, VMath.SIGMOID);
    return m;
  }

  private static int silu(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.expForm(x, xo, out, oo, m, VMath.SILU);
    return m;
  }

  /**
   * A compare-and-select rather than lanewise MAX: MAX must honour Java's NaN and -0 rules, which
   * costs extra blends on x86. {@code x <= 0 ? 0 : x} is Math.max(x, 0) for every input (NaN fails
   * the compare and passes through, -0 is <= 0 and becomes +0); the scalar kernel uses the same form.
   */
  private static int relu(float[] x, int xo, float[] out, int oo, int n) {
    FloatVector zero = FloatVector.zero(S);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, x, xo + i);
      v.blend(zero, v.compare(LE, 0f)).intoArray(out, oo + i);
    }
    return i;
  }

  /**
   * The one-pass backward of RELU, TANH or SIGMOID (see ScalarKernels.unaryBackward), rounding where the
   * scalar kernel rounds. ReLU's 0/1 factor comes from a compare and a blend, then the same product.
   */
  public static void unaryBackward(UnaryOp op, float[] g, int go, float[] ref, int ro, float[] out, int oo, int n) {
    assert n >= 0 && go + n <= g.length && ro + n <= ref.length && oo + n <= out.length;
    int i = switch (op) {
      case RELU -> reluBackward(g, go, ref, ro, out, oo, n);
      case TANH -> tanhBackward(g, go, ref, ro, out, oo, n);
      case SIGMOID -> sigmoidBackward(g, go, ref, ro, out, oo, n);
      default -> throw ScalarKernels.noFusedBackward(op);
    };
    ScalarKernels.unaryBackward(op, g, go + i, ref, ro + i, out, oo + i, n - i);
  }

  private static int reluBackward(float[] g, int go, float[] x, int xo, float[] out, int oo, int n) {
    FloatVector zero = FloatVector.zero(S);
    FloatVector one = FloatVector.broadcast(S, 1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector f = zero.blend(one, fromArray(S, x, xo + i).compare(GT, 0f));
      fromArray(S, g, go + i).mul(f).intoArray(out, oo + i);
    }
    return i;
  }

  private static int tanhBackward(float[] g, int go, float[] r, int ro, float[] out, int oo, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, r, ro + i);
      fromArray(S, g, go + i).mul(v.mul(v).neg().add(one)).intoArray(out, oo + i);
    }
    return i;
  }

  private static int sigmoidBackward(float[] g, int go, float[] r, int ro, float[] out, int oo, int n) {
    FloatVector one = FloatVector.broadcast(S, 1f);
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, r, ro + i);
      fromArray(S, g, go + i).mul(v.mul(v.neg().add(one))).intoArray(out, oo + i);
    }
    return i;
  }

  private static int leakyRelu(float slope, float[] x, int xo, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, x, xo + i);
      v.mul(slope).blend(v, v.compare(GT, 0f)).intoArray(out, oo + i);
    }
    return i;
  }

  private static int elu(float alpha, float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    float[] e = VMath.scratch()[VMath.SLOT_A];
    for (int b = 0; b < m; b += VMath.BLOCK) {
      int len = Math.min(VMath.BLOCK, m - b);
      VMath.expm1(x, xo + b, e, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector v = fromArray(S, x, xo + b + i);
        fromArray(S, e, i).mul(alpha).blend(v, v.compare(GT, 0f)).intoArray(out, oo + b + i);
      }
    }
    return m;
  }

  /** Above beta*x = 20 PyTorch returns x; the exp may overflow there but that lane is replaced. */
  private static int softplus(float beta, float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    float[] y = VMath.scratch()[VMath.SLOT_A];
    for (int b = 0; b < m; b += VMath.BLOCK) {
      int len = Math.min(VMath.BLOCK, m - b);
      for (int i = 0; i < len; i += L) fromArray(S, x, xo + b + i).mul(beta).intoArray(y, i);
      VMath.exp(y, 0, y, 0, len);
      VMath.log1p(y, 0, y, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector v = fromArray(S, x, xo + b + i);
        FloatVector bx = v.mul(beta);
        fromArray(S, y, i).div(beta).blend(v, bx.compare(GT, 20f)).intoArray(out, oo + b + i);
      }
    }
    return m;
  }

  /** GELU with the tanh approximation: see VMath.expForm's GELU_TANH. */
  private static int geluTanh(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    VMath.expForm(x, xo, out, oo, m, VMath.GELU_TANH);
    return m;
  }

  private static final float INV_SQRT_2 = 0.70710677f;

  /**
   * Exact GELU 0.5 x erfc(-x/sqrt2) in float. erfc(z), z >= 0, is Numerical Recipes' erfcc
   * (t = 1/(1+z/2), erfc = t exp(-z^2 + P(t)), relative error < 1.2e-7 for all z): unlike the
   * 1 + erf form it keeps relative precision for x << 0. The exponent is the delicate part: at
   * z ~ 9 one float ulp of z^2 is a 4e-6 relative error in the result, so z^2 is formed as x*x/2
   * (no rounded 1/sqrt2 in it) with its exact rounding error from an fma, the sum -z^2 + P gets
   * its error from Fast2Sum, and both corrections enter as exp(err) ~ 1 + err.
   * Lanes with |x| > 14.5 are set to x (x > 0) or a signed zero: erfc(10.25) is below float range.
   */
  private static int gelu(float[] x, int xo, float[] out, int oo, int n) {
    int m = S.loopBound(n);
    float[][] scratch = VMath.scratch();
    float[] se = scratch[VMath.SLOT_A], ts = scratch[VMath.SLOT_B], corr = scratch[VMath.SLOT_C];
    for (int b = 0; b < m; b += VMath.BLOCK) {
      int len = Math.min(VMath.BLOCK, m - b);
      for (int i = 0; i < len; i += L) {
        FloatVector ax = fromArray(S, x, xo + b + i).lanewise(ABS);
        ax = ax.blend(14.5f, ax.compare(GT, 14.5f)); // not min(): its Java NaN and -0.0 rules cost several instructions
        FloatVector t = FloatVector.broadcast(S, 1f).div(ax.mul(0.5f * INV_SQRT_2).add(1f));
        FloatVector p = t.mul(0.17087277f).add(-0.82215223f).mul(t).add(1.48851587f).mul(t).add(-1.13520398f)
            .mul(t).add(0.27886807f).mul(t).add(-0.18628806f).mul(t).add(0.09678418f).mul(t).add(0.37409196f)
            .mul(t).add(1.00002368f).mul(t).add(-1.26551223f);
        FloatVector xx = ax.mul(ax);
        FloatVector nzz = xx.mul(-0.5f);
        FloatVector zzErr = ax.fma(ax, xx.neg()).mul(0.5f);
        FloatVector s = nzz.add(p);
        FloatVector sErr = nzz.sub(s).add(p);
        s.intoArray(se, i);
        t.intoArray(ts, i);
        sErr.sub(zzErr).add(1f).intoArray(corr, i);
      }
      VMath.exp(se, 0, se, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector v = fromArray(S, x, xo + b + i);
        FloatVector erfcAbs = fromArray(S, ts, i).mul(fromArray(S, se, i)).mul(fromArray(S, corr, i));
        FloatVector h = v.mul(0.5f).mul(erfcAbs);
        VectorMask<Float> pos = v.compare(GT, 0f), big = v.lanewise(ABS).compare(GT, 14.5f);
        h.blend(v.sub(h), pos).blend(v, big.and(pos)).blend(v.mul(0f), big.andNot(pos)).intoArray(out, oo + b + i);
      }
    }
    return m;
  }

  private static final int ROUND = 0, FLOOR = 1, CEIL = 2, TRUNC = 3;

  /**
   * Round half to even (ROUND), floor, ceil or trunc, one loop for the four. Round: adding and subtracting
   * 2^23 to |x| < 2^23 makes the FPU round away the fraction (round-to-nearest-even), and x's sign bit is
   * put back with an OR, so -0.3 gives -0.0 like Math.rint. Larger |x|, infinities and NaN are already
   * integral and kept. floor(x) = r - 1 where the rounded r is above x; ceil(x) = -floor(-x), which also
   * gives Math.ceil's -0.0 for x in (-1, 0); trunc(x) = floor(|x|) with x's sign bit. One loop rather than
   * rint and floor helpers taking vectors: see VMath on why no vector crosses a method boundary here.
   */
  private static int rounded(float[] x, int xo, float[] out, int oo, int n, int mode) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      FloatVector v = fromArray(S, x, xo + i);
      FloatVector u = mode == CEIL ? v.neg() : mode == TRUNC ? v.lanewise(ABS) : v;
      FloatVector a = u.lanewise(ABS);
      FloatVector r = a.add(0x1p23f).sub(0x1p23f);
      r = r.reinterpretAsInts().lanewise(OR, u.reinterpretAsInts().lanewise(AND, 0x80000000)).reinterpretAsFloats();
      r = u.blend(r, a.compare(LT, 0x1p23f));
      if (mode != ROUND) r = r.blend(r.sub(1f), r.compare(GT, u));
      if (mode == CEIL) r = r.neg();
      if (mode == TRUNC) {
        r = r.reinterpretAsInts().lanewise(OR, v.reinterpretAsInts().lanewise(AND, 0x80000000)).reinterpretAsFloats();
      }
      r.intoArray(out, oo + i);
    }
    return i;
  }

  // ---------------------------------------------------------------------------------------------
  // Binary (arithmetic ops; anything else goes to the scalar kernel whole)

  public static void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    assert n >= 0 && ao + n <= a.length && bo + n <= b.length && oo + n <= out.length;
    int i = switch (op) {
      case ADD -> BinaryLoops.addVV(a, ao, b, bo, out, oo, n);
      case SUB -> BinaryLoops.subVV(a, ao, b, bo, out, oo, n);
      case MUL -> BinaryLoops.mulVV(a, ao, b, bo, out, oo, n);
      case DIV -> BinaryLoops.divVV(a, ao, b, bo, out, oo, n);
      case POW -> 0; // ScalarKernels.pow (C99 pow over Math.pow) in the scalar kernel
      case MAXIMUM -> BinaryLoops.maxVV(a, ao, b, bo, out, oo, n);
      case MINIMUM -> BinaryLoops.minVV(a, ao, b, bo, out, oo, n);
      default -> 0;
    };
    ScalarKernels.binary(op, a, ao + i, b, bo + i, out, oo + i, n - i);
  }

  /**
   * out = 1 where {@code a op b} holds, else 0, for a comparison op; {@code b} is one value, b[bo], when
   * {@code bScalar}. The scalar kernel's answers (NaN compares false, and unequal): one loop per operator,
   * GT and GE as LT and LE with the operands swapped.
   */
  public static void compare(BinaryOp op, float[] a, int ao, float[] b, int bo, boolean bScalar, byte[] out, int oo,
      int n) {
    assert n >= 0 && ao + n <= a.length && (bScalar ? bo < b.length || n == 0 : bo + n <= b.length) && oo + n <= out.length;
    int i = switch (op) {
      case LT -> lt(a, ao, false, b, bo, bScalar, out, oo, n);
      case GT -> lt(b, bo, bScalar, a, ao, false, out, oo, n);
      case LE -> le(a, ao, false, b, bo, bScalar, out, oo, n);
      case GE -> le(b, bo, bScalar, a, ao, false, out, oo, n);
      case EQ -> eq(a, ao, b, bo, bScalar, out, oo, n, false);
      case NE -> eq(a, ao, b, bo, bScalar, out, oo, n, true);
      default -> throw new IllegalArgumentException("compare: " + op + " is not a comparison");
    };
    ScalarKernels.compare(op, a, ao + i, 1, b, bScalar ? bo : bo + i, bScalar ? 0 : 1, out, oo + i, 1, n - i);
  }

  private static int lt(float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n) {
    int end = S.loopBound(n);
    if (end == 0) return 0;
    FloatVector sa = FloatVector.broadcast(S, a[ao]), sb = FloatVector.broadcast(S, b[bo]);
    ByteVector zero = ByteVector.zero(B), one = ByteVector.broadcast(B, (byte) 1);
    for (int i = 0; i < end; i += L) {
      FloatVector va = aScalar ? sa : fromArray(S, a, ao + i);
      FloatVector vb = bScalar ? sb : fromArray(S, b, bo + i);
      zero.blend(one, va.compare(LT, vb).cast(B)).intoArray(out, oo + i);
    }
    return end;
  }

  private static int le(float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n) {
    int end = S.loopBound(n);
    if (end == 0) return 0;
    FloatVector sa = FloatVector.broadcast(S, a[ao]), sb = FloatVector.broadcast(S, b[bo]);
    ByteVector zero = ByteVector.zero(B), one = ByteVector.broadcast(B, (byte) 1);
    for (int i = 0; i < end; i += L) {
      FloatVector va = aScalar ? sa : fromArray(S, a, ao + i);
      FloatVector vb = bScalar ? sb : fromArray(S, b, bo + i);
      zero.blend(one, va.compare(LE, vb).cast(B)).intoArray(out, oo + i);
    }
    return end;
  }

  private static int eq(float[] a, int ao, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n, boolean negate) {
    int end = S.loopBound(n);
    if (end == 0) return 0;
    FloatVector sb = FloatVector.broadcast(S, b[bo]);
    ByteVector yes = ByteVector.broadcast(B, (byte) (negate ? 0 : 1)), no = ByteVector.broadcast(B, (byte) (negate ? 1 : 0));
    for (int i = 0; i < end; i += L) {
      FloatVector vb = bScalar ? sb : fromArray(S, b, bo + i);
      no.blend(yes, fromArray(S, a, ao + i).compare(EQ, vb).cast(B)).intoArray(out, oo + i);
    }
    return end;
  }

  /**
   * out = c != 0 ? a : b over n elements; a (or b) is one value, a[ao] (b[bo]), when aScalar (bScalar).
   */
  public static void where(byte[] c, int co, float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar,
      float[] out, int oo, int n) {
    assert n >= 0 && co + n <= c.length && oo + n <= out.length;
    int end = S.loopBound(n);
    int i = 0;
    if (end > 0) {
      FloatVector sa = FloatVector.broadcast(S, a[ao]), sb = FloatVector.broadcast(S, b[bo]);
      for (; i < end; i += L) {
        FloatVector va = aScalar ? sa : fromArray(S, a, ao + i);
        FloatVector vb = bScalar ? sb : fromArray(S, b, bo + i);
        vb.blend(va, ByteVector.fromArray(B, c, co + i).compare(NE, (byte) 0).cast(S)).intoArray(out, oo + i);
      }
    }
    ScalarKernels.where(c, co + i, 1, a, aScalar ? ao : ao + i, aScalar ? 0 : 1, b, bScalar ? bo : bo + i, bScalar ? 0 : 1,
        out, oo + i, 1, n - i);
  }

  /** {@code out = a op s}. */
  public static void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n) {
    assert n >= 0 && ao + n <= a.length && oo + n <= out.length;
    int i = switch (op) {
      case ADD -> BinaryLoops.addVS(a, ao, s, out, oo, n);
      case SUB -> BinaryLoops.subVS(a, ao, s, out, oo, n);
      case MUL -> BinaryLoops.mulVS(a, ao, s, out, oo, n);
      case DIV -> BinaryLoops.divVS(a, ao, s, out, oo, n);
      case POW -> 0; // ScalarKernels.pow (C99 pow over Math.pow) in the scalar kernel
      case MAXIMUM -> BinaryLoops.maxVS(a, ao, s, out, oo, n);
      case MINIMUM -> BinaryLoops.minVS(a, ao, s, out, oo, n);
      default -> 0;
    };
    ScalarKernels.binaryScalarRight(op, a, ao + i, s, out, oo + i, n - i);
  }

  /** {@code out = s op b}. */
  public static void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n) {
    assert n >= 0 && bo + n <= b.length && oo + n <= out.length;
    int i = switch (op) {
      case ADD -> BinaryLoops.addSV(s, b, bo, out, oo, n);
      case SUB -> BinaryLoops.subSV(s, b, bo, out, oo, n);
      case MUL -> BinaryLoops.mulSV(s, b, bo, out, oo, n);
      case DIV -> BinaryLoops.divSV(s, b, bo, out, oo, n);
      case POW -> 0; // ScalarKernels.pow (C99 pow over Math.pow) in the scalar kernel
      case MAXIMUM -> BinaryLoops.maxSV(s, b, bo, out, oo, n);
      case MINIMUM -> BinaryLoops.minSV(s, b, bo, out, oo, n);
      default -> 0;
    };
    ScalarKernels.binaryScalarLeft(op, s, b, bo + i, out, oo + i, n - i);
  }

  // ---------------------------------------------------------------------------------------------
  // Fused and reductions

  /** {@code out = alpha*x + beta}, one fma per element: bitwise equal to the scalar kernel. */
  public static void axpb(float alpha, float[] x, int xo, float beta, float[] out, int oo, int n) {
    assert n >= 0 && xo + n <= x.length && oo + n <= out.length;
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, x, xo + i).fma(alpha, beta).intoArray(out, oo + i);
    }
    ScalarKernels.axpb(alpha, x, xo + i, beta, out, oo + i, n - i);
  }

  /**
   * Float accumulation in four independent vector accumulators: one accumulator would serialize
   * every add behind the previous one (4-cycle latency, 2 adds/cycle possible), four keep both
   * FP ports busy. Lanes are combined at the end, then the scalar tail is added in order; the order
   * depends only on n, so the result is deterministic. Error grows like n * eps * mean|x| at worst
   * (the many partial sums make it much smaller in practice).
   */
  public static float sum(float[] x, int xo, int n) {
    assert n >= 0 && xo + n <= x.length;
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (int end = n - 4 * L; i <= end; i += 4 * L) {
      a0 = a0.add(fromArray(S, x, xo + i));
      a1 = a1.add(fromArray(S, x, xo + i + L));
      a2 = a2.add(fromArray(S, x, xo + i + 2 * L));
      a3 = a3.add(fromArray(S, x, xo + i + 3 * L));
    }
    for (int end = S.loopBound(n); i < end; i += L) a0 = a0.add(fromArray(S, x, xo + i));
    FloatVector a = a0.add(a1).add(a2.add(a3));
    float s = a.lane(0); // in lane order: reduceLanes(ADD) rounds differently once compiled
    for (int l = 1; l < L; l++) s += a.lane(l);
    for (; i < n; i++) s += x[xo + i];
    return s;
  }

  /** Largest element, NaN if any is NaN (lanewise MAX has Math.max semantics); four chains as in sum. */
  public static float max(float[] x, int xo, int n) {
    assert n >= 1 && xo + n <= x.length;
    // seeded with an element of x, so the seed can never change the answer
    FloatVector a0 = FloatVector.broadcast(S, x[xo]), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (int end = n - 4 * L; i <= end; i += 4 * L) {
      a0 = a0.lanewise(MAX, fromArray(S, x, xo + i));
      a1 = a1.lanewise(MAX, fromArray(S, x, xo + i + L));
      a2 = a2.lanewise(MAX, fromArray(S, x, xo + i + 2 * L));
      a3 = a3.lanewise(MAX, fromArray(S, x, xo + i + 3 * L));
    }
    for (int end = S.loopBound(n); i < end; i += L) a0 = a0.lanewise(MAX, fromArray(S, x, xo + i));
    float m = a0.lanewise(MAX, a1).lanewise(MAX, a2.lanewise(MAX, a3)).reduceLanes(MAX);
    for (; i < n; i++) m = Math.max(m, x[xo + i]);
    return m;
  }

  /**
   * Index of each row's first largest (max) or smallest element, or of its first NaN: the scalar
   * kernel's answer in two passes over the row, the extreme value by {@link #max}/{@link #min} (NaN if
   * the row has one), then the first lane equal to it. Equal compares -0.0 and 0.0 alike, as the
   * scalar kernel's strict comparison does, so the first zero of either sign is found.
   */
  public static void argExtremeRows(boolean max, float[] x, int xo, int rows, int cols, long[] out, int oo) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + rows <= out.length;
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols;
      float m = max ? max(x, xb, cols) : min(x, xb, cols);
      int j = 0;
      if (Float.isNaN(m)) {
        while (!Float.isNaN(x[xb + j])) j++;
      } else {
        int found = -1;
        for (int end = S.loopBound(cols); j < end; j += L) {
          int lane = fromArray(S, x, xb + j).eq(m).firstTrue();
          if (lane < L) {
            found = j + lane;
            break;
          }
        }
        if (found < 0) {
          while (x[xb + j] != m) j++;
          found = j;
        }
        j = found;
      }
      out[oo + r] = j;
    }
  }

  /** Smallest element, NaN if any is NaN. */
  public static float min(float[] x, int xo, int n) {
    assert n >= 1 && xo + n <= x.length;
    // seeded with an element of x, so the seed can never change the answer
    FloatVector a0 = FloatVector.broadcast(S, x[xo]), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (int end = n - 4 * L; i <= end; i += 4 * L) {
      a0 = a0.lanewise(MIN, fromArray(S, x, xo + i));
      a1 = a1.lanewise(MIN, fromArray(S, x, xo + i + L));
      a2 = a2.lanewise(MIN, fromArray(S, x, xo + i + 2 * L));
      a3 = a3.lanewise(MIN, fromArray(S, x, xo + i + 3 * L));
    }
    for (int end = S.loopBound(n); i < end; i += L) a0 = a0.lanewise(MIN, fromArray(S, x, xo + i));
    float m = a0.lanewise(MIN, a1).lanewise(MIN, a2.lanewise(MIN, a3)).reduceLanes(MIN);
    for (; i < n; i++) m = Math.min(m, x[xo + i]);
    return m;
  }


  /**
   * Row-wise softmax / log_softmax, numerically stable: the row max is subtracted before exp.
   * Softmax stores exp(x - max) on the way (so the exp is computed once) and rescales in place;
   * log_softmax only sums, then writes x - max - log(sum). The exp sum accumulates in float.
   */
  public static void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    assert rows >= 0 && cols >= 1 && xo + (long) rows * cols <= x.length && oo + (long) rows * cols <= out.length;
    if (cols < L) {
      shortSoftmaxRows(x, xo, out, oo, rows, cols, log);
      return;
    }
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols, ob = oo + r * cols;
      float m = max(x, xb, cols);
      if (log) {
        logSoftmaxRow(x, xb, m, (float) Math.log(expSum(x, xb, m, cols)), out, ob, cols);
      } else {
        float inv = 1f / expStore(x, xb, m, out, ob, cols);
        scale(out, ob, inv, cols);
      }
    }
  }

  /**
   * Rows shorter than a vector (10 classes against 16 lanes): every step of the row loop above runs
   * only its scalar tail, and its vector parts contribute exactly {@code x[0]} to the max and +0 to
   * the sums, so this loop gives the same bits without the per-row vector set-up, scratch lookup and
   * lane extraction that cost more than the arithmetic here.
   */
  private static void shortSoftmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    for (int r = 0; r < rows; r++) {
      int xb = xo + r * cols, ob = oo + r * cols;
      float m = x[xb];
      for (int i = 0; i < cols; i++) m = Math.max(m, x[xb + i]);
      float s = 0f;
      if (log) {
        for (int i = 0; i < cols; i++) s += (float) Math.exp(x[xb + i] - m);
        float ls = (float) Math.log(s);
        for (int i = 0; i < cols; i++) out[ob + i] = (x[xb + i] - m) - ls;
      } else {
        for (int i = 0; i < cols; i++) {
          float e = (float) Math.exp(x[xb + i] - m);
          out[ob + i] = e;
          s += e;
        }
        float inv = 1f / s;
        for (int i = 0; i < cols; i++) out[ob + i] *= inv;
      }
    }
  }

  private static float expSum(float[] x, int xo, float m, int n) {
    FloatVector acc = FloatVector.zero(S);
    int end = S.loopBound(n);
    float[] e = VMath.scratch()[VMath.SLOT_A];
    for (int b = 0; b < end; b += VMath.BLOCK) {
      int len = Math.min(VMath.BLOCK, end - b);
      for (int i = 0; i < len; i += L) fromArray(S, x, xo + b + i).sub(m).intoArray(e, i);
      VMath.exp(e, 0, e, 0, len);
      for (int i = 0; i < len; i += L) acc = acc.add(fromArray(S, e, i));
    }
    int i = end;
    float s = acc.lane(0); // in lane order: reduceLanes(ADD) rounds differently once compiled
    for (int l = 1; l < L; l++) s += acc.lane(l);
    for (; i < n; i++) s += (float) Math.exp(x[xo + i] - m);
    return s;
  }

  private static float expStore(float[] x, int xo, float m, float[] out, int oo, int n) {
    int end = S.loopBound(n);
    // exp(x - m) into out and its sum, one pass: out may be x (an in-place softmax), and each element is read
    // before it is written
    float s = VMath.expShiftedSum(x, xo, m, out, oo, end);
    int i = end;
    for (; i < n; i++) {
      float e = (float) Math.exp(x[xo + i] - m);
      out[oo + i] = e;
      s += e;
    }
    return s;
  }

  private static void logSoftmaxRow(float[] x, int xo, float m, float ls, float[] out, int oo, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) {
      fromArray(S, x, xo + i).sub(m).sub(ls).intoArray(out, oo + i);
    }
    for (; i < n; i++) out[oo + i] = (x[xo + i] - m) - ls;
  }

  private static void scale(float[] a, int ao, float c, int n) {
    int i = 0;
    for (int end = S.loopBound(n); i < end; i += L) fromArray(S, a, ao + i).mul(c).intoArray(a, ao + i);
    for (; i < n; i++) a[ao + i] *= c;
  }
}
