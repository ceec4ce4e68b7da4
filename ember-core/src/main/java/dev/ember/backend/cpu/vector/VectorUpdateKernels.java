package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.VectorOperators.F2D;
import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.LT;

import dev.ember.backend.cpu.ScalarUpdateKernels;
import dev.ember.backend.cpu.Slot;
import dev.ember.backend.cpu.UpdateKernels;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The float32 update loops on the Vector API ({@link FloatVector#SPECIES_PREFERRED}), one pass per
 * range with the scalar set finishing the tail. Each lane computes exactly the operations of
 * {@link ScalarUpdateKernels}, in the same order (mul then add, never FMA; sqrt and div are exact;
 * sign via compare and blend), so the results are bitwise equal to the scalar loops. The sums of
 * squares accumulate in per-lane double partials: each {@code (double) x * x} is exact, only the
 * order of the additions differs from the scalar loop.
 *
 * <p>Loaded by name from {@code CpuOptimizer}; nothing else refers to this class, so the optimizers
 * work without {@code jdk.incubator.vector}.
 */
public final class VectorUpdateKernels implements UpdateKernels {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Double> D = VectorSpecies.of(double.class, S.vectorShape());
  private static final int L = S.length();
  private static final ScalarUpdateKernels TAIL = new ScalarUpdateKernels();

  @Override
  public String name() {
    return "vector";
  }

  /** The end of the whole vectors in [lo, hi). */
  private static int bound(int lo, int hi) {
    return lo + S.loopBound(hi - lo);
  }

  private static FloatVector load(float[] a, int i) {
    return FloatVector.fromArray(S, a, i);
  }

  /** Math.signum per lane: 1 above 0, -1 below, x itself for +-0 and NaN. */
  private static FloatVector signum(FloatVector x) {
    return x.blend(1f, x.compare(GT, 0f)).blend(-1f, x.compare(LT, 0f));
  }

  @Override
  public void sgd(Slot p, Slot g, int lo, int hi, float lr, float wd, float sign) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector d = load(ga, go + i).mul(sign).add(x.mul(wd));
      x.sub(d.mul(lr)).intoArray(pa, po + i);
    }
    TAIL.sgd(p, g, i, hi, lr, wd, sign);
  }

  @Override
  public void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, float lr, float wd, float sign, float keep, float add,
      boolean nesterov, float mom) {
    float[] pa = p.f, ga = g.f, ba = b.f;
    int po = p.off, go = g.off, bo = b.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector d = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector buf = load(ba, bo + i).mul(keep).add(d.mul(add));
      buf.intoArray(ba, bo + i);
      FloatVector step = nesterov ? d.add(buf.mul(mom)) : buf;
      x.sub(step.mul(lr)).intoArray(pa, po + i);
    }
    TAIL.sgdMomentum(p, g, b, i, hi, lr, wd, sign, keep, add, nesterov, mom);
  }

  /**
   * The plain case (no maximize, no L2 term, no AMSGrad: Adam and AdamW as usually run) has a loop of its
   * own without the gradient's two extra operations: with the denominator's one division (see
   * {@link UpdateKernels#adam}), a seed_medium Adam step at batch 32 went from 8.1-8.4 to 7.7-7.8 ms.
   */
  @Override
  public void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, float sign, float l2, float decay, float b1,
      float b2, float c1, float c2, float eps, float stepSize, float invBc2Sqrt) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f, xa = vmax == null ? null : vmax.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off, xo = vmax == null ? 0 : vmax.off;
    boolean ams = vmax != null;
    int i = lo;
    int end = bound(lo, hi);
    boolean plain = sign == 1f && l2 == 0f;
    if (plain && !ams) {
      for (; i < end; i += L) {
        FloatVector gi = load(ga, go + i);
        FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
        FloatVector vi = load(va, vo + i).mul(b2).add(gi.mul(c2).mul(gi));
        mi.intoArray(ma, mo + i);
        vi.intoArray(va, vo + i);
        FloatVector denom = vi.sqrt().mul(invBc2Sqrt).add(eps);
        load(pa, po + i).mul(decay).sub(mi.mul(stepSize).div(denom)).intoArray(pa, po + i);
      }
    }
    for (; i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = plain ? load(ga, go + i) : load(ga, go + i).mul(sign).add(x.mul(l2));
      FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
      FloatVector vi = load(va, vo + i).mul(b2).add(gi.mul(c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      if (ams) {
        vi = load(xa, xo + i).max(vi);
        vi.intoArray(xa, xo + i);
      }
      FloatVector denom = vi.sqrt().mul(invBc2Sqrt).add(eps);
      x.mul(decay).sub(mi.mul(stepSize).div(denom)).intoArray(pa, po + i);
    }
    TAIL.adam(p, g, m, v, vmax, i, hi, sign, l2, decay, b1, b2, c1, c2, eps, stepSize, invBc2Sqrt);
  }

  @Override
  public void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float eps, float clr) {
    float[] pa = p.f, ga = g.f, ma = m.f, ua = u.f;
    int po = p.off, go = g.off, mo = m.off, uo = u.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
      FloatVector ui = load(ua, uo + i).mul(b2).max(gi.abs().add(eps));
      mi.intoArray(ma, mo + i);
      ui.intoArray(ua, uo + i);
      x.sub(mi.mul(clr).div(ui)).intoArray(pa, po + i);
    }
    TAIL.adamax(p, g, m, u, i, hi, sign, wd, b1, b2, c1, eps, clr);
  }

  @Override
  public void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, float sign, float wd, float rho, float c, float eps,
      float lr) {
    float[] pa = p.f, ga = g.f, sa = s.f, ua = u.f;
    int po = p.off, go = g.off, so = s.off, uo = u.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector si = load(sa, so + i).mul(rho).add(gi.mul(c).mul(gi));
      si.intoArray(sa, so + i);
      FloatVector ui = load(ua, uo + i);
      FloatVector d = ui.add(eps).sqrt().div(si.add(eps).sqrt()).mul(gi);
      ui.mul(rho).add(d.mul(c).mul(d)).intoArray(ua, uo + i);
      x.sub(d.mul(lr)).intoArray(pa, po + i);
    }
    TAIL.adadelta(p, g, s, u, i, hi, sign, wd, rho, c, eps, lr);
  }

  @Override
  public void adagrad(Slot p, Slot g, Slot s, int lo, int hi, float sign, float wd, float eps, float clr) {
    float[] pa = p.f, ga = g.f, sa = s.f;
    int po = p.off, go = g.off, so = s.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector si = load(sa, so + i).add(gi.mul(gi));
      si.intoArray(sa, so + i);
      x.sub(gi.mul(clr).div(si.sqrt().add(eps))).intoArray(pa, po + i);
    }
    TAIL.adagrad(p, g, s, i, hi, sign, wd, eps, clr);
  }

  @Override
  public void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, float sign, float wd, float alpha, float c,
      float eps, float mom, float lr) {
    boolean centered = a != null, momentum = b != null;
    float[] pa = p.f, ga = g.f, sa = s.f, aa = centered ? a.f : null, ba = momentum ? b.f : null;
    int po = p.off, go = g.off, so = s.off, ao = centered ? a.off : 0, bo = momentum ? b.off : 0;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector si = load(sa, so + i).mul(alpha).add(gi.mul(c).mul(gi));
      si.intoArray(sa, so + i);
      FloatVector var = si;
      if (centered) {
        FloatVector ai = load(aa, ao + i).mul(alpha).add(gi.mul(c));
        ai.intoArray(aa, ao + i);
        var = si.sub(ai.mul(ai));
      }
      FloatVector d = var.sqrt().add(eps);
      if (momentum) {
        FloatVector bi = load(ba, bo + i).mul(mom).add(gi.div(d));
        bi.intoArray(ba, bo + i);
        x.sub(bi.mul(lr)).intoArray(pa, po + i);
      } else {
        x.sub(gi.mul(lr).div(d)).intoArray(pa, po + i);
      }
    }
    TAIL.rmsprop(p, g, s, a, b, i, hi, sign, wd, alpha, c, eps, mom, lr);
  }

  @Override
  public void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float c2, float bc2, float eps, float cg, float cm) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
      FloatVector vi = load(va, vo + i).mul(b2).add(gi.mul(c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector denom = vi.div(bc2).sqrt().add(eps);
      x.sub(gi.mul(cg).div(denom)).sub(mi.mul(cm).div(denom)).intoArray(pa, po + i);
    }
    TAIL.nadam(p, g, m, v, i, hi, sign, wd, b1, b2, c1, c2, bc2, eps, cg, cm);
  }

  @Override
  public void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float sign, float wd, float b1, float b2, float c1,
      float c2, float eps, float scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i).mul(sign).add(x.mul(wd));
      FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
      FloatVector vi = load(va, vo + i).mul(b2).add(gi.mul(c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector step = adaptive ? mi.div(vi.sqrt().add(eps)) : mi;
      x.sub(step.mul(scale)).intoArray(pa, po + i);
    }
    TAIL.radam(p, g, m, v, i, hi, sign, wd, b1, b2, c1, c2, eps, scale, adaptive);
  }

  @Override
  public void lion(Slot p, Slot g, Slot m, int lo, int hi, float sign, float decay, float lr, float b1, float c1, float b2,
      float c2) {
    float[] pa = p.f, ga = g.f, ma = m.f;
    int po = p.off, go = g.off, mo = m.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = load(ga, go + i).mul(sign);
      FloatVector mi = load(ma, mo + i);
      FloatVector dir = signum(mi.mul(b1).add(gi.mul(c1)));
      load(pa, po + i).mul(decay).sub(dir.mul(lr)).intoArray(pa, po + i);
      mi.mul(b2).add(gi.mul(c2)).intoArray(ma, mo + i);
    }
    TAIL.lion(p, g, m, i, hi, sign, decay, lr, b1, c1, b2, c2);
  }

  @Override
  public void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, float b1, float b2, float c1, float c2,
      float bc1, float bc2, float eps, float wd, double[] acc) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int parts = L / D.length();
    DoubleVector pp = DoubleVector.zero(D), rr = DoubleVector.zero(D);
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = load(ga, go + i);
      FloatVector mi = load(ma, mo + i).mul(b1).add(gi.mul(c1));
      FloatVector vi = load(va, vo + i).mul(b2).add(gi.mul(c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector x = load(pa, po + i);
      FloatVector r = mi.div(bc1).div(vi.div(bc2).sqrt().add(eps)).add(x.mul(wd));
      for (int part = 0; part < parts; part++) {
        DoubleVector xd = (DoubleVector) x.convertShape(F2D, D, part);
        DoubleVector rd = (DoubleVector) r.convertShape(F2D, D, part);
        pp = pp.add(xd.mul(xd));
        rr = rr.add(rd.mul(rd));
      }
    }
    acc[0] += laneSum(pp);
    acc[1] += laneSum(rr);
    TAIL.lambMoments(p, g, m, v, i, hi, b1, b2, c1, c2, bc1, bc2, eps, wd, acc);
  }

  @Override
  public void lambApply(Slot p, Slot m, Slot v, int lo, int hi, float bc1, float bc2, float eps, float wd, float scale) {
    float[] pa = p.f, ma = m.f, va = v.f;
    int po = p.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector r = load(ma, mo + i).div(bc1).div(load(va, vo + i).div(bc2).sqrt().add(eps)).add(x.mul(wd));
      x.sub(r.mul(scale)).intoArray(pa, po + i);
    }
    TAIL.lambApply(p, m, v, i, hi, bc1, bc2, eps, wd, scale);
  }

  @Override
  public void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, float decay, float lr, float b1, float sc1,
      float rhoBs) {
    float[] pa = p.f, ga = g.f, ma = m.f, ha = h.f;
    int po = p.off, go = g.off, mo = m.off, ho = h.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector mi = load(ma, mo + i).mul(b1).add(load(ga, go + i).mul(sc1));
      mi.intoArray(ma, mo + i);
      FloatVector ratio = mi.abs().div(load(ha, ho + i).mul(rhoBs).add(1e-15f)).min(1f);
      load(pa, po + i).mul(decay).sub(signum(mi).mul(lr).mul(ratio)).intoArray(pa, po + i);
    }
    TAIL.sophia(p, g, m, h, i, hi, decay, lr, b1, sc1, rhoBs);
  }

  @Override
  public void sophiaEma(Slot h, Slot g, int lo, int hi, float b2, float c) {
    float[] ha = h.f, ga = g.f;
    int ho = h.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = load(ga, go + i);
      load(ha, ho + i).mul(b2).add(gi.mul(c).mul(gi)).intoArray(ha, ho + i);
    }
    TAIL.sophiaEma(h, g, i, hi, b2, c);
  }

  @Override
  public double samSquares(Slot p, Slot g, int lo, int hi, boolean adaptive) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    int parts = L / D.length();
    DoubleVector acc = DoubleVector.zero(D);
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = load(ga, go + i);
      // (adaptive ? |p| : 1) * g; 1 * g is g exactly
      FloatVector w = adaptive ? load(pa, po + i).abs().mul(gi) : gi;
      for (int part = 0; part < parts; part++) {
        DoubleVector wd = (DoubleVector) w.convertShape(F2D, D, part);
        acc = acc.add(wd.mul(wd));
      }
    }
    return laneSum(acc) + TAIL.samSquares(p, g, i, hi, adaptive);
  }

  @Override
  public void samAscend(Slot p, Slot g, int lo, int hi, float scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = load(pa, po + i);
      FloatVector gi = load(ga, go + i);
      FloatVector t = adaptive ? x.mul(x).mul(gi) : gi;
      x.add(t.mul(scale)).intoArray(pa, po + i);
    }
    TAIL.samAscend(p, g, i, hi, scale, adaptive);
  }

  /** Sum of the lanes in lane order: reduceLanes(ADD) rounds differently before and after C2 compiles it. */
  private static double laneSum(DoubleVector v) {
    double s = v.lane(0);
    for (int i = 1; i < v.length(); i++) s += v.lane(i);
    return s;
  }
}
