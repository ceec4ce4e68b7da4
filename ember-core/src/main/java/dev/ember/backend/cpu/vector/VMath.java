package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.VectorOperators.ABS;
import static jdk.incubator.vector.VectorOperators.AND;
import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.EQ;
import static jdk.incubator.vector.VectorOperators.F2I;
import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;
import static jdk.incubator.vector.VectorOperators.LT;
import static jdk.incubator.vector.VectorOperators.NE;
import static jdk.incubator.vector.VectorOperators.OR;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * Float transcendentals on vectors, written with nothing but IEEE-exact lane operations (add, mul,
 * fma, compares, integer bit tricks), so every lane's result is a pure function of its input.
 *
 * <p>Why not {@code lanewise(EXP)}: the Vector API's transcendental operators run a Java fallback
 * before C2 compiles the loop and an SVML intrinsic after, and the two round differently (590 of
 * 64000 softmax outputs differed in one run). A result that depends on JIT state also depends,
 * through it, on the thread count and on what ran before: exactly what Ember promises not to do.
 * These functions give the same bits cold and warm, on one thread or many.
 *
 * <p>Every function works on arrays, a loop per pass, and no vector crosses a method boundary. A helper
 * that takes and returns vectors is only fast where C2 inlines it, and C2 declines often: a callee over
 * 325 bytecodes ("hot method too big": log), one already compiled on its own into a big method (expm1
 * once a warm-up had compiled it alone: tanh), a caller that has used up its inlining budget. Where it
 * declines, each vector is boxed at the call and the Vector API runs its Java fallbacks: log, expm1,
 * log1p and tanh ran 10-40x slower than their arithmetic (tanh 3.7-4.5 ms per million elements on two
 * threads, exp 0.2 ms). A function that needs another's result (tanh needs expm1, which needs exp)
 * takes it from a pass over a per-thread scratch block of {@link #BLOCK} floats in L1, so each lane goes
 * through exactly the operations it went through when the helpers were inlined: the same bits.
 *
 * <p>Algorithms follow Cephes' single-precision routines (exp: Cody-Waite reduction by ln2 and a
 * degree-6 polynomial; log: mantissa in [sqrt(1/2), sqrt(2)) and a degree-9 polynomial), about 1
 * ulp; expm1, log1p and tanh are derived from them without cancellation. Accuracy is tested against
 * double-precision references in KernelsTest and the op table.
 */
final class VMath {
  private VMath() {}

  static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();

  /** Floats per scratch block: 2 KiB, so a function's scratch blocks and its operands stay in L1. */
  static final int BLOCK = 512;
  /** Scratch slots: exp values for expm1, u = 1 + x for log1p, and up to three for the callers. */
  private static final int E = 0, U = 1;
  static final int SLOT_A = 2, SLOT_B = 3, SLOT_C = 4;
  private static final ThreadLocal<float[][]> SCRATCH = ThreadLocal.withInitial(() -> new float[5][BLOCK]);

  /** This thread's scratch blocks; slots {@link #SLOT_A}..{@link #SLOT_C} are free for callers of this class. */
  static float[][] scratch() {
    return SCRATCH.get();
  }

  static final float LOG2E = 1.44269504088896341f;
  static final float LN2_HI = 0.693359375f; // 9 significant bits: n * LN2_HI is exact
  static final float LN2_LO = -2.12194440e-4f;
  static final float ROUND = 0x1.8p23f; // adding and subtracting it rounds to an integer
  /**
   * exp's argument is clamped to [EXP_CLAMP_LO, EXP_CLAMP_HI]. Above EXP_HI = 88.72283935546875 (the largest x
   * with exp(x) finite in float) the result is then +inf by itself, below EXP_LO = -103.97208 (where exp(x)
   * rounds to 0) it is 0 by itself.
   */
  static final float EXP_CLAMP_LO = -110f, EXP_CLAMP_HI = 89f;
  /**
   * Below this (and at -inf) {@link #expForm} takes exp(x) as +0 without computing it, which is what the polynomial
   * gives there (exp(-105) is 0.37 x 2^-150, which rounds to 0): a product that underflows costs a microcode assist
   * of ~100 cycles per instruction on Intel cores, and a causal attention mask sends half of a softmax's lanes here.
   */
  static final float EXP_ZERO = -105f;

  /** What {@link #expForm} computes from exp: see there. */
  static final int EXP = 0, SIGMOID = 1, SILU = 2, GELU_TANH = 3;
  /** gelu_tanh's argument: sigmoid(2u) with 2u = x (K + C x^2), K = 2 sqrt(2/pi), C = K * 0.044715. */
  static final float GELU_K = (float) (2 * 0.7978845608028654), GELU_C = (float) (2 * 0.7978845608028654 * 0.044715);

  /** out = exp(x) over n elements (a multiple of the vector length; out may be x): {@link #expForm} EXP. */
  static void exp(float[] xa, int xo, float[] out, int oo, int n) {
    expForm(xa, xo, out, oo, n, EXP);
  }

  /**
   * out = exp(x - m) over n elements (a multiple of the vector length; out may be x), returning their sum: the
   * vectors added in order, then the lanes in lane order. {@link #expForm}'s EXP pass on x - m with the sum taken as
   * it stores (the same operations, so the bits of a pass of x - m, {@link #exp} and a pass summing the result), in
   * one pass instead of three: a softmax row's subtraction, exp and sum with one load and one store per vector.
   */
  static float expShiftedSum(float[] xa, int xo, float m, float[] out, int oo, int n) {
    return expPass(xa, xo, out, oo, n, EXP, true, m);
  }

  /**
   * One pass of exp over n elements (a multiple of the vector length; out may be x) and what is built on
   * it, so a sigmoid does not pay a second pass through a scratch block:
   * <ul>
   *   <li>EXP: exp(x), about 1 ulp; +inf above 88.72, 0 below -103.97, NaN for NaN;
   *   <li>SIGMOID: with e = exp(-|x|) (which never overflows), 1/(1+e), or e/(1+e) for x < 0, which keeps
   *       full relative precision down to the float underflow where 1/(1+exp(-x)) would be 1/inf = 0;
   *   <li>SILU: x sigmoid(x);
   *   <li>GELU_TANH: x sigmoid(u), u = x (K + C x^2): 0.5 (1 + tanh(u/2)) == sigmoid(u), one exp instead of
   *       tanh and no cancellation for x << 0. u is rounded in float, so below x ~ -9 (outputs under
   *       1e-30) the relative error grows to ~2e-5, as in any float implementation.
   * </ul>
   * The form is the same for the whole call, so its branches are taken the same way every iteration.
   */
  static void expForm(float[] xa, int xo, float[] out, int oo, int n, int form) {
    expPass(xa, xo, out, oo, n, form, false, 0f);
  }

  /**
   * {@link #expForm}'s loop; when {@code shiftAndSum} (with EXP: {@link #expShiftedSum}), on x - m, returning the
   * outputs' sum (vectors in order, then lanes in lane order), else 0. Both flags hold for the whole call.
   */
  private static float expPass(float[] xa, int xo, float[] out, int oo, int n, int form, boolean shiftAndSum,
      float m) {
    FloatVector acc = FloatVector.zero(S);
    for (int i = 0; i < n; i += L) {
      FloatVector v = FloatVector.fromArray(S, xa, xo + i);
      if (shiftAndSum) v = v.sub(m);
      FloatVector w = form == GELU_TANH ? v.mul(v).mul(GELU_C).add(GELU_K).mul(v) : v;
      FloatVector x = form == EXP ? v : w.lanewise(ABS).neg();
      // compare and blend, not max/min, whose Java rules for NaN and -0.0 cost several instructions each; a NaN
      // passes both and every operation after them, so it comes out NaN. Lanes below EXP_ZERO compute exp(0) and
      // are set to +0 after: the same bits as computing them from the clamp EXP_CLAMP_LO (0), without the underflow.
      VectorMask<Float> zero = x.compare(LT, EXP_ZERO);
      FloatVector xc = x.blend(0f, zero);
      xc = xc.blend(EXP_CLAMP_HI, xc.compare(GT, EXP_CLAMP_HI));
      FloatVector nn = xc.fma(LOG2E, ROUND).sub(ROUND);
      FloatVector r = nn.fma(FloatVector.broadcast(S, -LN2_HI), xc);
      r = nn.fma(FloatVector.broadcast(S, -LN2_LO), r);
      FloatVector p = r.fma(1.9875691500e-4f, 1.3981999507e-3f);
      p = p.fma(r, FloatVector.broadcast(S, 8.3334519073e-3f));
      p = p.fma(r, FloatVector.broadcast(S, 4.1665795894e-2f));
      p = p.fma(r, FloatVector.broadcast(S, 1.6666665459e-1f));
      p = p.fma(r, FloatVector.broadcast(S, 5.0000001201e-1f));
      p = p.mul(r.mul(r)).add(r).add(1f);
      // 2^n as two normal powers of two: n is in [-159, 128], so n/2 and n - n/2 stay within [-80, 64]
      // and the second product rounds once, correctly, even into the subnormal range. Above EXP_HI, n is
      // 128 and p >= 1, so the product overflows to +inf; below EXP_LO it is under 2^-150 and rounds to 0.
      IntVector ni = (IntVector) nn.convert(F2I, 0);
      IntVector h = ni.lanewise(ASHR, 1);
      FloatVector s1 = h.add(127).lanewise(LSHL, 23).reinterpretAsFloats();
      FloatVector s2 = ni.sub(h).add(127).lanewise(LSHL, 23).reinterpretAsFloats();
      FloatVector y = p.mul(s1).mul(s2).blend(0f, zero);
      if (form != EXP) {
        FloatVector q = FloatVector.broadcast(S, 1f).div(y.add(1f));
        y = q.blend(y.mul(q), w.compare(LT, 0f));
        if (form != SIGMOID) y = v.mul(y);
      }
      y.intoArray(out, oo + i);
      if (shiftAndSum) acc = acc.add(y);
    }
    if (!shiftAndSum) return 0f;
    float s = acc.lane(0); // in lane order: reduceLanes(ADD) rounds differently once compiled
    for (int l = 1; l < L; l++) s += acc.lane(l);
    return s;
  }

  private static final float SQRTH = 0.70710678118654752440f;

  /**
   * out = log(x) over n elements (a multiple of the vector length; out may be x), about 1 ulp; -inf at
   * +-0, NaN below 0 and for NaN, +inf at +inf.
   */
  static void log(float[] xa, int xo, float[] out, int oo, int n) {
    for (int i = 0; i < n; i += L) {
      FloatVector x = FloatVector.fromArray(S, xa, xo + i);
      // subnormals: scale by 2^25 first and take 25 off the exponent
      VectorMask<Float> tiny = x.compare(LT, 0x1p-126f);
      FloatVector xs = x.blend(x.mul(0x1p25f), tiny);
      IntVector bits = xs.reinterpretAsInts();
      IntVector e = bits.lanewise(LSHR, 23).lanewise(AND, 0xff).sub(126);
      // m in [0.5, 1)
      FloatVector m = bits.lanewise(AND, 0x007fffff).lanewise(OR, 0x3f000000).reinterpretAsFloats();
      FloatVector ef = (FloatVector) e.convert(I2F, 0);
      ef = ef.blend(ef.sub(25f), tiny); // exact: small integers
      // move m to [sqrt(1/2), sqrt(2)): below sqrt(1/2), double it and take one from the exponent
      VectorMask<Float> small = m.compare(LT, SQRTH);
      ef = ef.blend(ef.sub(1f), small);
      FloatVector f = m.blend(m.add(m), small).sub(1f); // exact (Sterbenz)
      FloatVector z = f.mul(f);
      FloatVector y = f.fma(7.0376836292e-2f, -1.1514610310e-1f);
      y = y.fma(f, FloatVector.broadcast(S, 1.1676998740e-1f));
      y = y.fma(f, FloatVector.broadcast(S, -1.2420140846e-1f));
      y = y.fma(f, FloatVector.broadcast(S, 1.4249322787e-1f));
      y = y.fma(f, FloatVector.broadcast(S, -1.6668057665e-1f));
      y = y.fma(f, FloatVector.broadcast(S, 2.0000714765e-1f));
      y = y.fma(f, FloatVector.broadcast(S, -2.4999993993e-1f));
      y = y.fma(f, FloatVector.broadcast(S, 3.3333331174e-1f));
      y = y.mul(f).mul(z);
      y = ef.fma(FloatVector.broadcast(S, LN2_LO), y);
      y = z.fma(FloatVector.broadcast(S, -0.5f), y);
      FloatVector r = f.add(y);
      r = ef.fma(FloatVector.broadcast(S, LN2_HI), r);
      r = r.blend(Float.NEGATIVE_INFINITY, x.compare(EQ, 0f));
      r = r.blend(Float.NaN, x.compare(LT, 0f));
      r.blend(x, x.compare(EQ, Float.POSITIVE_INFINITY).or(x.compare(NE, x))).intoArray(out, oo + i);
    }
  }

  private static final float LN2 = 0.69314718f;

  /**
   * out = exp(x) - 1 without cancellation over n elements (a multiple of the vector length; out may be x),
   * about 1 ulp. |x| < ln2: the polynomial directly. Up to |x| = 16.5: x = n ln2 + r, and expm1(x) =
   * 2^n expm1(r) + (2^n - 1), where 2^n - 1 is exact for |n| <= 24 and the fma rounds once. Beyond,
   * exp(x) - 1 loses nothing.
   */
  static void expm1(float[] xa, int xo, float[] out, int oo, int n) {
    float[] ex = SCRATCH.get()[E];
    for (int b = 0; b < n; b += BLOCK) {
      int len = Math.min(BLOCK, n - b);
      exp(xa, xo + b, ex, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector x = FloatVector.fromArray(S, xa, xo + b + i);
        FloatVector a = x.lanewise(ABS);
        FloatVector xc = x.blend(-24f, x.compare(LT, -24f)); // compare and blend: see expForm
        xc = xc.blend(24f, xc.compare(GT, 24f));
        FloatVector nn = xc.fma(LOG2E, ROUND).sub(ROUND);
        FloatVector r = nn.fma(FloatVector.broadcast(S, -LN2_HI), x);
        r = nn.fma(FloatVector.broadcast(S, -LN2_LO), r);
        IntVector ni = (IntVector) nn.convert(F2I, 0);
        FloatVector s = ni.add(127).lanewise(LSHL, 23).reinterpretAsFloats();
        // Taylor polynomial of expm1 to degree 10 (truncation below 1e-9 relative for |x| < ln2), evaluated
        // once: at x in the lanes where it is the answer, at r elsewhere
        VectorMask<Float> small = a.compare(LT, LN2);
        FloatVector u = r.blend(x, small);
        FloatVector t = u.fma(1f / 3628800f, 1f / 362880f);
        t = t.fma(u, FloatVector.broadcast(S, 1f / 40320f));
        t = t.fma(u, FloatVector.broadcast(S, 1f / 5040f));
        t = t.fma(u, FloatVector.broadcast(S, 1f / 720f));
        t = t.fma(u, FloatVector.broadcast(S, 1f / 120f));
        t = t.fma(u, FloatVector.broadcast(S, 1f / 24f));
        t = t.fma(u, FloatVector.broadcast(S, 1f / 6f));
        t = t.fma(u, FloatVector.broadcast(S, 0.5f));
        FloatVector poly = t.mul(u.mul(u)).add(u);
        FloatVector y = FloatVector.fromArray(S, ex, i).sub(1f);
        y = y.blend(s.fma(poly, s.sub(1f)), a.compare(LT, 16.5f));
        y = y.blend(poly, small);
        y.blend(x, x.compare(NE, x)).intoArray(out, oo + b + i);
      }
    }
  }

  /**
   * out = log(1 + x) over n elements (a multiple of the vector length; out may be x), with Goldberg's
   * correction: u = 1 + x rounds, and log(u) * x / (u - 1) undoes the rounding to first order. Where u
   * is exactly 1, x itself is the answer.
   */
  static void log1p(float[] xa, int xo, float[] out, int oo, int n) {
    float[] lu = SCRATCH.get()[U];
    for (int b = 0; b < n; b += BLOCK) {
      int len = Math.min(BLOCK, n - b);
      for (int i = 0; i < len; i += L) FloatVector.fromArray(S, xa, xo + b + i).add(1f).intoArray(lu, i);
      log(lu, 0, lu, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector x = FloatVector.fromArray(S, xa, xo + b + i);
        FloatVector u = x.add(1f);
        FloatVector d = u.sub(1f);
        FloatVector r = FloatVector.fromArray(S, lu, i).mul(x.div(d));
        r = r.blend(x, d.compare(EQ, 0f));
        r.blend(u, u.compare(EQ, Float.POSITIVE_INFINITY)).intoArray(out, oo + b + i);
      }
    }
  }

  /**
   * out = tanh(x) over n elements (a multiple of the vector length; out may be x): tanh(|x|) = -e / (e + 2)
   * with e = expm1(-2|x|) in (-1, 0]: no cancellation anywhere, exact 1 in the limit; the sign is put
   * back by select so -0 stays -0.
   */
  static void tanh(float[] xa, int xo, float[] out, int oo, int n) {
    float[] e = SCRATCH.get()[SLOT_A];
    for (int b = 0; b < n; b += BLOCK) {
      int len = Math.min(BLOCK, n - b);
      for (int i = 0; i < len; i += L) FloatVector.fromArray(S, xa, xo + b + i).lanewise(ABS).mul(-2f).intoArray(e, i);
      expm1(e, 0, e, 0, len);
      for (int i = 0; i < len; i += L) {
        FloatVector x = FloatVector.fromArray(S, xa, xo + b + i);
        FloatVector ev = FloatVector.fromArray(S, e, i);
        FloatVector t = ev.neg().div(ev.add(2f));
        t.blend(t.neg(), x.compare(LT, 0f)).blend(x, x.compare(NE, x)).intoArray(out, oo + b + i);
      }
    }
  }
}
