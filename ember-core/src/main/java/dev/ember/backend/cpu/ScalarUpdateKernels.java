package dev.ember.backend.cpu;

/**
 * The plain-Java update loops: in float32 the reference for {@code VectorUpdateKernels}, the fallback
 * when the Vector API is not available, and the vector set's tail loop; in float64 ({@link F64}) the
 * only loops (gradient checks and reference runs). The float64 loops do in double what the float32 ones
 * do in float, with the coefficients unrounded; a rule reads the same in both.
 */
public final class ScalarUpdateKernels implements UpdateKernels {
  @Override
  public String name() {
    return "scalar";
  }

  @Override
  public void sgd(Slot p, Slot g, int lo, int hi, float lr, float wd, float sign) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float d = sign * ga[go + i] + wd * x;
      pa[po + i] = x - lr * d;
    }
  }

  @Override
  public void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, float lr, float wd, float sign, float keep, float add,
      boolean nesterov, float mom) {
    float[] pa = p.f, ga = g.f, ba = b.f;
    int po = p.off, go = g.off, bo = b.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float d = sign * ga[go + i] + wd * x;
      float buf = keep * ba[bo + i] + add * d;
      ba[bo + i] = buf;
      float step = nesterov ? d + mom * buf : buf;
      pa[po + i] = x - lr * step;
    }
  }

  @Override
  public void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, float sign, float l2, float decay, float b1,
      float b2, float c1, float c2, float eps, float stepSize, float invBc2Sqrt) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    boolean plain = sign == 1f && l2 == 0f;
    boolean ams = vmax != null;
    float[] xa = ams ? vmax.f : null;
    int xo = ams ? vmax.off : 0;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = plain ? ga[go + i] : sign * ga[go + i] + l2 * x;
      float mi = b1 * ma[mo + i] + c1 * gi;
      float vi = b2 * va[vo + i] + c2 * gi * gi;
      ma[mo + i] = mi;
      va[vo + i] = vi;
      if (ams) {
        vi = Math.max(xa[xo + i], vi);
        xa[xo + i] = vi;
      }
      pa[po + i] = x * decay - stepSize * mi / ((float) Math.sqrt(vi) * invBc2Sqrt + eps);
    }
  }

  @Override
  public void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float eps, float clr) {
    float[] pa = p.f, ga = g.f, ma = m.f, ua = u.f;
    int po = p.off, go = g.off, mo = m.off, uo = u.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float mi = b1 * ma[mo + i] + c1 * gi;
      float ui = Math.max(b2 * ua[uo + i], Math.abs(gi) + eps);
      ma[mo + i] = mi;
      ua[uo + i] = ui;
      pa[po + i] = x - clr * mi / ui;
    }
  }

  @Override
  public void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, float sign, float wd, float rho, float c, float eps,
      float lr) {
    float[] pa = p.f, ga = g.f, sa = s.f, ua = u.f;
    int po = p.off, go = g.off, so = s.off, uo = u.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float si = rho * sa[so + i] + c * gi * gi;
      sa[so + i] = si;
      float ui = ua[uo + i];
      float d = (float) Math.sqrt(ui + eps) / (float) Math.sqrt(si + eps) * gi;
      ua[uo + i] = rho * ui + c * d * d;
      pa[po + i] = x - lr * d;
    }
  }

  @Override
  public void adagrad(Slot p, Slot g, Slot s, int lo, int hi, float sign, float wd, float eps, float clr) {
    float[] pa = p.f, ga = g.f, sa = s.f;
    int po = p.off, go = g.off, so = s.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float si = sa[so + i] + gi * gi;
      sa[so + i] = si;
      pa[po + i] = x - clr * gi / ((float) Math.sqrt(si) + eps);
    }
  }

  @Override
  public void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, float sign, float wd, float alpha, float c,
      float eps, float mom, float lr) {
    boolean centered = a != null, momentum = b != null;
    float[] pa = p.f, ga = g.f, sa = s.f, aa = centered ? a.f : null, ba = momentum ? b.f : null;
    int po = p.off, go = g.off, so = s.off, ao = centered ? a.off : 0, bo = momentum ? b.off : 0;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float si = alpha * sa[so + i] + c * gi * gi;
      sa[so + i] = si;
      float var = si;
      if (centered) {
        float ai = alpha * aa[ao + i] + c * gi;
        aa[ao + i] = ai;
        var = si - ai * ai;
      }
      float d = (float) Math.sqrt(var) + eps;
      if (momentum) {
        float bi = mom * ba[bo + i] + gi / d;
        ba[bo + i] = bi;
        pa[po + i] = x - lr * bi;
      } else {
        pa[po + i] = x - lr * gi / d;
      }
    }
  }

  @Override
  public void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float c2, float bc2, float eps, float cg, float cm) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float mi = b1 * ma[mo + i] + c1 * gi;
      float vi = b2 * va[vo + i] + c2 * gi * gi;
      ma[mo + i] = mi;
      va[vo + i] = vi;
      float denom = (float) Math.sqrt(vi / bc2) + eps;
      pa[po + i] = x - cg * gi / denom - cm * mi / denom;
    }
  }

  @Override
  public void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float c2, float eps, float scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float gi = sign * ga[go + i] + wd * x;
      float mi = b1 * ma[mo + i] + c1 * gi;
      float vi = b2 * va[vo + i] + c2 * gi * gi;
      ma[mo + i] = mi;
      va[vo + i] = vi;
      float step = adaptive ? mi / ((float) Math.sqrt(vi) + eps) : mi;
      pa[po + i] = x - scale * step;
    }
  }

  @Override
  public void lion(Slot p, Slot g, Slot m, int lo, int hi, float sign, float decay, float lr, float b1, float c1, float b2,
      float c2) {
    float[] pa = p.f, ga = g.f, ma = m.f;
    int po = p.off, go = g.off, mo = m.off;
    for (int i = lo; i < hi; i++) {
      float gi = sign * ga[go + i];
      float mi = ma[mo + i];
      pa[po + i] = pa[po + i] * decay - lr * Math.signum(b1 * mi + c1 * gi);
      ma[mo + i] = b2 * mi + c2 * gi;
    }
  }

  @Override
  public void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float b1, float b2, float c1, float c2,
      float bc1, float bc2, float eps, float wd, double[] acc) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    double pp = 0, rr = 0;
    for (int i = lo; i < hi; i++) {
      float gi = ga[go + i];
      float mi = b1 * ma[mo + i] + c1 * gi;
      float vi = b2 * va[vo + i] + c2 * gi * gi;
      ma[mo + i] = mi;
      va[vo + i] = vi;
      float x = pa[po + i];
      float r = (mi / bc1) / ((float) Math.sqrt(vi / bc2) + eps) + wd * x;
      pp += (double) x * x;
      rr += (double) r * r;
    }
    acc[0] += pp;
    acc[1] += rr;
  }

  @Override
  public void lambApply(Slot p, Slot m, Slot v, int lo, int hi, float bc1, float bc2, float eps, float wd, float scale) {
    float[] pa = p.f, ma = m.f, va = v.f;
    int po = p.off, mo = m.off, vo = v.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      float r = (ma[mo + i] / bc1) / ((float) Math.sqrt(va[vo + i] / bc2) + eps) + wd * x;
      pa[po + i] = x - scale * r;
    }
  }

  @Override
  public void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, float decay, float lr, float b1, float sc1,
      float rhoBs) {
    float[] pa = p.f, ga = g.f, ma = m.f, ha = h.f;
    int po = p.off, go = g.off, mo = m.off, ho = h.off;
    for (int i = lo; i < hi; i++) {
      float mi = b1 * ma[mo + i] + sc1 * ga[go + i];
      ma[mo + i] = mi;
      float ratio = Math.min(Math.abs(mi) / (rhoBs * ha[ho + i] + 1e-15f), 1f);
      pa[po + i] = pa[po + i] * decay - lr * Math.signum(mi) * ratio;
    }
  }

  @Override
  public void sophiaEma(Slot h, Slot g, int lo, int hi, float b2, float c) {
    float[] ha = h.f, ga = g.f;
    int ho = h.off, go = g.off;
    for (int i = lo; i < hi; i++) ha[ho + i] = b2 * ha[ho + i] + c * ga[go + i] * ga[go + i];
  }

  @Override
  public double samSquares(Slot p, Slot g, int lo, int hi, boolean adaptive) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    double s = 0;
    for (int i = lo; i < hi; i++) {
      float v = (adaptive ? Math.abs(pa[po + i]) : 1f) * ga[go + i];
      s += (double) v * v;
    }
    return s;
  }

  @Override
  public void samAscend(Slot p, Slot g, int lo, int hi, float scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    for (int i = lo; i < hi; i++) {
      float x = pa[po + i];
      pa[po + i] = x + (adaptive ? x * x : 1f) * ga[go + i] * scale;
    }
  }

  /** The float64 update loops: each rule of the enclosing class in double. */
  static final class F64 {
    private F64() {}

    static void sgd(Slot p, Slot g, int lo, int hi, double lr, double wd, double sign) {
      double[] pa = p.d, ga = g.d;
      int po = p.off, go = g.off;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double d = sign * ga[go + i] + wd * x;
        pa[po + i] = x - lr * d;
      }
    }

    static void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, double lr, double wd, double sign, double keep,
        double add, boolean nesterov, double mom) {
      double[] pa = p.d, ga = g.d, ba = b.d;
      int po = p.off, go = g.off, bo = b.off;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double d = sign * ga[go + i] + wd * x;
        double buf = keep * ba[bo + i] + add * d;
        ba[bo + i] = buf;
        double step = nesterov ? d + mom * buf : buf;
        pa[po + i] = x - lr * step;
      }
    }

    static void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, double sign, double l2, double decay,
        double b1, double b2, double eps, double stepSize, double invBc2Sqrt) {
      int po = p.off, go = g.off, mo = m.off, vo = v.off;
      boolean ams = vmax != null;
      int xo = ams ? vmax.off : 0;
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d, xa = ams ? vmax.d : null;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + l2 * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        if (ams) {
          vi = Math.max(xa[xo + i], vi);
          xa[xo + i] = vi;
        }
        double denom = Math.sqrt(vi) * invBc2Sqrt + eps;
        pa[po + i] = x * decay - stepSize * mi / denom;
      }
    }

    static void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, double sign, double wd, double b1, double b2,
        double eps, double clr) {
      int po = p.off, go = g.off, mo = m.off, uo = u.off;
      double[] pa = p.d, ga = g.d, ma = m.d, ua = u.d;
      double c1 = 1 - b1;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double ui = Math.max(b2 * ua[uo + i], Math.abs(gi) + eps);
        ma[mo + i] = mi;
        ua[uo + i] = ui;
        pa[po + i] = x - clr * mi / ui;
      }
    }

    static void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, double sign, double wd, double rho, double eps,
        double lr) {
      int po = p.off, go = g.off, so = s.off, uo = u.off;
      double[] pa = p.d, ga = g.d, sa = s.d, ua = u.d;
      double c = 1 - rho;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = rho * sa[so + i] + c * gi * gi;
        sa[so + i] = si;
        double ui = ua[uo + i];
        double d = Math.sqrt(ui + eps) / Math.sqrt(si + eps) * gi;
        ua[uo + i] = rho * ui + c * d * d;
        pa[po + i] = x - lr * d;
      }
    }

    static void adagrad(Slot p, Slot g, Slot s, int lo, int hi, double sign, double wd, double eps, double clr) {
      int po = p.off, go = g.off, so = s.off;
      double[] pa = p.d, ga = g.d, sa = s.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = sa[so + i] + gi * gi;
        sa[so + i] = si;
        pa[po + i] = x - clr * gi / (Math.sqrt(si) + eps);
      }
    }

    static void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, double sign, double wd, double alpha,
        double eps, double mom, double lr) {
      boolean centered = a != null, momentum = b != null;
      int po = p.off, go = g.off, so = s.off, ao = centered ? a.off : 0, bo = momentum ? b.off : 0;
      double[] pa = p.d, ga = g.d, sa = s.d, aa = centered ? a.d : null, ba = momentum ? b.d : null;
      double c = 1 - alpha;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double si = alpha * sa[so + i] + c * gi * gi;
        sa[so + i] = si;
        double var = si;
        if (centered) {
          double ai = alpha * aa[ao + i] + c * gi;
          aa[ao + i] = ai;
          var = si - ai * ai;
        }
        double d = Math.sqrt(var) + eps;
        if (momentum) {
          double bi = mom * ba[bo + i] + gi / d;
          ba[bo + i] = bi;
          pa[po + i] = x - lr * bi;
        } else {
          pa[po + i] = x - lr * gi / d;
        }
      }
    }

    static void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
        double bc2, double eps, double cg, double cm) {
      int po = p.off, go = g.off, mo = m.off, vo = v.off;
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        double denom = Math.sqrt(vi / bc2) + eps;
        pa[po + i] = x - cg * gi / denom - cm * mi / denom;
      }
    }

    static void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
        double eps, double scale, boolean adaptive) {
      int po = p.off, go = g.off, mo = m.off, vo = v.off;
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        double gi = sign * ga[go + i] + wd * x;
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        double step = adaptive ? mi / (Math.sqrt(vi) + eps) : mi;
        pa[po + i] = x - scale * step;
      }
    }

    static void lion(Slot p, Slot g, Slot m, int lo, int hi, double sign, double decay, double lr, double b1, double b2) {
      int po = p.off, go = g.off, mo = m.off;
      double[] pa = p.d, ga = g.d, ma = m.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double gi = sign * ga[go + i];
        double mi = ma[mo + i];
        pa[po + i] = pa[po + i] * decay - lr * Math.signum(b1 * mi + c1 * gi);
        ma[mo + i] = b2 * mi + c2 * gi;
      }
    }

    static void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double b1, double b2, double bc1,
        double bc2, double eps, double wd, double[] acc) {
      int po = p.off, go = g.off, mo = m.off, vo = v.off;
      double pp = 0, rr = 0;
      double[] pa = p.d, ga = g.d, ma = m.d, va = v.d;
      double c1 = 1 - b1, c2 = 1 - b2;
      for (int i = lo; i < hi; i++) {
        double gi = ga[go + i];
        double mi = b1 * ma[mo + i] + c1 * gi;
        double vi = b2 * va[vo + i] + c2 * gi * gi;
        ma[mo + i] = mi;
        va[vo + i] = vi;
        double x = pa[po + i];
        double r = (mi / bc1) / (Math.sqrt(vi / bc2) + eps) + wd * x;
        pp += x * x;
        rr += r * r;
      }
      acc[0] += pp;
      acc[1] += rr;
    }

    static void lambApply(Slot p, Slot m, Slot v, int lo, int hi, double bc1, double bc2, double eps, double wd,
        double scale) {
      int po = p.off, mo = m.off, vo = v.off;
      double[] pa = p.d, ma = m.d, va = v.d;
      for (int i = lo; i < hi; i++) {
        double x = pa[po + i];
        pa[po + i] = x - scale * ((ma[mo + i] / bc1) / (Math.sqrt(va[vo + i] / bc2) + eps) + wd * x);
      }
    }

    static void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, double sign, double decay, double lr, double b1,
        double rhoBs) {
      int po = p.off, go = g.off, mo = m.off, ho = h.off;
      double[] pa = p.d, ga = g.d, ma = m.d, ha = h.d;
      double c1 = 1 - b1;
      for (int i = lo; i < hi; i++) {
        double mi = b1 * ma[mo + i] + c1 * sign * ga[go + i];
        ma[mo + i] = mi;
        double ratio = Math.min(Math.abs(mi) / (rhoBs * ha[ho + i] + 1e-15), 1);
        pa[po + i] = pa[po + i] * decay - lr * Math.signum(mi) * ratio;
      }
    }

    static void sophiaEma(Slot h, Slot g, int lo, int hi, double b2) {
      int ho = h.off, go = g.off;
      double[] ha = h.d, ga = g.d;
      double c = 1 - b2;
      for (int i = lo; i < hi; i++) ha[ho + i] = b2 * ha[ho + i] + c * ga[go + i] * ga[go + i];
    }

    static double samSquares(Slot p, Slot g, int lo, int hi, boolean adaptive) {
      double s = 0;
      for (int i = lo; i < hi; i++) {
        double v = (adaptive ? Math.abs(p.d[p.off + i]) : 1) * g.d[g.off + i];
        s += v * v;
      }
      return s;
    }

    static void samAscend(Slot p, Slot g, int lo, int hi, double scale, boolean adaptive) {
      for (int i = lo; i < hi; i++) {
        double x = p.d[p.off + i];
        p.d[p.off + i] = x + (adaptive ? x * x : 1) * g.d[g.off + i] * scale;
      }
    }
  }
}
