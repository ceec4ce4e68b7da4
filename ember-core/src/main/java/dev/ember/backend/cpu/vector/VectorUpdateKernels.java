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
  private static final ScalarUpdateKernels TAIL = ScalarUpdateKernels.F32;

  @Override
  public String name() {
    return "vector";
  }

  /** The end of the whole vectors in [lo, hi). */
  private static int bound(int lo, int hi) {
    return lo + S.loopBound(hi - lo);
  }

  @Override
  public void sgd(Slot p, Slot g, int lo, int hi, double lr, double wd, double sign) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector d = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      x.sub(d.mul((float) lr)).intoArray(pa, po + i);
    }
    TAIL.sgd(p, g, i, hi, lr, wd, sign);
  }

  @Override
  public void sgdMomentum(Slot p, Slot g, Slot b, int lo, int hi, double lr, double wd, double sign, double keep,
      double add, boolean nesterov, double mom) {
    float[] pa = p.f, ga = g.f, ba = b.f;
    int po = p.off, go = g.off, bo = b.off;
    int i = lo;
    // operands below these floors are taken as 0, written out as in adam (UpdateKernels.sgdMomentum)
    float fsg = (float) UpdateKernels.productFloor(sign), fk = (float) UpdateKernels.productFloor(keep);
    float fmo = (float) UpdateKernels.productFloor(mom), flr = (float) UpdateKernels.productFloor(lr);
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      FloatVector d = gi.blend(0f, gi.abs().compare(LT, fsg)).mul((float) sign).add(x.mul((float) wd));
      FloatVector b0 = FloatVector.fromArray(S, ba, bo + i);
      FloatVector buf = b0.blend(0f, b0.abs().compare(LT, fk)).mul((float) keep).add(d.mul((float) add));
      buf.intoArray(ba, bo + i);
      FloatVector step = nesterov ? d.add(buf.blend(0f, buf.abs().compare(LT, fmo)).mul((float) mom)) : buf;
      x.sub(step.blend(0f, step.abs().compare(LT, flr)).mul((float) lr)).intoArray(pa, po + i);
    }
    TAIL.sgdMomentum(p, g, b, i, hi, lr, wd, sign, keep, add, nesterov, mom);
  }

  /**
   * The plain case (no maximize, no L2 term, no AMSGrad: Adam and AdamW as usually run) has a loop of its
   * own without the gradient's two extra operations: with the denominator's one division (see
   * {@link UpdateKernels#adam}), a seed_medium Adam step at batch 32 went from 8.1-8.4 to 7.7-7.8 ms.
   * The second moment's term {@code c2 * g * g} is flushed to zero where it would be below the smallest
   * normal float ({@link UpdateKernels#adamSquareFloor}): on Intel a subnormal product costs a microcode
   * assist, and once a model fits its batch most gradients are that small (a seed_large Adam step went
   * from ~0.2 to ~0.9 s). The other products a fitted model drives there take operands flushed the same way
   * below their {@link UpdateKernels#productFloor}: the first moments of weights whose gradient stays 0 decay
   * through the subnormals otherwise (a seed_medium AdamW step at batch 32 went from ~47 to ~108 ms while they
   * did; 4M elements in a fitted state, m = 1e-40: 44 against 5.0-5.5 ms of thread CPU). On normal values the
   * flushes cost 5-15% of the loop (4.8 against 5.1-5.5 ms, loaded host), so the parameter's and the sums' are
   * left out.
   */
  @Override
  public void adam(Slot p, Slot g, Slot m, Slot v, Slot vmax, int lo, int hi, double sign, double l2, double decay,
      double b1, double b2, double c1, double c2, double eps, double stepSize, double invBc2Sqrt) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f, xa = vmax == null ? null : vmax.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off, xo = vmax == null ? 0 : vmax.off;
    boolean ams = vmax != null;
    int i = lo;
    int end = bound(lo, hi);
    boolean plain = sign == 1 && l2 == 0;
    // operands below these floors are taken as 0: the products a fitted model reaches take no subnormal (UpdateKernels.adam)
    float floor = (float) UpdateKernels.adamSquareFloor(c2);
    float fm = (float) UpdateKernels.productFloor(b1), fg = (float) UpdateKernels.productFloor(c1);
    float fv = (float) UpdateKernels.productFloor(b2), fs = (float) UpdateKernels.productFloor(stepSize);
    float fsg = (float) UpdateKernels.productFloor(sign), fl = (float) UpdateKernels.productFloor(l2);
    // each flush below is a.blend(0f, a.abs().compare(LT, floor)), written out: no vector crosses a method boundary
    if (plain && !ams) {
      for (; i < end; i += L) {
        FloatVector gi = FloatVector.fromArray(S, ga, go + i);
        FloatVector m0 = FloatVector.fromArray(S, ma, mo + i);
        FloatVector mi = m0.blend(0f, m0.abs().compare(LT, fm)).mul((float) b1)
            .add(gi.blend(0f, gi.abs().compare(LT, fg)).mul((float) c1));
        FloatVector gs = gi.blend(0f, gi.abs().compare(LT, floor));
        FloatVector v0 = FloatVector.fromArray(S, va, vo + i);
        FloatVector vi = v0.blend(0f, v0.abs().compare(LT, fv)).mul((float) b2).add(gs.mul((float) c2).mul(gs));
        mi.intoArray(ma, mo + i);
        vi.intoArray(va, vo + i);
        FloatVector denom = vi.sqrt().mul((float) invBc2Sqrt).add((float) eps);
        FloatVector.fromArray(S, pa, po + i).mul((float) decay)
            .sub(mi.blend(0f, mi.abs().compare(LT, fs)).mul((float) stepSize).div(denom)).intoArray(pa, po + i);
      }
    }
    for (; i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      if (!plain) {
        gi = gi.blend(0f, gi.abs().compare(LT, fsg)).mul((float) sign)
            .add(x.blend(0f, x.abs().compare(LT, fl)).mul((float) l2));
      }
      FloatVector m0 = FloatVector.fromArray(S, ma, mo + i);
      FloatVector mi = m0.blend(0f, m0.abs().compare(LT, fm)).mul((float) b1)
          .add(gi.blend(0f, gi.abs().compare(LT, fg)).mul((float) c1));
      FloatVector gs = gi.blend(0f, gi.abs().compare(LT, floor));
      FloatVector v0 = FloatVector.fromArray(S, va, vo + i);
      FloatVector vi = v0.blend(0f, v0.abs().compare(LT, fv)).mul((float) b2).add(gs.mul((float) c2).mul(gs));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      if (ams) {
        vi = FloatVector.fromArray(S, xa, xo + i).max(vi);
        vi.intoArray(xa, xo + i);
      }
      FloatVector denom = vi.sqrt().mul((float) invBc2Sqrt).add((float) eps);
      x.mul((float) decay).sub(mi.blend(0f, mi.abs().compare(LT, fs)).mul((float) stepSize).div(denom))
          .intoArray(pa, po + i);
    }
    TAIL.adam(p, g, m, v, vmax, i, hi, sign, l2, decay, b1, b2, c1, c2, eps, stepSize, invBc2Sqrt);
  }

  @Override
  public void adamax(Slot p, Slot g, Slot m, Slot u, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double eps, double clr) {
    float[] pa = p.f, ga = g.f, ma = m.f, ua = u.f;
    int po = p.off, go = g.off, mo = m.off, uo = u.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i).mul((float) b1).add(gi.mul((float) c1));
      FloatVector ui = FloatVector.fromArray(S, ua, uo + i).mul((float) b2).max(gi.abs().add((float) eps));
      mi.intoArray(ma, mo + i);
      ui.intoArray(ua, uo + i);
      x.sub(mi.mul((float) clr).div(ui)).intoArray(pa, po + i);
    }
    TAIL.adamax(p, g, m, u, i, hi, sign, wd, b1, b2, c1, eps, clr);
  }

  @Override
  public void adadelta(Slot p, Slot g, Slot s, Slot u, int lo, int hi, double sign, double wd, double rho, double c,
      double eps, double lr) {
    float[] pa = p.f, ga = g.f, sa = s.f, ua = u.f;
    int po = p.off, go = g.off, so = s.off, uo = u.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector si = FloatVector.fromArray(S, sa, so + i).mul((float) rho).add(gi.mul((float) c).mul(gi));
      si.intoArray(sa, so + i);
      FloatVector ui = FloatVector.fromArray(S, ua, uo + i);
      FloatVector d = ui.add((float) eps).sqrt().div(si.add((float) eps).sqrt()).mul(gi);
      ui.mul((float) rho).add(d.mul((float) c).mul(d)).intoArray(ua, uo + i);
      x.sub(d.mul((float) lr)).intoArray(pa, po + i);
    }
    TAIL.adadelta(p, g, s, u, i, hi, sign, wd, rho, c, eps, lr);
  }

  @Override
  public void adagrad(Slot p, Slot g, Slot s, int lo, int hi, double sign, double wd, double eps, double clr) {
    float[] pa = p.f, ga = g.f, sa = s.f;
    int po = p.off, go = g.off, so = s.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector si = FloatVector.fromArray(S, sa, so + i).add(gi.mul(gi));
      si.intoArray(sa, so + i);
      x.sub(gi.mul((float) clr).div(si.sqrt().add((float) eps))).intoArray(pa, po + i);
    }
    TAIL.adagrad(p, g, s, i, hi, sign, wd, eps, clr);
  }

  @Override
  public void rmsprop(Slot p, Slot g, Slot s, Slot a, Slot b, int lo, int hi, double sign, double wd, double alpha,
      double c, double eps, double mom, double lr) {
    boolean centered = a != null, momentum = b != null;
    float[] pa = p.f, ga = g.f, sa = s.f, aa = centered ? a.f : null, ba = momentum ? b.f : null;
    int po = p.off, go = g.off, so = s.off, ao = centered ? a.off : 0, bo = momentum ? b.off : 0;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector si = FloatVector.fromArray(S, sa, so + i).mul((float) alpha).add(gi.mul((float) c).mul(gi));
      si.intoArray(sa, so + i);
      FloatVector var = si;
      if (centered) {
        FloatVector ai = FloatVector.fromArray(S, aa, ao + i).mul((float) alpha).add(gi.mul((float) c));
        ai.intoArray(aa, ao + i);
        var = si.sub(ai.mul(ai));
      }
      FloatVector d = var.sqrt().add((float) eps);
      if (momentum) {
        FloatVector bi = FloatVector.fromArray(S, ba, bo + i).mul((float) mom).add(gi.div(d));
        bi.intoArray(ba, bo + i);
        x.sub(bi.mul((float) lr)).intoArray(pa, po + i);
      } else {
        x.sub(gi.mul((float) lr).div(d)).intoArray(pa, po + i);
      }
    }
    TAIL.rmsprop(p, g, s, a, b, i, hi, sign, wd, alpha, c, eps, mom, lr);
  }

  @Override
  public void nadam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double c2, double bc2, double eps, double cg, double cm) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i).mul((float) b1).add(gi.mul((float) c1));
      FloatVector vi = FloatVector.fromArray(S, va, vo + i).mul((float) b2).add(gi.mul((float) c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector denom = vi.div((float) bc2).sqrt().add((float) eps);
      x.sub(gi.mul((float) cg).div(denom)).sub(mi.mul((float) cm).div(denom)).intoArray(pa, po + i);
    }
    TAIL.nadam(p, g, m, v, i, hi, sign, wd, b1, b2, c1, c2, bc2, eps, cg, cm);
  }

  @Override
  public void radam(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double sign, double wd, double b1, double b2,
      double c1, double c2, double eps, double scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign).add(x.mul((float) wd));
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i).mul((float) b1).add(gi.mul((float) c1));
      FloatVector vi = FloatVector.fromArray(S, va, vo + i).mul((float) b2).add(gi.mul((float) c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector step = adaptive ? mi.div(vi.sqrt().add((float) eps)) : mi;
      x.sub(step.mul((float) scale)).intoArray(pa, po + i);
    }
    TAIL.radam(p, g, m, v, i, hi, sign, wd, b1, b2, c1, c2, eps, scale, adaptive);
  }

  @Override
  public void lion(Slot p, Slot g, Slot m, int lo, int hi, double sign, double decay, double lr, double b1, double c1,
      double b2, double c2) {
    float[] pa = p.f, ga = g.f, ma = m.f;
    int po = p.off, go = g.off, mo = m.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = FloatVector.fromArray(S, ga, go + i).mul((float) sign);
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i);
      FloatVector u = mi.mul((float) b1).add(gi.mul((float) c1));
      FloatVector dir = u.blend(1f, u.compare(GT, 0f)).blend(-1f, u.compare(LT, 0f)); // Math.signum per lane
      FloatVector.fromArray(S, pa, po + i).mul((float) decay).sub(dir.mul((float) lr)).intoArray(pa, po + i);
      mi.mul((float) b2).add(gi.mul((float) c2)).intoArray(ma, mo + i);
    }
    TAIL.lion(p, g, m, i, hi, sign, decay, lr, b1, c1, b2, c2);
  }

  @Override
  public void lambMoments(Slot p, Slot g, Slot m, Slot v, int lo, int hi, double b1, double b2, double c1, double c2,
      double bc1, double bc2, double eps, double wd, double[] acc) {
    float[] pa = p.f, ga = g.f, ma = m.f, va = v.f;
    int po = p.off, go = g.off, mo = m.off, vo = v.off;
    int parts = L / D.length();
    DoubleVector pp = DoubleVector.zero(D), rr = DoubleVector.zero(D);
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i).mul((float) b1).add(gi.mul((float) c1));
      FloatVector vi = FloatVector.fromArray(S, va, vo + i).mul((float) b2).add(gi.mul((float) c2).mul(gi));
      mi.intoArray(ma, mo + i);
      vi.intoArray(va, vo + i);
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector r = mi.div((float) bc1).div(vi.div((float) bc2).sqrt().add((float) eps)).add(x.mul((float) wd));
      for (int part = 0; part < parts; part++) {
        DoubleVector xd = (DoubleVector) x.convertShape(F2D, D, part);
        DoubleVector rd = (DoubleVector) r.convertShape(F2D, D, part);
        pp = pp.add(xd.mul(xd));
        rr = rr.add(rd.mul(rd));
      }
    }
    // the lanes added in lane order: reduceLanes(ADD) rounds differently before and after C2 compiles it
    double ps = pp.lane(0);
    double rs = rr.lane(0);
    for (int l = 1; l < pp.length(); l++) {
      ps += pp.lane(l);
      rs += rr.lane(l);
    }
    acc[0] += ps;
    acc[1] += rs;
    TAIL.lambMoments(p, g, m, v, i, hi, b1, b2, c1, c2, bc1, bc2, eps, wd, acc);
  }

  @Override
  public void lambApply(Slot p, Slot m, Slot v, int lo, int hi, double bc1, double bc2, double eps, double wd,
      double scale) {
    float[] pa = p.f, ma = m.f, va = v.f;
    int po = p.off, mo = m.off, vo = v.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector vi = FloatVector.fromArray(S, va, vo + i);
      FloatVector r = FloatVector.fromArray(S, ma, mo + i).div((float) bc1).div(vi.div((float) bc2).sqrt().add((float) eps))
          .add(x.mul((float) wd));
      x.sub(r.mul((float) scale)).intoArray(pa, po + i);
    }
    TAIL.lambApply(p, m, v, i, hi, bc1, bc2, eps, wd, scale);
  }

  @Override
  public void sophia(Slot p, Slot g, Slot m, Slot h, int lo, int hi, double decay, double lr, double b1, double sc1,
      double rhoBs) {
    float[] pa = p.f, ga = g.f, ma = m.f, ha = h.f;
    int po = p.off, go = g.off, mo = m.off, ho = h.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      FloatVector mi = FloatVector.fromArray(S, ma, mo + i).mul((float) b1).add(gi.mul((float) sc1));
      mi.intoArray(ma, mo + i);
      FloatVector ratio = mi.abs().div(FloatVector.fromArray(S, ha, ho + i).mul((float) rhoBs).add(1e-15f)).min(1f);
      FloatVector dir = mi.blend(1f, mi.compare(GT, 0f)).blend(-1f, mi.compare(LT, 0f)); // Math.signum per lane
      FloatVector.fromArray(S, pa, po + i).mul((float) decay).sub(dir.mul((float) lr).mul(ratio))
          .intoArray(pa, po + i);
    }
    TAIL.sophia(p, g, m, h, i, hi, decay, lr, b1, sc1, rhoBs);
  }

  @Override
  public void sophiaEma(Slot h, Slot g, int lo, int hi, double b2, double c) {
    float[] ha = h.f, ga = g.f;
    int ho = h.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      FloatVector.fromArray(S, ha, ho + i).mul((float) b2).add(gi.mul((float) c).mul(gi)).intoArray(ha, ho + i);
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
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      // (adaptive ? |p| : 1) * g; 1 * g is g exactly
      FloatVector w = adaptive ? FloatVector.fromArray(S, pa, po + i).abs().mul(gi) : gi;
      for (int part = 0; part < parts; part++) {
        DoubleVector wd = (DoubleVector) w.convertShape(F2D, D, part);
        acc = acc.add(wd.mul(wd));
      }
    }
    double s = acc.lane(0); // the lanes in lane order, as in lambMoments
    for (int l = 1; l < acc.length(); l++) s += acc.lane(l);
    return s + TAIL.samSquares(p, g, i, hi, adaptive);
  }

  @Override
  public void samAscend(Slot p, Slot g, int lo, int hi, double scale, boolean adaptive) {
    float[] pa = p.f, ga = g.f;
    int po = p.off, go = g.off;
    int i = lo;
    for (int end = bound(lo, hi); i < end; i += L) {
      FloatVector x = FloatVector.fromArray(S, pa, po + i);
      FloatVector gi = FloatVector.fromArray(S, ga, go + i);
      FloatVector t = adaptive ? x.mul(x).mul(gi) : gi;
      x.add(t.mul((float) scale)).intoArray(pa, po + i);
    }
    TAIL.samAscend(p, g, i, hi, scale, adaptive);
  }
}
