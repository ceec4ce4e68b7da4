package dev.ember.backend.cpu;

/**
 * The plain-Java update loops, each rule written once for both floating dtypes: {@link #F32} is the
 * reference for {@code VectorUpdateKernels}, the fallback when the Vector API is not available and the
 * vector set's tail loop; {@link #F64} is the only float64 set (gradient checks, reference runs).
 *
 * <p>Note [one rule, two dtypes]: the loops compute in double and round ({@code r}) every result of an
 * operation to the dtype, which is the identity in float64. In float32 that gives the bits of the same
 * expression in float: the operands are floats, and a +, -, *, / or sqrt of floats taken in double and
 * rounded to float is the correctly rounded float result (double has more than 2 * 24 + 2 significant
 * bits, so the double rounding is innocuous), while max, min, abs and signum are exact. The coefficients
 * of a float32 call are floats (see {@link UpdateKernels}). OptimKernelsTest holds the float32 set to the
 * vector set's bits.
 *
 * <p>The price of one copy: float32 taken this way runs about 3-4x slower than a loop in float did (Adam on
 * 64K floats, 0.55 against 2.1 ms per call on the 2-core dev box, under load), since C2 neither keeps it in
 * float nor vectorizes it. It runs only where the Vector API is missing (where the GEMMs are several times
 * slower already) and on the vector loops' tails; float64 runs as fast as before.
 */
public final class ScalarUpdateKernels implements UpdateKernels {
  /** The float32 loops: slots hold float arrays, every operation rounds to float. */
  public static final ScalarUpdateKernels F32 = new ScalarUpdateKernels(true);
  /** The float64 loops: slots hold double arrays. */
  public static final ScalarUpdateKernels F64 = new ScalarUpdateKernels(false);

  private final boolean f32;

  private ScalarUpdateKernels(boolean f32) {
    this.f32 = f32;
  }

  @Override
  public String name() {
    return f32 ? "scalar" : "scalar-f64";
  }

  // ------------------------------------------------------------------ the arithmetic of the dtype

  /** v rounded to the dtype (see Note [one rule, two dtypes]). */
  private double r(double v) {
    return f32 ? (float) v : v;
  }

  private double add(double a, double b) {
    return r(a + b);
  }

  private double sub(double a, double b) {
    return r(a - b);
  }

  private double mul(double a, double b) {
    return r(a * b);
  }

  private double div(double a, double b) {
    return r(a / b);
  }

  private double sqrt(double a) {
    return r(Math.sqrt(a));
  }

  /** Element i of s. */
  private double ld(Slot s, int i) {
    return f32 ? s.f[s.off + i] : s.d[s.off + i];
  }

  /** Writes v, already of the dtype, to element i of s. */
  private void st(Slot s, int i, double v) {
    if (f32) s.f[s.off + i] = (float) v;
    else s.d[s.off + i] = v;
  }

  // ------------------------------------------------------------------ the rules

  @Override
  public void sgd(Slot p, Slot g, int lo, int hi, double lr, double wd, double sign) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double d = add(mul(sign, ld(g, i)), mul(wd, x));
      st(p, i, sub(x, mul(lr, d)));
    }
  }

  /** In float32 the products a decaying buffer reaches take no subnormal, as in {@link #adam} (UpdateKernels.sgdMomentum). */
  @Override
  public void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, double lr, double wd, double sign, double keep,
      double add, boolean nesterov, double mom) {
    double fsg = floor(sign), fk = floor(keep), fmo = floor(mom), flr = floor(lr);
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double d = add(mul(sign, flush(ld(g, i), fsg)), mul(wd, x));
      double buf = add(mul(keep, flush(ld(b, i), fk)), mul(add, d));
      st(b, i, buf);
      double step = nesterov ? add(d, mul(mom, flush(buf, fmo))) : buf;
      st(p, i, sub(x, mul(lr, flush(step, flr))));
    }
  }

  /**
   * In float32, without maximize or an L2 term the gradient is used as it is (as torch does with
   * weight_decay 0): {@code sign * g + 0 * x} would turn an infinite parameter's moments into NaN. Float64
   * keeps the two operations, as it always has.
   */
  @Override
  public void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, double sign, double l2, double decay,
      double b1, double b2, double c1, double c2, double eps, double stepSize, double invBc2Sqrt) {
    boolean plain = f32 && sign == 1 && l2 == 0;
    boolean ams = vmax != null;
    // float32: operands below these are taken as 0 (see UpdateKernels.adam); float64: 0, every term computed
    double floor = f32 ? UpdateKernels.adamSquareFloor(c2) : 0;
    double fm = floor(b1), fg = floor(c1), fv = floor(b2), fs = floor(stepSize), fsg = floor(sign), fl = floor(l2);
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = plain ? ld(g, i) : add(mul(sign, flush(ld(g, i), fsg)), mul(l2, flush(x, fl)));
      double mi = add(mul(b1, flush(ld(m, i), fm)), mul(c1, flush(gi, fg)));
      double gs = flush(gi, floor);
      double vi = add(mul(b2, flush(ld(v, i), fv)), mul(mul(c2, gs), gs));
      st(m, i, mi);
      st(v, i, vi);
      if (ams) {
        vi = Math.max(ld(vmax, i), vi);
        st(vmax, i, vi);
      }
      st(p, i, sub(mul(x, decay), div(mul(stepSize, flush(mi, fs)), add(mul(sqrt(vi), invBc2Sqrt), eps))));
    }
  }

  /** In float32 {@link UpdateKernels#productFloor}{@code (c)}; in float64 0 (nothing is flushed). */
  private double floor(double c) {
    return f32 ? UpdateKernels.productFloor(c) : 0;
  }

  /** {@code a}, or 0 where its magnitude is below {@code floor} (NaN stays NaN). */
  private static double flush(double a, double floor) {
    return Math.abs(a) < floor ? 0 : a;
  }

  @Override
  public void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double eps, double clr) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double mi = add(mul(b1, ld(m, i)), mul(c1, gi));
      double ui = Math.max(mul(b2, ld(u, i)), add(Math.abs(gi), eps));
      st(m, i, mi);
      st(u, i, ui);
      st(p, i, sub(x, div(mul(clr, mi), ui)));
    }
  }

  @Override
  public void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, double sign, double wd, double rho, double c,
      double eps, double lr) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double si = add(mul(rho, ld(s, i)), mul(mul(c, gi), gi));
      st(s, i, si);
      double ui = ld(u, i);
      double d = mul(div(sqrt(add(ui, eps)), sqrt(add(si, eps))), gi);
      st(u, i, add(mul(rho, ui), mul(mul(c, d), d)));
      st(p, i, sub(x, mul(lr, d)));
    }
  }

  @Override
  public void adagrad(Slot p, Slot g, Slot s, int lo, int hi, double sign, double wd, double eps, double clr) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double si = add(ld(s, i), mul(gi, gi));
      st(s, i, si);
      st(p, i, sub(x, div(mul(clr, gi), add(sqrt(si), eps))));
    }
  }

  @Override
  public void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, double sign, double wd, double alpha,
      double c, double eps, double mom, double lr) {
    boolean centered = a != null, momentum = b != null;
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double si = add(mul(alpha, ld(s, i)), mul(mul(c, gi), gi));
      st(s, i, si);
      double var = si;
      if (centered) {
        double ai = add(mul(alpha, ld(a, i)), mul(c, gi));
        st(a, i, ai);
        var = sub(si, mul(ai, ai));
      }
      double d = add(sqrt(var), eps);
      if (momentum) {
        double bi = add(mul(mom, ld(b, i)), div(gi, d));
        st(b, i, bi);
        st(p, i, sub(x, mul(lr, bi)));
      } else {
        st(p, i, sub(x, div(mul(lr, gi), d)));
      }
    }
  }

  @Override
  public void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double c2, double bc2, double eps, double cg, double cm) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double mi = add(mul(b1, ld(m, i)), mul(c1, gi));
      double vi = add(mul(b2, ld(v, i)), mul(mul(c2, gi), gi));
      st(m, i, mi);
      st(v, i, vi);
      double denom = add(sqrt(div(vi, bc2)), eps);
      st(p, i, sub(sub(x, div(mul(cg, gi), denom)), div(mul(cm, mi), denom)));
    }
  }

  @Override
  public void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double c2, double eps, double scale, boolean adaptive) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double gi = add(mul(sign, ld(g, i)), mul(wd, x));
      double mi = add(mul(b1, ld(m, i)), mul(c1, gi));
      double vi = add(mul(b2, ld(v, i)), mul(mul(c2, gi), gi));
      st(m, i, mi);
      st(v, i, vi);
      double step = adaptive ? div(mi, add(sqrt(vi), eps)) : mi;
      st(p, i, sub(x, mul(scale, step)));
    }
  }

  @Override
  public void lion(Slot p, Slot g, Slot m, int lo, int hi, double sign, double decay, double lr, double b1, double c1,
      double b2, double c2) {
    for (int i = lo; i < hi; i++) {
      double gi = mul(sign, ld(g, i));
      double mi = ld(m, i);
      st(p, i, sub(mul(ld(p, i), decay), mul(lr, Math.signum(add(mul(b1, mi), mul(c1, gi))))));
      st(m, i, add(mul(b2, mi), mul(c2, gi)));
    }
  }

  /** The squares are exact in double for float32 elements, so both dtypes accumulate {@code x * x} unrounded. */
  @Override
  public void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double b1, double b2, double c1, double c2,
      double bc1, double bc2, double eps, double wd, double[] acc) {
    double pp = 0, rr = 0;
    for (int i = lo; i < hi; i++) {
      double gi = ld(g, i);
      double mi = add(mul(b1, ld(m, i)), mul(c1, gi));
      double vi = add(mul(b2, ld(v, i)), mul(mul(c2, gi), gi));
      st(m, i, mi);
      st(v, i, vi);
      double x = ld(p, i);
      double r = add(div(div(mi, bc1), add(sqrt(div(vi, bc2)), eps)), mul(wd, x));
      pp += x * x;
      rr += r * r;
    }
    acc[0] += pp;
    acc[1] += rr;
  }

  @Override
  public void lambApply(Slot p, Slot m, Slot v, int lo, int hi, double bc1, double bc2, double eps, double wd,
      double scale) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      double r = add(div(div(ld(m, i), bc1), add(sqrt(div(ld(v, i), bc2)), eps)), mul(wd, x));
      st(p, i, sub(x, mul(scale, r)));
    }
  }

  @Override
  public void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, double decay, double lr, double b1, double sc1,
      double rhoBs) {
    double tiny = r(1e-15);
    for (int i = lo; i < hi; i++) {
      double mi = add(mul(b1, ld(m, i)), mul(sc1, ld(g, i)));
      st(m, i, mi);
      double ratio = Math.min(div(Math.abs(mi), add(mul(rhoBs, ld(h, i)), tiny)), 1);
      st(p, i, sub(mul(ld(p, i), decay), mul(mul(lr, Math.signum(mi)), ratio)));
    }
  }

  @Override
  public void sophiaEma(Slot h, Slot g, int lo, int hi, double b2, double c) {
    for (int i = lo; i < hi; i++) st(h, i, add(mul(b2, ld(h, i)), mul(mul(c, ld(g, i)), ld(g, i))));
  }

  @Override
  public double samSquares(Slot p, Slot g, int lo, int hi, boolean adaptive) {
    double s = 0;
    for (int i = lo; i < hi; i++) {
      double v = mul(adaptive ? Math.abs(ld(p, i)) : 1, ld(g, i));
      s += v * v;
    }
    return s;
  }

  @Override
  public void samAscend(Slot p, Slot g, int lo, int hi, double scale, boolean adaptive) {
    for (int i = lo; i < hi; i++) {
      double x = ld(p, i);
      st(p, i, add(x, mul(mul(adaptive ? mul(x, x) : 1, ld(g, i)), scale)));
    }
  }
}
