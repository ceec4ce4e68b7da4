package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.VectorOperators.ABS;
import static jdk.incubator.vector.VectorOperators.AND;
import static jdk.incubator.vector.VectorOperators.ASHR;
import static jdk.incubator.vector.VectorOperators.EQ;
import static jdk.incubator.vector.VectorOperators.F2I;
import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.I2F;
import static jdk.incubator.vector.VectorOperators.IS_NAN;
import static jdk.incubator.vector.VectorOperators.LSHL;
import static jdk.incubator.vector.VectorOperators.LSHR;
import static jdk.incubator.vector.VectorOperators.LT;
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
 * <p>Algorithms follow Cephes' single-precision routines (exp: Cody-Waite reduction by ln2 and a
 * degree-6 polynomial; log: mantissa in [sqrt(1/2), sqrt(2)) and a degree-9 polynomial), about 1
 * ulp; expm1, log1p and tanh are derived from them without cancellation. Accuracy is tested against
 * double-precision references in KernelsTest and the op table.
 */
final class VMath {
  private VMath() {}

  static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> I = S.withLanes(int.class);

  private static final float LOG2E = 1.44269504088896341f;
  private static final float LN2_HI = 0.693359375f; // 9 significant bits: n * LN2_HI is exact
  private static final float LN2_LO = -2.12194440e-4f;
  private static final float EXP_HI = 88.72283935546875f; // largest x with exp(x) finite in float
  private static final float EXP_LO = -103.97208f; // below, exp(x) rounds to 0
  private static final float ROUND = 0x1.8p23f; // adding and subtracting it rounds to an integer

  /** exp(x), about 1 ulp; +inf above 88.72, 0 below -103.97, NaN for NaN. */
  static FloatVector exp(FloatVector x) {
    FloatVector xc = x.max(EXP_LO).min(EXP_HI);
    FloatVector n = xc.fma(LOG2E, ROUND).sub(ROUND);
    FloatVector r = n.fma(FloatVector.broadcast(S, -LN2_HI), xc);
    r = n.fma(FloatVector.broadcast(S, -LN2_LO), r);
    FloatVector p = r.fma(1.9875691500e-4f, 1.3981999507e-3f);
    p = mad(p, r, 8.3334519073e-3f);
    p = mad(p, r, 4.1665795894e-2f);
    p = mad(p, r, 1.6666665459e-1f);
    p = mad(p, r, 5.0000001201e-1f);
    p = p.mul(r.mul(r)).add(r).add(1f);
    // 2^n as two normal powers of two: n is in [-150, 128], so n/2 and n - n/2 stay within [-75, 64]
    // and the second product rounds once, correctly, even into the subnormal range
    IntVector ni = (IntVector) n.convert(F2I, 0);
    IntVector h = ni.lanewise(ASHR, 1);
    FloatVector s1 = h.add(127).lanewise(LSHL, 23).reinterpretAsFloats();
    FloatVector s2 = ni.sub(h).add(127).lanewise(LSHL, 23).reinterpretAsFloats();
    FloatVector y = p.mul(s1).mul(s2);
    y = y.blend(Float.POSITIVE_INFINITY, x.compare(GT, EXP_HI));
    y = y.blend(0f, x.compare(LT, EXP_LO));
    return y.blend(x, x.test(IS_NAN));
  }

  private static final float SQRTH = 0.70710678118654752440f;

  /** Natural log, about 1 ulp; -inf at +-0, NaN below 0 and for NaN, +inf at +inf. */
  static FloatVector log(FloatVector x) {
    // subnormals: scale by 2^25 first and take 25 off the exponent
    VectorMask<Float> tiny = x.compare(LT, 0x1p-126f);
    FloatVector xs = x.blend(x.mul(0x1p25f), tiny);
    IntVector bits = xs.reinterpretAsInts();
    IntVector e = bits.lanewise(LSHR, 23).lanewise(AND, 0xff).sub(126);
    e = e.blend(e.sub(25), tiny.cast(I));
    // m in [0.5, 1)
    FloatVector m = bits.lanewise(AND, 0x007fffff).lanewise(OR, 0x3f000000).reinterpretAsFloats();
    FloatVector ef = (FloatVector) e.convert(I2F, 0);
    // move m to [sqrt(1/2), sqrt(2)): below sqrt(1/2), double it and take one from the exponent
    VectorMask<Float> small = m.compare(LT, SQRTH);
    ef = ef.blend(ef.sub(1f), small);
    FloatVector f = m.blend(m.add(m), small).sub(1f); // exact (Sterbenz)
    FloatVector z = f.mul(f);
    FloatVector y = f.fma(7.0376836292e-2f, -1.1514610310e-1f);
    y = mad(y, f, 1.1676998740e-1f);
    y = mad(y, f, -1.2420140846e-1f);
    y = mad(y, f, 1.4249322787e-1f);
    y = mad(y, f, -1.6668057665e-1f);
    y = mad(y, f, 2.0000714765e-1f);
    y = mad(y, f, -2.4999993993e-1f);
    y = mad(y, f, 3.3333331174e-1f);
    y = y.mul(f).mul(z);
    y = ef.fma(FloatVector.broadcast(S, LN2_LO), y);
    y = z.fma(FloatVector.broadcast(S, -0.5f), y);
    FloatVector r = f.add(y);
    r = ef.fma(FloatVector.broadcast(S, LN2_HI), r);
    r = r.blend(Float.NEGATIVE_INFINITY, x.compare(EQ, 0f));
    r = r.blend(Float.NaN, x.compare(LT, 0f));
    r = r.blend(x, x.compare(EQ, Float.POSITIVE_INFINITY).or(x.test(IS_NAN)));
    return r;
  }

  private static final float LN2 = 0.69314718f;

  /** Taylor polynomial of expm1 to degree 10: truncation below 1e-9 relative for |x| < ln2. */
  private static FloatVector expm1Poly(FloatVector x) {
    FloatVector t = x.fma(1f / 3628800f, 1f / 362880f);
    t = mad(t, x, 1f / 40320f);
    t = mad(t, x, 1f / 5040f);
    t = mad(t, x, 1f / 720f);
    t = mad(t, x, 1f / 120f);
    t = mad(t, x, 1f / 24f);
    t = mad(t, x, 1f / 6f);
    t = mad(t, x, 0.5f);
    return t.mul(x.mul(x)).add(x);
  }

  /**
   * exp(x) - 1 without cancellation, about 1 ulp. |x| < ln2: the polynomial directly. Up to |x| =
   * 16.5: x = n ln2 + r, and expm1(x) = 2^n expm1(r) + (2^n - 1), where 2^n - 1 is exact for
   * |n| <= 24 and the fma rounds once. Beyond, exp(x) - 1 loses nothing.
   */
  static FloatVector expm1(FloatVector x) {
    FloatVector a = x.lanewise(ABS);
    FloatVector n = x.max(-24f).min(24f).fma(LOG2E, ROUND).sub(ROUND);
    FloatVector r = n.fma(FloatVector.broadcast(S, -LN2_HI), x);
    r = n.fma(FloatVector.broadcast(S, -LN2_LO), r);
    IntVector ni = (IntVector) n.convert(F2I, 0);
    FloatVector s = ni.add(127).lanewise(LSHL, 23).reinterpretAsFloats();
    FloatVector viaN = s.fma(expm1Poly(r), s.sub(1f));
    FloatVector y = exp(x).sub(1f);
    y = y.blend(viaN, a.compare(LT, 16.5f));
    y = y.blend(expm1Poly(x), a.compare(LT, LN2));
    return y.blend(x, x.test(IS_NAN));
  }

  /**
   * log(1 + x) with Goldberg's correction: u = 1 + x rounds, and log(u) * x / (u - 1) undoes the
   * rounding to first order. Where u is exactly 1, x itself is the answer.
   */
  static FloatVector log1p(FloatVector x) {
    FloatVector u = x.add(1f);
    FloatVector d = u.sub(1f);
    FloatVector r = log(u).mul(x.div(d));
    r = r.blend(x, d.compare(EQ, 0f));
    return r.blend(u, u.compare(EQ, Float.POSITIVE_INFINITY));
  }

  /**
   * tanh(|x|) = -e / (e + 2) with e = expm1(-2|x|) in (-1, 0]: no cancellation anywhere, exact 1
   * in the limit; the sign is put back by select so -0 stays -0.
   */
  static FloatVector tanh(FloatVector x) {
    FloatVector a = x.lanewise(ABS);
    FloatVector e = expm1(a.mul(-2f));
    FloatVector t = e.neg().div(e.add(2f));
    return t.blend(t.neg(), x.compare(LT, 0f)).blend(x, x.test(IS_NAN));
  }

  /** a * b + c with one rounding. */
  private static FloatVector mad(FloatVector a, FloatVector b, float c) {
    return a.fma(b, FloatVector.broadcast(S, c));
  }

  /** Sum of the lanes in lane order: reduceLanes(ADD) may reorder, and differently once compiled. */
  static float laneSum(FloatVector v) {
    float s = v.lane(0);
    for (int i = 1; i < S.length(); i++) s += v.lane(i);
    return s;
  }
}
