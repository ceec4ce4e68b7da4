package dev.ember.optim;

/**
 * The plain-Java float32 update loops: the reference for {@code VectorUpdateKernels}, the fallback
 * when the Vector API is not available, and the vector set's tail loop.
 */
final class ScalarUpdateKernels implements UpdateKernels {
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
}
