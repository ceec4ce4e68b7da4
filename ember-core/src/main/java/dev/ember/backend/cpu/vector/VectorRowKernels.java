package dev.ember.backend.cpu.vector;

import dev.ember.backend.cpu.RowKernels;

import static jdk.incubator.vector.VectorOperators.GE;
import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.LE;
import static jdk.incubator.vector.VectorOperators.LT;
import static jdk.incubator.vector.VectorOperators.NE;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/** {@link RowKernels} on the Vector API (loaded by name, so nothing else refers to the incubator module). */
public final class VectorRowKernels implements RowKernels {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> IS = S.withLanes(int.class);
  private static final int L = S.length();
  /** Swaps lanes 2i and 2i + 1. */
  private static final VectorShuffle<Float> SWAP = VectorShuffle.fromOp(S, i -> i ^ 1);
  private static final VectorMask<Float> EVEN = VectorMask.fromLong(S, 0x5555_5555_5555_5555L);
  private static final VectorMask<Integer> EVEN_I = EVEN.cast(IS);

  @Override
  public void axpy(float a, float[] x, int xo, float[] y, int yo, int n) {
    int i = 0;
    int bound = S.loopBound(n);
    for (; i < bound; i += S.length()) {
      FloatVector p = FloatVector.fromArray(S, x, xo + i).mul(a);
      FloatVector.fromArray(S, y, yo + i).add(p).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] += a * x[xo + i];
  }

  @Override
  public float sum(float[] a, int ao, int n) {
    FloatVector acc = FloatVector.zero(S);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) acc = acc.add(FloatVector.fromArray(S, a, ao + i));
    float s = 0; // the lanes added in lane order: the same bits on every call
    for (int l = 0; l < L; l++) s += acc.lane(l);
    for (; i < n; i++) s += a[ao + i];
    return s;
  }

  @Override
  public float sumSquaredDeviations(float[] a, int ao, int n, float mu) {
    FloatVector acc = FloatVector.zero(S);
    FloatVector m = FloatVector.broadcast(S, mu);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector d = FloatVector.fromArray(S, a, ao + i).sub(m);
      acc = d.mul(d).add(acc);
    }
    float s = 0; // the lanes added in lane order: the same bits on every call
    for (int l = 0; l < L; l++) s += acc.lane(l);
    for (; i < n; i++) {
      float d = a[ao + i] - mu;
      s += d * d;
    }
    return s;
  }

  @Override
  public float dotCentred(float[] g, int go, float[] x, int xo, int n, float mu) {
    FloatVector acc = FloatVector.zero(S);
    FloatVector m = FloatVector.broadcast(S, mu);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      acc = FloatVector.fromArray(S, g, go + i).mul(FloatVector.fromArray(S, x, xo + i).sub(m)).add(acc);
    }
    float s = 0; // the lanes added in lane order: the same bits on every call
    for (int l = 0; l < L; l++) s += acc.lane(l);
    for (; i < n; i++) s += g[go + i] * (x[xo + i] - mu);
    return s;
  }

  @Override
  public void sumAndDotCentred(float[] g, int go, float[] x, int xo, int n, float mu, float[] out) {
    FloatVector sum = FloatVector.zero(S);
    FloatVector dot = FloatVector.zero(S);
    FloatVector m = FloatVector.broadcast(S, mu);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector gv = FloatVector.fromArray(S, g, go + i);
      sum = sum.add(gv);
      dot = gv.mul(FloatVector.fromArray(S, x, xo + i).sub(m)).add(dot);
    }
    float s = 0; // the lanes added in lane order: the same bits on every call
    float d = 0;
    for (int l = 0; l < L; l++) {
      s += sum.lane(l);
      d += dot.lane(l);
    }
    for (int k = i; k < n; k++) s += g[go + k];
    for (int k = i; k < n; k++) d += g[go + k] * (x[xo + k] - mu);
    out[0] = s;
    out[1] = d;
  }

  @Override
  public void normBackwardRow(float[] g, int go, float[] x, int xo, float[] y, int yo, int n, float p, float q,
      float mu, float r) {
    FloatVector pv = FloatVector.broadcast(S, p);
    FloatVector qv = FloatVector.broadcast(S, q);
    FloatVector mv = FloatVector.broadcast(S, mu);
    FloatVector rv = FloatVector.broadcast(S, r);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector t = FloatVector.fromArray(S, x, xo + i).sub(mv).mul(qv).add(rv);
      pv.mul(FloatVector.fromArray(S, g, go + i)).add(t).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] = p * g[go + i] + (q * (x[xo + i] - mu) + r);
  }

  /** The loops of {@link #normBackwardRow} and {@link #sumAndDotCentred} in one (each's lane and tail order kept). */
  @Override
  public void normBackwardRowThenSums(float[] g, int go, float[] x, int xo, float[] y, int yo, int n, float p,
      float q, float mu, float r, int ngo, int nxo, float nmu, float[] out) {
    FloatVector pv = FloatVector.broadcast(S, p);
    FloatVector qv = FloatVector.broadcast(S, q);
    FloatVector mv = FloatVector.broadcast(S, mu);
    FloatVector rv = FloatVector.broadcast(S, r);
    FloatVector nm = FloatVector.broadcast(S, nmu);
    FloatVector sum = FloatVector.zero(S);
    FloatVector dot = FloatVector.zero(S);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector gv = FloatVector.fromArray(S, g, ngo + i);
      sum = sum.add(gv);
      dot = gv.mul(FloatVector.fromArray(S, x, nxo + i).sub(nm)).add(dot);
      FloatVector t = FloatVector.fromArray(S, x, xo + i).sub(mv).mul(qv).add(rv);
      pv.mul(FloatVector.fromArray(S, g, go + i)).add(t).intoArray(y, yo + i);
    }
    for (int k = i; k < n; k++) y[yo + k] = p * g[go + k] + (q * (x[xo + k] - mu) + r);
    float s = 0;
    float d = 0;
    for (int l = 0; l < L; l++) {
      s += sum.lane(l);
      d += dot.lane(l);
    }
    for (int k = i; k < n; k++) s += g[ngo + k];
    for (int k = i; k < n; k++) d += g[ngo + k] * (x[nxo + k] - nmu);
    out[0] = s;
    out[1] = d;
  }

  /**
   * Four partial sums per pass (a row of layer norm is 1024 floats: one accumulator would wait on the add latency),
   * added (a0 + a1) + (a2 + a3), then the lanes in lane order, then the tail.
   */
  @Override
  public void moments(float[] x, int xo, int n, boolean rms, float[] out) {
    int i = 0;
    float mu = 0f;
    if (!rms && n > 0) {
      FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
      for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
        a0 = a0.add(FloatVector.fromArray(S, x, xo + i));
        a1 = a1.add(FloatVector.fromArray(S, x, xo + i + L));
        a2 = a2.add(FloatVector.fromArray(S, x, xo + i + 2 * L));
        a3 = a3.add(FloatVector.fromArray(S, x, xo + i + 3 * L));
      }
      for (int bound = S.loopBound(n); i < bound; i += L) a0 = a0.add(FloatVector.fromArray(S, x, xo + i));
      FloatVector t = a0.add(a1).add(a2.add(a3));
      float s = 0f;
      for (int l = 0; l < L; l++) s += t.lane(l);
      for (; i < n; i++) s += x[xo + i];
      mu = s / n;
    }
    out[0] = mu;
    out[1] = centredSquares(x, xo, n, mu);
  }

  /**
   * Moments' second pass: the float sum of (x[xo + i] - mu)^2, four partial sums as the first. (Helpers here take
   * and return no vectors: C2 boxes a vector that crosses a call it does not inline, even inside a loop.)
   */
  private static float centredSquares(float[] x, int xo, int n, float mu) {
    FloatVector m = FloatVector.broadcast(S, mu);
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
      FloatVector d0 = FloatVector.fromArray(S, x, xo + i).sub(m);
      FloatVector d1 = FloatVector.fromArray(S, x, xo + i + L).sub(m);
      FloatVector d2 = FloatVector.fromArray(S, x, xo + i + 2 * L).sub(m);
      FloatVector d3 = FloatVector.fromArray(S, x, xo + i + 3 * L).sub(m);
      a0 = d0.mul(d0).add(a0);
      a1 = d1.mul(d1).add(a1);
      a2 = d2.mul(d2).add(a2);
      a3 = d3.mul(d3).add(a3);
    }
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector d = FloatVector.fromArray(S, x, xo + i).sub(m);
      a0 = d.mul(d).add(a0);
    }
    FloatVector t = a0.add(a1).add(a2.add(a3));
    float ss = 0f;
    for (int l = 0; l < L; l++) ss += t.lane(l);
    for (; i < n; i++) {
      float d = x[xo + i] - mu;
      ss += d * d;
    }
    return ss;
  }

  @Override
  public void affineRow(float[] x, int xo, float[] y, int yo, int n, float mu, float rs, float[] w, float[] b) {
    FloatVector m = FloatVector.broadcast(S, mu);
    FloatVector r = FloatVector.broadcast(S, rs);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector.fromArray(S, x, xo + i).sub(m).mul(r).mul(FloatVector.fromArray(S, w, i))
          .add(FloatVector.fromArray(S, b, i)).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] = ((x[xo + i] - mu) * rs) * w[i] + b[i];
  }

  /**
   * The next row's first pass (its sum, or for RMS its squares: (x - 0)^2 = x * x, the same bits) runs in the
   * affine's loop, four vectors a step, with moments' partial sums; the rest as {@link #moments}.
   */
  @Override
  public void affineRowThenMoments(float[] x, int xo, float[] y, int yo, int n, float mu, float rs, float[] w,
      float[] b, int no, boolean rms, float[] out) {
    FloatVector m = FloatVector.broadcast(S, mu);
    FloatVector r = FloatVector.broadcast(S, rs);
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    for (int bound = n - 4 * L; i <= bound; i += 4 * L) {
      FloatVector v0 = FloatVector.fromArray(S, x, no + i);
      FloatVector v1 = FloatVector.fromArray(S, x, no + i + L);
      FloatVector v2 = FloatVector.fromArray(S, x, no + i + 2 * L);
      FloatVector v3 = FloatVector.fromArray(S, x, no + i + 3 * L);
      if (rms) {
        a0 = v0.mul(v0).add(a0);
        a1 = v1.mul(v1).add(a1);
        a2 = v2.mul(v2).add(a2);
        a3 = v3.mul(v3).add(a3);
      } else {
        a0 = a0.add(v0);
        a1 = a1.add(v1);
        a2 = a2.add(v2);
        a3 = a3.add(v3);
      }
      for (int k = i; k < i + 4 * L; k += L) {
        FloatVector.fromArray(S, x, xo + k).sub(m).mul(r).mul(FloatVector.fromArray(S, w, k))
            .add(FloatVector.fromArray(S, b, k)).intoArray(y, yo + k);
      }
    }
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector v = FloatVector.fromArray(S, x, no + i);
      a0 = rms ? v.mul(v).add(a0) : a0.add(v);
      FloatVector.fromArray(S, x, xo + i).sub(m).mul(r).mul(FloatVector.fromArray(S, w, i))
          .add(FloatVector.fromArray(S, b, i)).intoArray(y, yo + i);
    }
    FloatVector t = a0.add(a1).add(a2.add(a3));
    float s = 0f;
    for (int l = 0; l < L; l++) s += t.lane(l);
    for (int k = i; k < n; k++) {
      y[yo + k] = ((x[xo + k] - mu) * rs) * w[k] + b[k];
      float v = x[no + k];
      s += rms ? v * v : v;
    }
    if (rms) {
      out[0] = 0f;
      out[1] = s;
      return;
    }
    float nextMu = n > 0 ? s / n : 0f;
    out[0] = nextMu;
    out[1] = centredSquares(x, no, n, nextMu);
  }

  @Override
  public void scaleShiftRow(float[] x, int xo, float[] y, int yo, int n, float sc, float sh) {
    FloatVector a = FloatVector.broadcast(S, sc);
    FloatVector c = FloatVector.broadcast(S, sh);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector.fromArray(S, x, xo + i).mul(a).add(c).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] = x[xo + i] * sc + sh;
  }

  /**
   * The next row's sum in moments' four partial sums, four vectors a step, each step also writing this row's
   * output over the same 4L elements: plane by plane, its scale and shift held in vectors for its whole steps, a step
   * across a plane's end element by element (the same bits: each element rounded as written); the rest as
   * {@link #moments}. (A {@link #scaleShiftPlanes} call per step, with its division, made group norm's forward over
   * 3136-element planes about a quarter slower on one thread.)
   */
  @Override
  public void scaleShiftPlanesThenMoments(float[] x, int xo, float[] y, int yo, int n, int s, float[] sc, float[] sh,
      int no, float[] out) {
    FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
    int i = 0;
    int steps = n - 4 * L; // the last step's start
    for (int j = 0, p = 0; p < n && i <= steps; j++, p += s) {
      int pe = p + s; // plane j is [p, pe)
      if (i >= pe) continue; // a step across its end wrote it
      FloatVector av = FloatVector.broadcast(S, sc[j]);
      FloatVector cv = FloatVector.broadcast(S, sh[j]);
      for (int last = pe - 4 * L; i <= last; i += 4 * L) { // pe <= n, so last <= steps
        a0 = a0.add(FloatVector.fromArray(S, x, no + i));
        a1 = a1.add(FloatVector.fromArray(S, x, no + i + L));
        a2 = a2.add(FloatVector.fromArray(S, x, no + i + 2 * L));
        a3 = a3.add(FloatVector.fromArray(S, x, no + i + 3 * L));
        FloatVector.fromArray(S, x, xo + i).mul(av).add(cv).intoArray(y, yo + i);
        FloatVector.fromArray(S, x, xo + i + L).mul(av).add(cv).intoArray(y, yo + i + L);
        FloatVector.fromArray(S, x, xo + i + 2 * L).mul(av).add(cv).intoArray(y, yo + i + 2 * L);
        FloatVector.fromArray(S, x, xo + i + 3 * L).mul(av).add(cv).intoArray(y, yo + i + 3 * L);
      }
      if (i < pe && i <= steps) { // a step across the plane's end: its output element by element
        a0 = a0.add(FloatVector.fromArray(S, x, no + i));
        a1 = a1.add(FloatVector.fromArray(S, x, no + i + L));
        a2 = a2.add(FloatVector.fromArray(S, x, no + i + 2 * L));
        a3 = a3.add(FloatVector.fromArray(S, x, no + i + 3 * L));
        for (int k = i, q = j, qe = pe; k < i + 4 * L; k++) {
          if (k == qe) {
            q++;
            qe += s;
          }
          y[yo + k] = x[xo + k] * sc[q] + sh[q];
        }
        i += 4 * L;
      }
    }
    scaleShiftPlanes(x, xo, y, yo, i, n, s, sc, sh);
    for (int bound = S.loopBound(n); i < bound; i += L) a0 = a0.add(FloatVector.fromArray(S, x, no + i));
    FloatVector t = a0.add(a1).add(a2.add(a3));
    float sum = 0f;
    for (int l = 0; l < L; l++) sum += t.lane(l);
    for (; i < n; i++) sum += x[no + i];
    float mu = n > 0 ? sum / n : 0f;
    out[0] = mu;
    out[1] = centredSquares(x, no, n, mu);
  }

  /**
   * y[yo + k] = x[xo + k] * sc[j] + sh[j] for k in [from, to), j = k / s its plane: vectors within a plane, scalars
   * where a vector would cross into the next (the same bits: each element rounded as written).
   */
  private static void scaleShiftPlanes(float[] x, int xo, float[] y, int yo, int from, int to, int s, float[] sc,
      float[] sh) {
    int k = from;
    while (k < to) {
      int j = k / s;
      int end = Math.min(to, (j + 1) * s);
      float a = sc[j];
      float c = sh[j];
      FloatVector av = FloatVector.broadcast(S, a);
      FloatVector cv = FloatVector.broadcast(S, c);
      for (; k + L <= end; k += L) FloatVector.fromArray(S, x, xo + k).mul(av).add(cv).intoArray(y, yo + k);
      for (; k < end; k++) y[yo + k] = x[xo + k] * a + c;
    }
  }

  /** Two partial sums per statistic, added (s0 + s1), then the lanes in lane order, then the tail. */
  @Override
  public void normBackwardSums(float[] g, int go, float[] x, int xo, float[] w, int n, float mu, float rs,
      float[] gw, float[] gb, float[] out) {
    FloatVector m = FloatVector.broadcast(S, mu);
    FloatVector r = FloatVector.broadcast(S, rs);
    FloatVector s0 = FloatVector.zero(S), s1 = s0, d0 = s0, d1 = s0;
    int i = 0;
    for (int bound = n - 2 * L; i <= bound; i += 2 * L) {
      FloatVector g0 = FloatVector.fromArray(S, g, go + i);
      FloatVector g1 = FloatVector.fromArray(S, g, go + i + L);
      FloatVector x0 = FloatVector.fromArray(S, x, xo + i).sub(m).mul(r);
      FloatVector x1 = FloatVector.fromArray(S, x, xo + i + L).sub(m).mul(r);
      FloatVector h0 = g0.mul(FloatVector.fromArray(S, w, i));
      FloatVector h1 = g1.mul(FloatVector.fromArray(S, w, i + L));
      s0 = s0.add(h0);
      s1 = s1.add(h1);
      d0 = h0.mul(x0).add(d0);
      d1 = h1.mul(x1).add(d1);
      FloatVector.fromArray(S, gw, i).add(g0.mul(x0)).intoArray(gw, i);
      FloatVector.fromArray(S, gw, i + L).add(g1.mul(x1)).intoArray(gw, i + L);
      FloatVector.fromArray(S, gb, i).add(g0).intoArray(gb, i);
      FloatVector.fromArray(S, gb, i + L).add(g1).intoArray(gb, i + L);
    }
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector g0 = FloatVector.fromArray(S, g, go + i);
      FloatVector x0 = FloatVector.fromArray(S, x, xo + i).sub(m).mul(r);
      FloatVector h0 = g0.mul(FloatVector.fromArray(S, w, i));
      s0 = s0.add(h0);
      d0 = h0.mul(x0).add(d0);
      FloatVector.fromArray(S, gw, i).add(g0.mul(x0)).intoArray(gw, i);
      FloatVector.fromArray(S, gb, i).add(g0).intoArray(gb, i);
    }
    FloatVector st = s0.add(s1);
    FloatVector dt = d0.add(d1);
    float s = 0f, d = 0f;
    for (int l = 0; l < L; l++) {
      s += st.lane(l);
      d += dt.lane(l);
    }
    for (; i < n; i++) {
      float gv = g[go + i];
      float xh = (x[xo + i] - mu) * rs;
      float gh = gv * w[i];
      s += gh;
      d += gh * xh;
      gw[i] += gv * xh;
      gb[i] += gv;
    }
    out[0] = s;
    out[1] = d;
  }

  @Override
  public void normBackwardRowW(float[] g, int go, float[] x, int xo, float[] w, float[] y, int yo, int n, float p,
      float q, float mu, float r) {
    FloatVector pv = FloatVector.broadcast(S, p);
    FloatVector qv = FloatVector.broadcast(S, q);
    FloatVector mv = FloatVector.broadcast(S, mu);
    FloatVector rv = FloatVector.broadcast(S, r);
    int i = 0;
    for (int bound = S.loopBound(n); i < bound; i += L) {
      FloatVector t = FloatVector.fromArray(S, x, xo + i).sub(mv).mul(qv).add(rv);
      FloatVector gh = FloatVector.fromArray(S, g, go + i).mul(FloatVector.fromArray(S, w, i));
      pv.mul(gh).add(t).intoArray(y, yo + i);
    }
    for (; i < n; i++) y[yo + i] = p * (g[go + i] * w[i]) + (q * (x[xo + i] - mu) + r);
  }

  @Override
  public float dot(float[] a, int ao, float[] b, int bo, int n) {
    FloatVector acc = FloatVector.zero(S);
    int i = 0;
    int bound = S.loopBound(n);
    for (; i < bound; i += S.length()) {
      acc = FloatVector.fromArray(S, a, ao + i).mul(FloatVector.fromArray(S, b, bo + i)).add(acc);
    }
    float s = 0;
    for (int l = 0; l < S.length(); l++) s += acc.lane(l); // lanes in order: the same bits every call
    for (; i < n; i++) s += a[ao + i] * b[bo + i];
    return s;
  }

  /**
   * L input columns (L/2 windows) per step: each row's vector is paired with its copy whose adjacent
   * lanes are swapped, so the even lanes hold the four taps of a window; the scalar compare-and-take
   * chain runs lane-wise and compress() gathers the even lanes into the first L/2 outputs. A short
   * last step reads past the row (into the next row, never past the array: checked) and stores only
   * its valid lanes.
   */
  @Override
  public void maxPool2x2Row(float[] x, int xo, int iw, int base, float[] y, int[] arg, int yo, int n) {
    // Two methods, each with a profile of its own: training pools with argmax, validation (no tape) without.
    // One method for both had C2 code compiled on training's profile, whose loop predicates trapped on the
    // first validation (a deoptimization, its calls in the interpreter until a second C2 compile of the kernel,
    // ~0.4 s of CPU under load: issue #40, bench/jit-breakdown.sh); here the second kind of call compiles a
    // method of its own and leaves the first one's code alone.
    if (arg == null) maxPool2x2Values(x, xo, iw, y, yo, n);
    else maxPool2x2Indexed(x, xo, iw, base, y, arg, yo, n);
  }

  @Override
  public void maxPool2x2RowValues(float[] x, int xo, int iw, float[] y, int yo, int n) {
    maxPool2x2Values(x, xo, iw, y, yo, n);
  }

  /**
   * The bound on o of the 2x2 pooling loops: o &lt; n with 2 o &lt;= xRoom (the two input rows' vectors stay in x)
   * and o &lt;= yRoom (the store's vector stays in y), each of which, once false, stays false. One compare per
   * step instead of three: a loop exit that a profile of the first calls had never seen taken trapped
   * (unstable_if) in C2 code compiled on it, and cost a recompile (issue #40).
   */
  private static int vectorSteps(int n, int xRoom, int yRoom) {
    return Math.min(n, Math.min(xRoom >> 1, yRoom) + 1); // xRoom >> 1: floor(xRoom / 2), negative too
  }

  /** {@link #maxPool2x2Row} with argmax. */
  private static void maxPool2x2Indexed(float[] x, int xo, int iw, int base, float[] y, int[] arg, int yo, int n) {
    int half = L / 2;
    VectorShuffle<Float> swap = SWAP;
    VectorMask<Float> even = EVEN;
    VectorMask<Integer> evenI = EVEN_I;
    IntVector lanes = IntVector.zero(IS).addIndex(1);
    int o = 0;
    for (int end = vectorSteps(n, x.length - xo - iw - L, Math.min(y.length, arg.length) - yo - L); o < end;
        o += half) {
      int c = xo + 2 * o;
      int k = Math.min(half, n - o);
      FloatVector top = FloatVector.fromArray(S, x, c);
      FloatVector bot = FloatVector.fromArray(S, x, c + iw);
      FloatVector b = top.rearrange(swap);
      FloatVector e = bot.rearrange(swap);
      VectorMask<Float> t1 = b.compare(GT, top).or(b.compare(NE, b));
      FloatVector mv = top.blend(b, t1);
      VectorMask<Float> t2 = bot.compare(GT, mv).or(bot.compare(NE, bot));
      mv = mv.blend(bot, t2);
      VectorMask<Float> t3 = e.compare(GT, mv).or(e.compare(NE, e));
      mv = mv.blend(e, t3);
      VectorMask<Float> store = S.indexInRange(0, k);
      mv.compress(even).intoArray(y, yo + o, store);
      IntVector mi = lanes.add(c - base);
      mi = mi.blend(mi.add(1), t1.cast(IS));
      mi = mi.blend(lanes.add(c - base + iw), t2.cast(IS));
      mi = mi.blend(lanes.add(c - base + iw + 1), t3.cast(IS));
      mi.compress(evenI).intoArray(arg, yo + o, store.cast(IS));
    }
    if (o < n) RowKernels.maxPool2x2Scalar(x, xo + 2 * o, iw, base, y, arg, yo + o, n - o);
  }

  /** {@link #maxPool2x2Row} without argmax: {@link #maxPool2x2Indexed}'s values, the same compares and blends. */
  private static void maxPool2x2Values(float[] x, int xo, int iw, float[] y, int yo, int n) {
    int half = L / 2;
    VectorShuffle<Float> swap = SWAP;
    VectorMask<Float> even = EVEN;
    int o = 0;
    for (int end = vectorSteps(n, x.length - xo - iw - L, y.length - yo - L); o < end; o += half) {
      int c = xo + 2 * o;
      int k = Math.min(half, n - o);
      FloatVector top = FloatVector.fromArray(S, x, c);
      FloatVector bot = FloatVector.fromArray(S, x, c + iw);
      FloatVector b = top.rearrange(swap);
      FloatVector e = bot.rearrange(swap);
      FloatVector mv = top.blend(b, b.compare(GT, top).or(b.compare(NE, b)));
      mv = mv.blend(bot, bot.compare(GT, mv).or(bot.compare(NE, bot)));
      mv = mv.blend(e, e.compare(GT, mv).or(e.compare(NE, e)));
      mv.compress(even).intoArray(y, yo + o, S.indexInRange(0, k));
    }
    if (o < n) RowKernels.maxPool2x2Scalar(x, xo + 2 * o, iw, 0, y, null, yo + o, n - o);
  }

  /**
   * Whole vectors, then the row's tail as one masked vector when its 16-lane window stays inside
   * both arrays (a masked access past an array's end takes a slow path), else scalar. Rows of 10-28
   * floats (im2col of small feature maps) cost a call each with System.arraycopy.
   */
  /** One load of a per step against the nine shifted loads of b: nine accumulators, so no chain waits on another. */
  @Override
  public void dot3x3(float[] a, int ao, float[] b, int bo, int pitch, int n, float[] out) {
    FloatVector s00 = FloatVector.zero(S);
    FloatVector s01 = s00;
    FloatVector s02 = s00;
    FloatVector s10 = s00;
    FloatVector s11 = s00;
    FloatVector s12 = s00;
    FloatVector s20 = s00;
    FloatVector s21 = s00;
    FloatVector s22 = s00;
    int r1 = bo + pitch;
    int r2 = bo + 2 * pitch;
    int p = 0;
    for (int bound = S.loopBound(n); p < bound; p += L) {
      FloatVector g = FloatVector.fromArray(S, a, ao + p);
      s00 = g.fma(FloatVector.fromArray(S, b, bo + p), s00);
      s01 = g.fma(FloatVector.fromArray(S, b, bo + p + 1), s01);
      s02 = g.fma(FloatVector.fromArray(S, b, bo + p + 2), s02);
      s10 = g.fma(FloatVector.fromArray(S, b, r1 + p), s10);
      s11 = g.fma(FloatVector.fromArray(S, b, r1 + p + 1), s11);
      s12 = g.fma(FloatVector.fromArray(S, b, r1 + p + 2), s12);
      s20 = g.fma(FloatVector.fromArray(S, b, r2 + p), s20);
      s21 = g.fma(FloatVector.fromArray(S, b, r2 + p + 1), s21);
      s22 = g.fma(FloatVector.fromArray(S, b, r2 + p + 2), s22);
    }
    // lanes added in lane order, each written out (a helper taking the vectors would box them)
    float t00 = 0, t01 = 0, t02 = 0, t10 = 0, t11 = 0, t12 = 0, t20 = 0, t21 = 0, t22 = 0;
    for (int l = 0; l < L; l++) {
      t00 += s00.lane(l);
      t01 += s01.lane(l);
      t02 += s02.lane(l);
      t10 += s10.lane(l);
      t11 += s11.lane(l);
      t12 += s12.lane(l);
      t20 += s20.lane(l);
      t21 += s21.lane(l);
      t22 += s22.lane(l);
    }
    for (; p < n; p++) {
      float g = a[ao + p];
      t00 += g * b[bo + p];
      t01 += g * b[bo + p + 1];
      t02 += g * b[bo + p + 2];
      t10 += g * b[r1 + p];
      t11 += g * b[r1 + p + 1];
      t12 += g * b[r1 + p + 2];
      t20 += g * b[r2 + p];
      t21 += g * b[r2 + p + 1];
      t22 += g * b[r2 + p + 2];
    }
    out[0] = t00;
    out[1] = t01;
    out[2] = t02;
    out[3] = t10;
    out[4] = t11;
    out[5] = t12;
    out[6] = t20;
    out[7] = t21;
    out[8] = t22;
  }

  /**
   * Strips of 2L output columns, each going down the padded rows once: input row r is loaded in place (three shifted
   * vectors per L columns, the lanes outside the plane masked to 0) once and feeds output row r - 2 (its last tap
   * row, then stored), r - 1 and r (its first tap row after the bias), the nine taps held in registers. Per output
   * element the terms come in tap order, as in convPlane. Stores of a strip's lanes past ow are masked.
   */
  @Override
  public void depthwise3x3(float[] x, int xo, int h, int w, int ph, int pw, float[] wt, int wo, float bias, float[] y,
      int yo, int oh, int ow) {
    // one strip per call: C1 gives up on the whole loop in one method (out of virtual registers), and C2 then
    // never compiles it
    for (int c0 = 0; c0 < ow; c0 += L) {
      if (c0 - pw >= 0 && c0 + L + 2 - pw <= w && c0 + L <= ow) {
        depthwiseInner(x, xo, h, w, ph, pw, wt, wo, bias, y, yo, oh, ow, c0);
      } else {
        depthwiseStrip(x, xo, h, w, ph, pw, wt, wo, bias, y, yo, oh, ow, c0);
      }
    }
  }

  /** Columns [c0, ow) of depthwise3x3, ow - c0 &lt;= L. */
  private static void depthwiseStrip(float[] x, int xo, int h, int w, int ph, int pw, float[] wt, int wo, float bias,
      float[] y, int yo, int oh, int ow, int c0) {
    FloatVector w00 = FloatVector.broadcast(S, wt[wo]), w01 = FloatVector.broadcast(S, wt[wo + 1]);
    FloatVector w02 = FloatVector.broadcast(S, wt[wo + 2]), w10 = FloatVector.broadcast(S, wt[wo + 3]);
    FloatVector w11 = FloatVector.broadcast(S, wt[wo + 4]), w12 = FloatVector.broadcast(S, wt[wo + 5]);
    FloatVector w20 = FloatVector.broadcast(S, wt[wo + 6]), w21 = FloatVector.broadcast(S, wt[wo + 7]);
    FloatVector w22 = FloatVector.broadcast(S, wt[wo + 8]);
    FloatVector bv = FloatVector.broadcast(S, bias);
    FloatVector zero = FloatVector.zero(S);
    boolean whole0 = c0 + L <= ow;
    VectorMask<Float> m0 = S.indexInRange(c0, ow);
    VectorMask<Float> a0 = S.indexInRange(c0 - pw, w);
    VectorMask<Float> a1 = S.indexInRange(c0 + 1 - pw, w);
    VectorMask<Float> a2 = S.indexInRange(c0 + 2 - pw, w);
    FloatVector p0 = bv, q0 = bv;
    for (int r = 0; r < oh + 2; r++) {
      int iy = r - ph;
      boolean in = iy >= 0 && iy < h;
      int at = xo + iy * w + c0 - pw;
      FloatVector x0 = in ? FloatVector.fromArray(S, x, at, a0) : zero;
      FloatVector x1 = in ? FloatVector.fromArray(S, x, at + 1, a1) : zero;
      FloatVector x2 = in ? FloatVector.fromArray(S, x, at + 2, a2) : zero;
      p0 = x2.fma(w22, x1.fma(w21, x0.fma(w20, p0)));
      if (r >= 2) {
        int o = yo + (r - 2) * ow + c0;
        if (whole0) p0.intoArray(y, o);
        else p0.intoArray(y, o, m0);
      }
      p0 = x2.fma(w12, x1.fma(w11, x0.fma(w10, q0)));
      q0 = x2.fma(w02, x1.fma(w01, x0.fma(w00, bv)));
    }
  }

  /** Columns [c0, c0 + L) of depthwise3x3 where every lane it reads lies inside the row: unmasked. */
  private static void depthwiseInner(float[] x, int xo, int h, int w, int ph, int pw, float[] wt, int wo, float bias,
      float[] y, int yo, int oh, int ow, int c0) {
    FloatVector w00 = FloatVector.broadcast(S, wt[wo]), w01 = FloatVector.broadcast(S, wt[wo + 1]);
    FloatVector w02 = FloatVector.broadcast(S, wt[wo + 2]), w10 = FloatVector.broadcast(S, wt[wo + 3]);
    FloatVector w11 = FloatVector.broadcast(S, wt[wo + 4]), w12 = FloatVector.broadcast(S, wt[wo + 5]);
    FloatVector w20 = FloatVector.broadcast(S, wt[wo + 6]), w21 = FloatVector.broadcast(S, wt[wo + 7]);
    FloatVector w22 = FloatVector.broadcast(S, wt[wo + 8]);
    FloatVector bv = FloatVector.broadcast(S, bias);
    FloatVector zero = FloatVector.zero(S);
    FloatVector p0 = bv, q0 = bv;
    for (int r = 0; r < oh + 2; r++) {
      int iy = r - ph;
      boolean in = iy >= 0 && iy < h;
      int at = xo + iy * w + c0 - pw;
      FloatVector x0 = in ? FloatVector.fromArray(S, x, at) : zero;
      FloatVector x1 = in ? FloatVector.fromArray(S, x, at + 1) : zero;
      FloatVector x2 = in ? FloatVector.fromArray(S, x, at + 2) : zero;
      p0 = x2.fma(w22, x1.fma(w21, x0.fma(w20, p0)));
      if (r >= 2) {
        int o = yo + (r - 2) * ow + c0;
        p0.intoArray(y, o);
      }
      p0 = x2.fma(w12, x1.fma(w11, x0.fma(w10, q0)));
      q0 = x2.fma(w02, x1.fma(w01, x0.fma(w00, bv)));
    }
  }

  /**
   * Strips of L output columns, each going down the padded rows once: input row r's three shifted vectors are loaded
   * in place once (lanes outside the plane or past ow masked to 0) and meet the output gradient's rows r, r - 1 and
   * r - 2 (held in registers as they go by) in nine independent chains.
   */
  @Override
  public void depthwise3x3Weight(float[] g, int go, int oh, int ow, float[] x, int xo, int h, int w, int ph, int pw,
      float[] out) {
    FloatVector zero = FloatVector.zero(S);
    FloatVector s00 = zero, s01 = zero, s02 = zero, s10 = zero, s11 = zero, s12 = zero, s20 = zero, s21 = zero;
    FloatVector s22 = zero;
    for (int c0 = 0; c0 < ow; c0 += L) {
      VectorMask<Float> gm = S.indexInRange(c0, ow);
      VectorMask<Float> m0 = gm.and(S.indexInRange(c0 - pw, w));
      VectorMask<Float> m1 = gm.and(S.indexInRange(c0 + 1 - pw, w));
      VectorMask<Float> m2 = gm.and(S.indexInRange(c0 + 2 - pw, w));
      FloatVector ga = zero; // output-gradient row r - 2
      FloatVector gb = zero; // row r - 1
      for (int r = 0; r < oh + 2; r++) {
        FloatVector gc = r < oh ? FloatVector.fromArray(S, g, go + r * ow + c0, gm) : zero;
        int iy = r - ph;
        boolean in = iy >= 0 && iy < h;
        int at = xo + iy * w + c0 - pw;
        FloatVector x0 = in ? FloatVector.fromArray(S, x, at, m0) : zero;
        FloatVector x1 = in ? FloatVector.fromArray(S, x, at + 1, m1) : zero;
        FloatVector x2 = in ? FloatVector.fromArray(S, x, at + 2, m2) : zero;
        s00 = gc.fma(x0, s00);
        s01 = gc.fma(x1, s01);
        s02 = gc.fma(x2, s02);
        s10 = gb.fma(x0, s10);
        s11 = gb.fma(x1, s11);
        s12 = gb.fma(x2, s12);
        s20 = ga.fma(x0, s20);
        s21 = ga.fma(x1, s21);
        s22 = ga.fma(x2, s22);
        ga = gb;
        gb = gc;
      }
    }
    // lanes added in lane order, each written out (a helper taking the vectors would box them)
    float t00 = 0, t01 = 0, t02 = 0, t10 = 0, t11 = 0, t12 = 0, t20 = 0, t21 = 0, t22 = 0;
    for (int l = 0; l < L; l++) {
      t00 += s00.lane(l);
      t01 += s01.lane(l);
      t02 += s02.lane(l);
      t10 += s10.lane(l);
      t11 += s11.lane(l);
      t12 += s12.lane(l);
      t20 += s20.lane(l);
      t21 += s21.lane(l);
      t22 += s22.lane(l);
    }
    out[0] = t00;
    out[1] = t01;
    out[2] = t02;
    out[3] = t10;
    out[4] = t11;
    out[5] = t12;
    out[6] = t20;
    out[7] = t21;
    out[8] = t22;
  }

  /**
   * Index vectors of {@code selectFrom(a, b)} (lane l takes lane idx[l] of a ++ b): the even and the odd lanes of
   * a ++ b, lanes 1..L of it (a shifted down by one), and the low and high halves of a and b interleaved.
   */
  private static final FloatVector PICK_EVEN = FloatVector.fromArray(S, lanes(l -> 2 * l), 0);
  private static final FloatVector PICK_ODD = FloatVector.fromArray(S, lanes(l -> 2 * l + 1), 0);
  private static final FloatVector SHIFT_ONE = FloatVector.fromArray(S, lanes(l -> l + 1), 0);
  private static final FloatVector ZIP_LO = FloatVector.fromArray(S, lanes(l -> l / 2 + (l % 2) * L), 0);
  private static final FloatVector ZIP_HI = FloatVector.fromArray(S, lanes(l -> L / 2 + l / 2 + (l % 2) * L), 0);

  private static float[] lanes(java.util.function.IntUnaryOperator f) {
    float[] a = new float[L];
    for (int l = 0; l < L; l++) a[l] = f.applyAsInt(l);
    return a;
  }

  /**
   * L tiles at a time: the 4L floats from the tiles' start are loaded and split by two rounds of even/odd
   * two-vector permutes into d0..d3 (d_k lane l = s[at + 4l + k]); d4 and d5 are d0 and d1 shifted down a lane
   * with the next tile's first two floats. Tiles whose inputs cross the row's ends go element by element, and the
   * last group of L overlaps the one before it (recomputing the same values) rather than leaving a tail.
   */
  @Override
  public void winogradInput(float[] s, int so, int len, int pad, int tw, float[] v, int vo, int vs) {
    int lo = Math.min(tw, (pad + 3) / 4); // first tile whose inputs start in the row
    int hi = len - 6 + pad >= 0 ? Math.min(tw, (len - 6 + pad) / 4 + 1) : 0; // tiles whose inputs end in it
    if (hi - lo < L) {
      RowKernels.winogradInputTiles(s, so, len, pad, 0, tw, v, vo, vs);
      return;
    }
    RowKernels.winogradInputTiles(s, so, len, pad, 0, lo, v, vo, vs);
    for (int t = lo; t < hi; t += L) {
      if (t + L > hi) t = hi - L;
      int at = so + 4 * t - pad;
      FloatVector v0 = FloatVector.fromArray(S, s, at);
      FloatVector v1 = FloatVector.fromArray(S, s, at + L);
      FloatVector v2 = FloatVector.fromArray(S, s, at + 2 * L);
      FloatVector v3 = FloatVector.fromArray(S, s, at + 3 * L);
      FloatVector e01 = PICK_EVEN.selectFrom(v0, v1);
      FloatVector o01 = PICK_ODD.selectFrom(v0, v1);
      FloatVector e23 = PICK_EVEN.selectFrom(v2, v3);
      FloatVector o23 = PICK_ODD.selectFrom(v2, v3);
      FloatVector d0 = PICK_EVEN.selectFrom(e01, e23);
      FloatVector d2 = PICK_ODD.selectFrom(e01, e23);
      FloatVector d1 = PICK_EVEN.selectFrom(o01, o23);
      FloatVector d3 = PICK_ODD.selectFrom(o01, o23);
      FloatVector d4 = SHIFT_ONE.selectFrom(d0, FloatVector.broadcast(S, s[at + 4 * L]));
      FloatVector d5 = SHIFT_ONE.selectFrom(d1, FloatVector.broadcast(S, s[at + 4 * L + 1]));
      FloatVector a = d4.sub(d2);
      FloatVector b = d3.sub(d1).mul(2f);
      d0.mul(4f).sub(d2.mul(5f)).add(d4).intoArray(v, vo + t);
      d3.add(d4).sub(d1.add(d2).mul(4f)).intoArray(v, vo + vs + t);
      d4.sub(d3).add(d1.sub(d2).mul(4f)).intoArray(v, vo + 2 * vs + t);
      a.add(b).intoArray(v, vo + 3 * vs + t);
      a.sub(b).intoArray(v, vo + 4 * vs + t);
      d1.mul(4f).sub(d3.mul(5f)).add(d5).intoArray(v, vo + 5 * vs + t);
    }
    RowKernels.winogradInputTiles(s, so, len, pad, hi, tw, v, vo, vs);
  }

  /** L tiles at a time, e0..e3 split from 4L floats as in {@link #winogradInput}. */
  @Override
  public void winogradGrad(float[] s, int so, int len, int tw, float[] m, int mo, int ms) {
    int hi = Math.min(tw, len / 4); // tiles whose four values lie in the row
    if (hi < L) {
      RowKernels.winogradGradTiles(s, so, len, 0, tw, m, mo, ms);
      return;
    }
    for (int t = 0; t < hi; t += L) {
      if (t + L > hi) t = hi - L;
      int at = so + 4 * t;
      FloatVector v0 = FloatVector.fromArray(S, s, at);
      FloatVector v1 = FloatVector.fromArray(S, s, at + L);
      FloatVector v2 = FloatVector.fromArray(S, s, at + 2 * L);
      FloatVector v3 = FloatVector.fromArray(S, s, at + 3 * L);
      FloatVector e01 = PICK_EVEN.selectFrom(v0, v1);
      FloatVector o01 = PICK_ODD.selectFrom(v0, v1);
      FloatVector e23 = PICK_EVEN.selectFrom(v2, v3);
      FloatVector o23 = PICK_ODD.selectFrom(v2, v3);
      FloatVector e0 = PICK_EVEN.selectFrom(e01, e23);
      FloatVector e2 = PICK_ODD.selectFrom(e01, e23);
      FloatVector e1 = PICK_EVEN.selectFrom(o01, o23);
      FloatVector e3 = PICK_ODD.selectFrom(o01, o23);
      FloatVector a = e0.add(e2);
      FloatVector b = e1.add(e3);
      FloatVector c = e0.add(e2.mul(4f));
      FloatVector d = e1.add(e3.mul(4f)).mul(2f);
      e0.intoArray(m, mo + t);
      a.add(b).intoArray(m, mo + ms + t);
      a.sub(b).intoArray(m, mo + 2 * ms + t);
      c.add(d).intoArray(m, mo + 3 * ms + t);
      c.sub(d).intoArray(m, mo + 4 * ms + t);
      e3.intoArray(m, mo + 5 * ms + t);
    }
    RowKernels.winogradGradTiles(s, so, len, hi, tw, m, mo, ms);
  }

  /** L tiles at a time, y0..y3 interleaved by two rounds of two-vector permutes into 4L consecutive floats. */
  @Override
  public void winogradOutput(float[] m, int mo, int ms, int tw, float bias, boolean relu, float[] y, int yo,
      int len) {
    int hi = Math.min(tw, len / 4); // tiles whose four outputs lie in the row
    if (hi < L) {
      RowKernels.winogradOutputTiles(m, mo, ms, 0, tw, bias, relu, y, yo, len);
      return;
    }
    FloatVector z = FloatVector.zero(S);
    for (int t = 0; t < hi; t += L) {
      if (t + L > hi) t = hi - L;
      FloatVector m0 = FloatVector.fromArray(S, m, mo + t);
      FloatVector m1 = FloatVector.fromArray(S, m, mo + ms + t);
      FloatVector m2 = FloatVector.fromArray(S, m, mo + 2 * ms + t);
      FloatVector m3 = FloatVector.fromArray(S, m, mo + 3 * ms + t);
      FloatVector m4 = FloatVector.fromArray(S, m, mo + 4 * ms + t);
      FloatVector m5 = FloatVector.fromArray(S, m, mo + 5 * ms + t);
      FloatVector a = m1.add(m2);
      FloatVector b = m1.sub(m2);
      FloatVector c = m3.add(m4);
      FloatVector d = m3.sub(m4);
      FloatVector y0 = m0.add(a).add(c).add(bias);
      FloatVector y1 = b.add(d.mul(2f)).add(bias);
      FloatVector y2 = a.add(c.mul(4f)).add(bias);
      FloatVector y3 = b.add(d.mul(8f)).add(m5).add(bias);
      if (relu) { // x <= 0 ? 0 : x as the RELU kernel (inline: a call would box)
        y0 = y0.blend(z, y0.compare(LE, 0f));
        y1 = y1.blend(z, y1.compare(LE, 0f));
        y2 = y2.blend(z, y2.compare(LE, 0f));
        y3 = y3.blend(z, y3.compare(LE, 0f));
      }
      FloatVector pLo = ZIP_LO.selectFrom(y0, y2); // y0[0] y2[0] y0[1] y2[1] ...
      FloatVector pHi = ZIP_HI.selectFrom(y0, y2);
      FloatVector qLo = ZIP_LO.selectFrom(y1, y3);
      FloatVector qHi = ZIP_HI.selectFrom(y1, y3);
      int at = yo + 4 * t;
      ZIP_LO.selectFrom(pLo, qLo).intoArray(y, at); // y0[0] y1[0] y2[0] y3[0] y0[1] ...
      ZIP_HI.selectFrom(pLo, qLo).intoArray(y, at + L);
      ZIP_LO.selectFrom(pHi, qHi).intoArray(y, at + 2 * L);
      ZIP_HI.selectFrom(pHi, qHi).intoArray(y, at + 3 * L);
    }
    RowKernels.winogradOutputTiles(m, mo, ms, hi, tw, bias, relu, y, yo, len);
  }

  /** L columns at a time, the scalar expressions on lanes; the tail element by element. */
  @Override
  public void winogradColumns(float[] s, int so, int ss, int n, float[] d, int dOff, int ds) {
    int full = S.loopBound(n);
    for (int i = 0; i < full; i += L) {
      FloatVector d0 = FloatVector.fromArray(S, s, so + i);
      FloatVector d1 = FloatVector.fromArray(S, s, so + ss + i);
      FloatVector d2 = FloatVector.fromArray(S, s, so + 2 * ss + i);
      FloatVector d3 = FloatVector.fromArray(S, s, so + 3 * ss + i);
      FloatVector d4 = FloatVector.fromArray(S, s, so + 4 * ss + i);
      FloatVector d5 = FloatVector.fromArray(S, s, so + 5 * ss + i);
      FloatVector a = d4.sub(d2);
      FloatVector b = d3.sub(d1).mul(2f);
      d0.mul(4f).sub(d2.mul(5f)).add(d4).intoArray(d, dOff + i);
      d3.add(d4).sub(d1.add(d2).mul(4f)).intoArray(d, dOff + ds + i);
      d4.sub(d3).add(d1.sub(d2).mul(4f)).intoArray(d, dOff + 2 * ds + i);
      a.add(b).intoArray(d, dOff + 3 * ds + i);
      a.sub(b).intoArray(d, dOff + 4 * ds + i);
      d1.mul(4f).sub(d3.mul(5f)).add(d5).intoArray(d, dOff + 5 * ds + i);
    }
    RowKernels.winogradColumnsRange(s, so, ss, full, n, d, dOff, ds);
  }

  /** L columns at a time, the scalar expressions on lanes; the tail element by element. */
  @Override
  public void winogradColumnsGrad(float[] s, int so, int ss, int n, float[] d, int dOff, int ds) {
    int full = S.loopBound(n);
    for (int i = 0; i < full; i += L) {
      FloatVector e0 = FloatVector.fromArray(S, s, so + i);
      FloatVector e1 = FloatVector.fromArray(S, s, so + ss + i);
      FloatVector e2 = FloatVector.fromArray(S, s, so + 2 * ss + i);
      FloatVector e3 = FloatVector.fromArray(S, s, so + 3 * ss + i);
      FloatVector a = e0.add(e2);
      FloatVector b = e1.add(e3);
      FloatVector c = e0.add(e2.mul(4f));
      FloatVector e = e1.add(e3.mul(4f)).mul(2f);
      e0.intoArray(d, dOff + i);
      a.add(b).intoArray(d, dOff + ds + i);
      a.sub(b).intoArray(d, dOff + 2 * ds + i);
      c.add(e).intoArray(d, dOff + 3 * ds + i);
      c.sub(e).intoArray(d, dOff + 4 * ds + i);
      e3.intoArray(d, dOff + 5 * ds + i);
    }
    RowKernels.winogradColumnsGradRange(s, so, ss, full, n, d, dOff, ds);
  }

  /** L columns at a time, the scalar expressions on lanes; the tail element by element. */
  @Override
  public void winogradColumnsOut(float[] m, int mo, int ms, int n, float[] y, int yo, int ys) {
    int full = S.loopBound(n);
    for (int i = 0; i < full; i += L) {
      FloatVector m0 = FloatVector.fromArray(S, m, mo + i);
      FloatVector m1 = FloatVector.fromArray(S, m, mo + ms + i);
      FloatVector m2 = FloatVector.fromArray(S, m, mo + 2 * ms + i);
      FloatVector m3 = FloatVector.fromArray(S, m, mo + 3 * ms + i);
      FloatVector m4 = FloatVector.fromArray(S, m, mo + 4 * ms + i);
      FloatVector m5 = FloatVector.fromArray(S, m, mo + 5 * ms + i);
      FloatVector a = m1.add(m2);
      FloatVector b = m1.sub(m2);
      FloatVector c = m3.add(m4);
      FloatVector d = m3.sub(m4);
      m0.add(a).add(c).intoArray(y, yo + i);
      b.add(d.mul(2f)).intoArray(y, yo + ys + i);
      a.add(c.mul(4f)).intoArray(y, yo + 2 * ys + i);
      b.add(d.mul(8f)).add(m5).intoArray(y, yo + 3 * ys + i);
    }
    RowKernels.winogradColumnsOutRange(m, mo, ms, full, n, y, yo, ys);
  }

  @Override
  public void copyRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n) {
    int full = S.loopBound(n);
    VectorMask<Float> tail = S.indexInRange(full, n);
    for (int r = 0; r < rows; r++) {
      int a = so + r * ss;
      int b = dOff + r * ds;
      for (int k = 0; k < full; k += L) FloatVector.fromArray(S, s, a + k).intoArray(d, b + k);
      if (full == n) continue;
      if (a + full + L <= s.length && b + full + L <= d.length) {
        FloatVector.fromArray(S, s, a + full, tail).intoArray(d, b + full, tail);
      } else {
        for (int k = full; k < n; k++) d[b + k] = s[a + k];
      }
    }
  }

  /** Whole vectors of both rows by two-vector selects (ZIP_LO, ZIP_HI; PICK_EVEN, PICK_ODD), the rest element by element. */
  @Override
  public void interleave2(float[] a, int ao, float[] b, int bo, float[] d, int dOff, int n) {
    int i = 0;
    if (L >= 2) {
      for (; i <= n - L; i += L) {
        FloatVector va = FloatVector.fromArray(S, a, ao + i);
        FloatVector vb = FloatVector.fromArray(S, b, bo + i);
        ZIP_LO.selectFrom(va, vb).intoArray(d, dOff + 2 * i);
        ZIP_HI.selectFrom(va, vb).intoArray(d, dOff + 2 * i + L);
      }
    }
    for (; i < n; i++) {
      d[dOff + 2 * i] = a[ao + i];
      d[dOff + 2 * i + 1] = b[bo + i];
    }
  }

  @Override
  public void deinterleave2(float[] s, int so, float[] a, int ao, float[] b, int bo, int n) {
    int i = 0;
    if (L >= 2) {
      for (; i <= n - L; i += L) {
        FloatVector v0 = FloatVector.fromArray(S, s, so + 2 * i);
        FloatVector v1 = FloatVector.fromArray(S, s, so + 2 * i + L);
        PICK_EVEN.selectFrom(v0, v1).intoArray(a, ao + i);
        PICK_ODD.selectFrom(v0, v1).intoArray(b, bo + i);
      }
    }
    for (; i < n; i++) {
      a[ao + i] = s[so + 2 * i];
      b[bo + i] = s[so + 2 * i + 1];
    }
  }

  /** Lane indexes 0, 1, ..., L-1 as floats. */
  private static final FloatVector LANE = FloatVector.fromArray(S, laneIndexes(), 0);

  private static float[] laneIndexes() {
    float[] a = new float[L];
    for (int i = 0; i < L; i++) a[i] = i;
    return a;
  }

  /**
   * An image row (chunk of L columns) at a time: the chunk is loaded once, every tap's shifted column
   * row is added to it under a mask (in tap order), and it is stored once. Adding tap by tap into
   * the image instead (the generic loops) reloads what the previous tap just stored at an overlapping
   * offset, which stalls store forwarding: ~100 us for a block of 8 LeNet images. A chunk whose
   * vector would end past the plane is done element by element (a store must not touch another
   * plane, which another thread may own).
   */
  @Override
  public void col2imUnit(float[] col, int row0, int ld, int h, int w, int kh, int kw, int ph, int pw, int oh, int ow,
      float[] s, int so) {
    int end = so + h * w;
    for (int iy = 0; iy < h; iy++) {
      int rs = so + iy * w;
      for (int k0 = 0; k0 < w; k0 += L) {
        int sp = rs + k0;
        if (sp + L > end) {
          for (int ix = k0, n = Math.min(w, k0 + L); ix < n; ix++) {
            float v = s[rs + ix];
            for (int i = 0; i < kh; i++) {
              int oy = iy + ph - i;
              if (oy < 0 || oy >= oh) continue;
              for (int j = 0; j < kw; j++) {
                int ox = ix + pw - j;
                if (ox >= 0 && ox < ow) v += col[row0 + (i * kw + j) * ld + oy * ow + ox];
              }
            }
            s[rs + ix] = v;
          }
          continue;
        }
        FloatVector acc = FloatVector.fromArray(S, s, sp);
        for (int i = 0; i < kh; i++) {
          int oy = iy + ph - i;
          if (oy < 0 || oy >= oh) continue;
          for (int j = 0; j < kw; j++) {
            // lane l is ix = k0 + l, read from ox = ix + pw - j: valid for 0 <= ox < ow and ix < w
            int lo = j - pw - k0;
            int hi = Math.min(w, ow + j - pw) - k0;
            if (hi <= Math.max(0, lo) || lo >= L) continue;
            VectorMask<Float> m = LANE.compare(GE, (float) lo).and(LANE.compare(LT, (float) hi)); // lanes [lo, hi)
            int base = row0 + (i * kw + j) * ld + oy * ow + k0 + pw - j;
            FloatVector v = base >= 0 && base + L <= col.length ? FloatVector.fromArray(S, col, base)
                : FloatVector.fromArray(S, col, base, m);
            acc = acc.add(v, m);
          }
        }
        acc.intoArray(s, sp);
      }
    }
  }

  @Override
  public void addRows(float[] s, int so, int ss, float[] d, int dOff, int ds, int rows, int n) {
    int full = S.loopBound(n);
    VectorMask<Float> tail = S.indexInRange(full, n);
    for (int r = 0; r < rows; r++) {
      int a = so + r * ss;
      int b = dOff + r * ds;
      for (int k = 0; k < full; k += L) {
        FloatVector.fromArray(S, d, b + k).add(FloatVector.fromArray(S, s, a + k)).intoArray(d, b + k);
      }
      if (full == n) continue;
      if (a + full + L <= s.length && b + full + L <= d.length) {
        FloatVector.fromArray(S, d, b + full, tail).add(FloatVector.fromArray(S, s, a + full, tail))
            .intoArray(d, b + full, tail);
      } else {
        for (int k = full; k < n; k++) d[b + k] += s[a + k];
      }
    }
  }

  @Override
  public int directWidth() {
    return 2 * L;
  }

  @Override
  public int convLanes() {
    return L;
  }

  @Override
  public int convWeightWidth() {
    return 2 * L;
  }

  @Override
  public int convWeightWidth6() {
    return 4 * L;
  }

  /**
   * 16 x 16 register transposes (channels x positions -> positions x channels) where 16 channels and
   * 16 positions are whole, element by element elsewhere. The element loop, one load and one store
   * 32 floats apart per element, was 4.4 thread-ms of a 66 ms convnet step (batch 64, two threads).
   */
  @Override
  public void packPositionMajor(float[] g, int src, int o, int opad, int cols, int width, float[] gp) {
    if (!Transpose16.APPLIES || width % 16 != 0) {
      RowKernels.packPositionMajor(g, src, o, 0, opad, 0, cols, width, gp);
      return;
    }
    int full = o / 16 * 16; // channels in whole blocks of 16 (width is a multiple of 16: a block never spans two tiles)
    int cols16 = cols / 16 * 16;
    for (int c = 0; c < full; c += 16) {
      int d = (c / width) * cols * width + c % width;
      for (int p = 0; p < cols16; p += 16) Transpose16.transpose(g, src + c * cols + p, cols, gp, d + p * width, width, 0f);
    }
    if (cols16 < cols) RowKernels.packPositionMajor(g, src, o, 0, full, cols16, cols, width, gp);
    RowKernels.packPositionMajor(g, src, o, full, opad, 0, cols, width, gp);
  }

  /** 12 taps x 2 vectors of channels: 24 accumulators, per position 2 loads of the gradient and 12 broadcasts. */
  @Override
  public void convWeightTile(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp, int gpo,
      float[] c, int co, int ldc) {
    FloatVector a00 = FloatVector.fromArray(S, c, co + 0 * ldc), a01 = FloatVector.fromArray(S, c, co + 0 * ldc + L);
    FloatVector a10 = FloatVector.fromArray(S, c, co + 1 * ldc), a11 = FloatVector.fromArray(S, c, co + 1 * ldc + L);
    FloatVector a20 = FloatVector.fromArray(S, c, co + 2 * ldc), a21 = FloatVector.fromArray(S, c, co + 2 * ldc + L);
    FloatVector a30 = FloatVector.fromArray(S, c, co + 3 * ldc), a31 = FloatVector.fromArray(S, c, co + 3 * ldc + L);
    FloatVector a40 = FloatVector.fromArray(S, c, co + 4 * ldc), a41 = FloatVector.fromArray(S, c, co + 4 * ldc + L);
    FloatVector a50 = FloatVector.fromArray(S, c, co + 5 * ldc), a51 = FloatVector.fromArray(S, c, co + 5 * ldc + L);
    FloatVector a60 = FloatVector.fromArray(S, c, co + 6 * ldc), a61 = FloatVector.fromArray(S, c, co + 6 * ldc + L);
    FloatVector a70 = FloatVector.fromArray(S, c, co + 7 * ldc), a71 = FloatVector.fromArray(S, c, co + 7 * ldc + L);
    FloatVector a80 = FloatVector.fromArray(S, c, co + 8 * ldc), a81 = FloatVector.fromArray(S, c, co + 8 * ldc + L);
    FloatVector a90 = FloatVector.fromArray(S, c, co + 9 * ldc), a91 = FloatVector.fromArray(S, c, co + 9 * ldc + L);
    FloatVector a100 = FloatVector.fromArray(S, c, co + 10 * ldc), a101 = FloatVector.fromArray(S, c, co + 10 * ldc + L);
    FloatVector a110 = FloatVector.fromArray(S, c, co + 11 * ldc), a111 = FloatVector.fromArray(S, c, co + 11 * ldc + L);
    int x0 = xo + offs[k0 + 0];
    int x1 = xo + offs[k0 + 1];
    int x2 = xo + offs[k0 + 2];
    int x3 = xo + offs[k0 + 3];
    int x4 = xo + offs[k0 + 4];
    int x5 = xo + offs[k0 + 5];
    int x6 = xo + offs[k0 + 6];
    int x7 = xo + offs[k0 + 7];
    int x8 = xo + offs[k0 + 8];
    int x9 = xo + offs[k0 + 9];
    int x10 = xo + offs[k0 + 10];
    int x11 = xo + offs[k0 + 11];
    for (int oy = 0, g = gpo; oy < oh; oy++) {
      int row = oy * pitch;
      for (int ox = 0; ox < ow; ox++, g += 2 * L) {
        int at = row + ox;
        FloatVector b0 = FloatVector.fromArray(S, gp, g);
        FloatVector b1 = FloatVector.fromArray(S, gp, g + L);
        FloatVector s0 = FloatVector.broadcast(S, xp[x0 + at]);
        a00 = s0.fma(b0, a00);
        a01 = s0.fma(b1, a01);
        FloatVector s1 = FloatVector.broadcast(S, xp[x1 + at]);
        a10 = s1.fma(b0, a10);
        a11 = s1.fma(b1, a11);
        FloatVector s2 = FloatVector.broadcast(S, xp[x2 + at]);
        a20 = s2.fma(b0, a20);
        a21 = s2.fma(b1, a21);
        FloatVector s3 = FloatVector.broadcast(S, xp[x3 + at]);
        a30 = s3.fma(b0, a30);
        a31 = s3.fma(b1, a31);
        FloatVector s4 = FloatVector.broadcast(S, xp[x4 + at]);
        a40 = s4.fma(b0, a40);
        a41 = s4.fma(b1, a41);
        FloatVector s5 = FloatVector.broadcast(S, xp[x5 + at]);
        a50 = s5.fma(b0, a50);
        a51 = s5.fma(b1, a51);
        FloatVector s6 = FloatVector.broadcast(S, xp[x6 + at]);
        a60 = s6.fma(b0, a60);
        a61 = s6.fma(b1, a61);
        FloatVector s7 = FloatVector.broadcast(S, xp[x7 + at]);
        a70 = s7.fma(b0, a70);
        a71 = s7.fma(b1, a71);
        FloatVector s8 = FloatVector.broadcast(S, xp[x8 + at]);
        a80 = s8.fma(b0, a80);
        a81 = s8.fma(b1, a81);
        FloatVector s9 = FloatVector.broadcast(S, xp[x9 + at]);
        a90 = s9.fma(b0, a90);
        a91 = s9.fma(b1, a91);
        FloatVector s10 = FloatVector.broadcast(S, xp[x10 + at]);
        a100 = s10.fma(b0, a100);
        a101 = s10.fma(b1, a101);
        FloatVector s11 = FloatVector.broadcast(S, xp[x11 + at]);
        a110 = s11.fma(b0, a110);
        a111 = s11.fma(b1, a111);
      }
    }
    a00.intoArray(c, co + 0 * ldc);
    a01.intoArray(c, co + 0 * ldc + L);
    a10.intoArray(c, co + 1 * ldc);
    a11.intoArray(c, co + 1 * ldc + L);
    a20.intoArray(c, co + 2 * ldc);
    a21.intoArray(c, co + 2 * ldc + L);
    a30.intoArray(c, co + 3 * ldc);
    a31.intoArray(c, co + 3 * ldc + L);
    a40.intoArray(c, co + 4 * ldc);
    a41.intoArray(c, co + 4 * ldc + L);
    a50.intoArray(c, co + 5 * ldc);
    a51.intoArray(c, co + 5 * ldc + L);
    a60.intoArray(c, co + 6 * ldc);
    a61.intoArray(c, co + 6 * ldc + L);
    a70.intoArray(c, co + 7 * ldc);
    a71.intoArray(c, co + 7 * ldc + L);
    a80.intoArray(c, co + 8 * ldc);
    a81.intoArray(c, co + 8 * ldc + L);
    a90.intoArray(c, co + 9 * ldc);
    a91.intoArray(c, co + 9 * ldc + L);
    a100.intoArray(c, co + 10 * ldc);
    a101.intoArray(c, co + 10 * ldc + L);
    a110.intoArray(c, co + 11 * ldc);
    a111.intoArray(c, co + 11 * ldc + L);
  }

  /**
   * 6 taps x 4 vectors of channels: 24 accumulators, per position 4 loads of the packed operand and 6 broadcasts
   * (the 12 x 2 tile's 2 and 12), and 6 tap offsets held where that tile holds 12.
   */
  @Override
  public void convWeightTile6(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp, int gpo,
      float[] c, int co, int ldc) {
    FloatVector a00 = FloatVector.fromArray(S, c, co + 0 * ldc), a01 = FloatVector.fromArray(S, c, co + 0 * ldc + L);
    FloatVector a02 = FloatVector.fromArray(S, c, co + 0 * ldc + 2 * L);
    FloatVector a03 = FloatVector.fromArray(S, c, co + 0 * ldc + 3 * L);
    FloatVector a10 = FloatVector.fromArray(S, c, co + 1 * ldc), a11 = FloatVector.fromArray(S, c, co + 1 * ldc + L);
    FloatVector a12 = FloatVector.fromArray(S, c, co + 1 * ldc + 2 * L);
    FloatVector a13 = FloatVector.fromArray(S, c, co + 1 * ldc + 3 * L);
    FloatVector a20 = FloatVector.fromArray(S, c, co + 2 * ldc), a21 = FloatVector.fromArray(S, c, co + 2 * ldc + L);
    FloatVector a22 = FloatVector.fromArray(S, c, co + 2 * ldc + 2 * L);
    FloatVector a23 = FloatVector.fromArray(S, c, co + 2 * ldc + 3 * L);
    FloatVector a30 = FloatVector.fromArray(S, c, co + 3 * ldc), a31 = FloatVector.fromArray(S, c, co + 3 * ldc + L);
    FloatVector a32 = FloatVector.fromArray(S, c, co + 3 * ldc + 2 * L);
    FloatVector a33 = FloatVector.fromArray(S, c, co + 3 * ldc + 3 * L);
    FloatVector a40 = FloatVector.fromArray(S, c, co + 4 * ldc), a41 = FloatVector.fromArray(S, c, co + 4 * ldc + L);
    FloatVector a42 = FloatVector.fromArray(S, c, co + 4 * ldc + 2 * L);
    FloatVector a43 = FloatVector.fromArray(S, c, co + 4 * ldc + 3 * L);
    FloatVector a50 = FloatVector.fromArray(S, c, co + 5 * ldc), a51 = FloatVector.fromArray(S, c, co + 5 * ldc + L);
    FloatVector a52 = FloatVector.fromArray(S, c, co + 5 * ldc + 2 * L);
    FloatVector a53 = FloatVector.fromArray(S, c, co + 5 * ldc + 3 * L);
    int x0 = xo + offs[k0 + 0];
    int x1 = xo + offs[k0 + 1];
    int x2 = xo + offs[k0 + 2];
    int x3 = xo + offs[k0 + 3];
    int x4 = xo + offs[k0 + 4];
    int x5 = xo + offs[k0 + 5];
    for (int oy = 0, g = gpo; oy < oh; oy++) {
      int row = oy * pitch;
      for (int ox = 0; ox < ow; ox++, g += 4 * L) {
        int at = row + ox;
        FloatVector b0 = FloatVector.fromArray(S, gp, g);
        FloatVector b1 = FloatVector.fromArray(S, gp, g + L);
        FloatVector b2 = FloatVector.fromArray(S, gp, g + 2 * L);
        FloatVector b3 = FloatVector.fromArray(S, gp, g + 3 * L);
        FloatVector s0 = FloatVector.broadcast(S, xp[x0 + at]);
        a00 = s0.fma(b0, a00);
        a01 = s0.fma(b1, a01);
        a02 = s0.fma(b2, a02);
        a03 = s0.fma(b3, a03);
        FloatVector s1 = FloatVector.broadcast(S, xp[x1 + at]);
        a10 = s1.fma(b0, a10);
        a11 = s1.fma(b1, a11);
        a12 = s1.fma(b2, a12);
        a13 = s1.fma(b3, a13);
        FloatVector s2 = FloatVector.broadcast(S, xp[x2 + at]);
        a20 = s2.fma(b0, a20);
        a21 = s2.fma(b1, a21);
        a22 = s2.fma(b2, a22);
        a23 = s2.fma(b3, a23);
        FloatVector s3 = FloatVector.broadcast(S, xp[x3 + at]);
        a30 = s3.fma(b0, a30);
        a31 = s3.fma(b1, a31);
        a32 = s3.fma(b2, a32);
        a33 = s3.fma(b3, a33);
        FloatVector s4 = FloatVector.broadcast(S, xp[x4 + at]);
        a40 = s4.fma(b0, a40);
        a41 = s4.fma(b1, a41);
        a42 = s4.fma(b2, a42);
        a43 = s4.fma(b3, a43);
        FloatVector s5 = FloatVector.broadcast(S, xp[x5 + at]);
        a50 = s5.fma(b0, a50);
        a51 = s5.fma(b1, a51);
        a52 = s5.fma(b2, a52);
        a53 = s5.fma(b3, a53);
      }
    }
    a00.intoArray(c, co + 0 * ldc);
    a01.intoArray(c, co + 0 * ldc + L);
    a02.intoArray(c, co + 0 * ldc + 2 * L);
    a03.intoArray(c, co + 0 * ldc + 3 * L);
    a10.intoArray(c, co + 1 * ldc);
    a11.intoArray(c, co + 1 * ldc + L);
    a12.intoArray(c, co + 1 * ldc + 2 * L);
    a13.intoArray(c, co + 1 * ldc + 3 * L);
    a20.intoArray(c, co + 2 * ldc);
    a21.intoArray(c, co + 2 * ldc + L);
    a22.intoArray(c, co + 2 * ldc + 2 * L);
    a23.intoArray(c, co + 2 * ldc + 3 * L);
    a30.intoArray(c, co + 3 * ldc);
    a31.intoArray(c, co + 3 * ldc + L);
    a32.intoArray(c, co + 3 * ldc + 2 * L);
    a33.intoArray(c, co + 3 * ldc + 3 * L);
    a40.intoArray(c, co + 4 * ldc);
    a41.intoArray(c, co + 4 * ldc + L);
    a42.intoArray(c, co + 4 * ldc + 2 * L);
    a43.intoArray(c, co + 4 * ldc + 3 * L);
    a50.intoArray(c, co + 5 * ldc);
    a51.intoArray(c, co + 5 * ldc + L);
    a52.intoArray(c, co + 5 * ldc + 2 * L);
    a53.intoArray(c, co + 5 * ldc + 3 * L);
  }

  /**
   * 12 taps x 1 vector of channels: 12 accumulators, per position 1 load of the gradient and 12 broadcasts. The
   * chains are those of {@link #convWeightTile}'s first vector, so the bits are the same.
   */
  @Override
  public void convWeightTileNarrow(float[] xp, int xo, int[] offs, int k0, int pitch, int oh, int ow, float[] gp,
      int gpo, float[] c, int co, int ldc) {
    FloatVector a0 = FloatVector.fromArray(S, c, co + 0 * ldc);
    FloatVector a1 = FloatVector.fromArray(S, c, co + 1 * ldc);
    FloatVector a2 = FloatVector.fromArray(S, c, co + 2 * ldc);
    FloatVector a3 = FloatVector.fromArray(S, c, co + 3 * ldc);
    FloatVector a4 = FloatVector.fromArray(S, c, co + 4 * ldc);
    FloatVector a5 = FloatVector.fromArray(S, c, co + 5 * ldc);
    FloatVector a6 = FloatVector.fromArray(S, c, co + 6 * ldc);
    FloatVector a7 = FloatVector.fromArray(S, c, co + 7 * ldc);
    FloatVector a8 = FloatVector.fromArray(S, c, co + 8 * ldc);
    FloatVector a9 = FloatVector.fromArray(S, c, co + 9 * ldc);
    FloatVector a10 = FloatVector.fromArray(S, c, co + 10 * ldc);
    FloatVector a11 = FloatVector.fromArray(S, c, co + 11 * ldc);
    int x0 = xo + offs[k0 + 0];
    int x1 = xo + offs[k0 + 1];
    int x2 = xo + offs[k0 + 2];
    int x3 = xo + offs[k0 + 3];
    int x4 = xo + offs[k0 + 4];
    int x5 = xo + offs[k0 + 5];
    int x6 = xo + offs[k0 + 6];
    int x7 = xo + offs[k0 + 7];
    int x8 = xo + offs[k0 + 8];
    int x9 = xo + offs[k0 + 9];
    int x10 = xo + offs[k0 + 10];
    int x11 = xo + offs[k0 + 11];
    for (int oy = 0, g = gpo; oy < oh; oy++) {
      int row = oy * pitch;
      for (int ox = 0; ox < ow; ox++, g += L) {
        int at = row + ox;
        FloatVector b = FloatVector.fromArray(S, gp, g);
        a0 = FloatVector.broadcast(S, xp[x0 + at]).fma(b, a0);
        a1 = FloatVector.broadcast(S, xp[x1 + at]).fma(b, a1);
        a2 = FloatVector.broadcast(S, xp[x2 + at]).fma(b, a2);
        a3 = FloatVector.broadcast(S, xp[x3 + at]).fma(b, a3);
        a4 = FloatVector.broadcast(S, xp[x4 + at]).fma(b, a4);
        a5 = FloatVector.broadcast(S, xp[x5 + at]).fma(b, a5);
        a6 = FloatVector.broadcast(S, xp[x6 + at]).fma(b, a6);
        a7 = FloatVector.broadcast(S, xp[x7 + at]).fma(b, a7);
        a8 = FloatVector.broadcast(S, xp[x8 + at]).fma(b, a8);
        a9 = FloatVector.broadcast(S, xp[x9 + at]).fma(b, a9);
        a10 = FloatVector.broadcast(S, xp[x10 + at]).fma(b, a10);
        a11 = FloatVector.broadcast(S, xp[x11 + at]).fma(b, a11);
      }
    }
    a0.intoArray(c, co + 0 * ldc);
    a1.intoArray(c, co + 1 * ldc);
    a2.intoArray(c, co + 2 * ldc);
    a3.intoArray(c, co + 3 * ldc);
    a4.intoArray(c, co + 4 * ldc);
    a5.intoArray(c, co + 5 * ldc);
    a6.intoArray(c, co + 6 * ldc);
    a7.intoArray(c, co + 7 * ldc);
    a8.intoArray(c, co + 8 * ldc);
    a9.intoArray(c, co + 9 * ldc);
    a10.intoArray(c, co + 10 * ldc);
    a11.intoArray(c, co + 11 * ldc);
  }

  /**
   * The tap loops' stride in the convTile kernels: 1, but read from a field the JIT does not take for a constant, so
   * that those loops are not counted loops. C2 strip-mines a counted loop (an outer loop that polls for a safepoint
   * every LoopStripMiningIter iterations), and the outer loop's bounds took two of the integer registers the 24
   * accumulators' loop needs: the 8 x 3 tile then moved the input's base from a vector register to an integer one
   * and shuffled two more every tap, and ran 125-130 GFLOP/s on one core (K = 256, 16 slots, hot in cache) where the
   * same tile as a plain loop polling every tap runs 155-158 (and -XX:-UseCountedLoopSafepoints 164-168). The fast
   * form also came when the JIT had only seen calls with init null, and was lost on the first call with a bias.
   * Same chains, same bits.
   */
  private static int tapStep = 1;

  /** Tiles of 8 channels x 3 slots (vectors) of positions: 24 accumulators, per tap 3 loads of x and 8 broadcasts. */
  @Override
  public void convTile(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read,
      int[] write, int nslots, float[] y, int yo, int ldy, boolean relu) {
    int s = 0;
    for (; s + 3 <= nslots; s += 3) {
      convTile3(xp, offs, kdim, wp, wo, init, io, y, yo, ldy, read[s], read[s + 1], read[s + 2], write[s],
          write[s + 1], write[s + 2], relu);
    }
    for (; s < nslots; s++) convTile1(xp, offs, kdim, wp, wo, init, io, y, yo, ldy, read[s], write[s], relu);
  }

  /** The one or two slots past the last group of three, one at a time (8 accumulators). */
  private static void convTile1(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, float[] y,
      int yo, int ldy, int p, int q, boolean relu) {
    FloatVector a0 = FloatVector.broadcast(S, init == null ? 0f : init[io + 0]);
    FloatVector a1 = FloatVector.broadcast(S, init == null ? 0f : init[io + 1]);
    FloatVector a2 = FloatVector.broadcast(S, init == null ? 0f : init[io + 2]);
    FloatVector a3 = FloatVector.broadcast(S, init == null ? 0f : init[io + 3]);
    FloatVector a4 = FloatVector.broadcast(S, init == null ? 0f : init[io + 4]);
    FloatVector a5 = FloatVector.broadcast(S, init == null ? 0f : init[io + 5]);
    FloatVector a6 = FloatVector.broadcast(S, init == null ? 0f : init[io + 6]);
    FloatVector a7 = FloatVector.broadcast(S, init == null ? 0f : init[io + 7]);
    int step = tapStep;
    for (int k = 0, w = wo; k < kdim; k += step, w += step * CONV_TILE) {
      FloatVector x = FloatVector.fromArray(S, xp, offs[k] + p);
      a0 = x.fma(FloatVector.broadcast(S, wp[w + 0]), a0);
      a1 = x.fma(FloatVector.broadcast(S, wp[w + 1]), a1);
      a2 = x.fma(FloatVector.broadcast(S, wp[w + 2]), a2);
      a3 = x.fma(FloatVector.broadcast(S, wp[w + 3]), a3);
      a4 = x.fma(FloatVector.broadcast(S, wp[w + 4]), a4);
      a5 = x.fma(FloatVector.broadcast(S, wp[w + 5]), a5);
      a6 = x.fma(FloatVector.broadcast(S, wp[w + 6]), a6);
      a7 = x.fma(FloatVector.broadcast(S, wp[w + 7]), a7);
    }
    if (relu) { // the fused ReLU, in registers: x <= 0 ? 0 : x as the RELU kernel (inline: a call would box)
      FloatVector z = FloatVector.zero(S);
      a0 = a0.blend(z, a0.compare(LE, 0f));
      a1 = a1.blend(z, a1.compare(LE, 0f));
      a2 = a2.blend(z, a2.compare(LE, 0f));
      a3 = a3.blend(z, a3.compare(LE, 0f));
      a4 = a4.blend(z, a4.compare(LE, 0f));
      a5 = a5.blend(z, a5.compare(LE, 0f));
      a6 = a6.blend(z, a6.compare(LE, 0f));
      a7 = a7.blend(z, a7.compare(LE, 0f));
    }
    a0.intoArray(y, yo + 0 * ldy + q);
    a1.intoArray(y, yo + 1 * ldy + q);
    a2.intoArray(y, yo + 2 * ldy + q);
    a3.intoArray(y, yo + 3 * ldy + q);
    a4.intoArray(y, yo + 4 * ldy + q);
    a5.intoArray(y, yo + 5 * ldy + q);
    a6.intoArray(y, yo + 6 * ldy + q);
    a7.intoArray(y, yo + 7 * ldy + q);
  }

  private static void convTile3(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, float[] y,
      int yo, int ldy, int p0, int p1, int p2, int q0, int q1, int q2, boolean relu) {
    FloatVector a00 = FloatVector.broadcast(S, init == null ? 0f : init[io + 0]), a01 = a00, a02 = a00;
    FloatVector a10 = FloatVector.broadcast(S, init == null ? 0f : init[io + 1]), a11 = a10, a12 = a10;
    FloatVector a20 = FloatVector.broadcast(S, init == null ? 0f : init[io + 2]), a21 = a20, a22 = a20;
    FloatVector a30 = FloatVector.broadcast(S, init == null ? 0f : init[io + 3]), a31 = a30, a32 = a30;
    FloatVector a40 = FloatVector.broadcast(S, init == null ? 0f : init[io + 4]), a41 = a40, a42 = a40;
    FloatVector a50 = FloatVector.broadcast(S, init == null ? 0f : init[io + 5]), a51 = a50, a52 = a50;
    FloatVector a60 = FloatVector.broadcast(S, init == null ? 0f : init[io + 6]), a61 = a60, a62 = a60;
    FloatVector a70 = FloatVector.broadcast(S, init == null ? 0f : init[io + 7]), a71 = a70, a72 = a70;
    int step = tapStep;
    for (int k = 0, w = wo; k < kdim; k += step, w += step * CONV_TILE) {
      int at = offs[k];
      FloatVector x0 = FloatVector.fromArray(S, xp, at + p0);
      FloatVector x1 = FloatVector.fromArray(S, xp, at + p1);
      FloatVector x2 = FloatVector.fromArray(S, xp, at + p2);
      FloatVector b0 = FloatVector.broadcast(S, wp[w + 0]);
      a00 = x0.fma(b0, a00);
      a01 = x1.fma(b0, a01);
      a02 = x2.fma(b0, a02);
      FloatVector b1 = FloatVector.broadcast(S, wp[w + 1]);
      a10 = x0.fma(b1, a10);
      a11 = x1.fma(b1, a11);
      a12 = x2.fma(b1, a12);
      FloatVector b2 = FloatVector.broadcast(S, wp[w + 2]);
      a20 = x0.fma(b2, a20);
      a21 = x1.fma(b2, a21);
      a22 = x2.fma(b2, a22);
      FloatVector b3 = FloatVector.broadcast(S, wp[w + 3]);
      a30 = x0.fma(b3, a30);
      a31 = x1.fma(b3, a31);
      a32 = x2.fma(b3, a32);
      FloatVector b4 = FloatVector.broadcast(S, wp[w + 4]);
      a40 = x0.fma(b4, a40);
      a41 = x1.fma(b4, a41);
      a42 = x2.fma(b4, a42);
      FloatVector b5 = FloatVector.broadcast(S, wp[w + 5]);
      a50 = x0.fma(b5, a50);
      a51 = x1.fma(b5, a51);
      a52 = x2.fma(b5, a52);
      FloatVector b6 = FloatVector.broadcast(S, wp[w + 6]);
      a60 = x0.fma(b6, a60);
      a61 = x1.fma(b6, a61);
      a62 = x2.fma(b6, a62);
      FloatVector b7 = FloatVector.broadcast(S, wp[w + 7]);
      a70 = x0.fma(b7, a70);
      a71 = x1.fma(b7, a71);
      a72 = x2.fma(b7, a72);
    }
    if (relu) { // the fused ReLU, in registers: x <= 0 ? 0 : x as the RELU kernel (inline: a call would box)
      FloatVector z = FloatVector.zero(S);
      a00 = a00.blend(z, a00.compare(LE, 0f));
      a01 = a01.blend(z, a01.compare(LE, 0f));
      a02 = a02.blend(z, a02.compare(LE, 0f));
      a10 = a10.blend(z, a10.compare(LE, 0f));
      a11 = a11.blend(z, a11.compare(LE, 0f));
      a12 = a12.blend(z, a12.compare(LE, 0f));
      a20 = a20.blend(z, a20.compare(LE, 0f));
      a21 = a21.blend(z, a21.compare(LE, 0f));
      a22 = a22.blend(z, a22.compare(LE, 0f));
      a30 = a30.blend(z, a30.compare(LE, 0f));
      a31 = a31.blend(z, a31.compare(LE, 0f));
      a32 = a32.blend(z, a32.compare(LE, 0f));
      a40 = a40.blend(z, a40.compare(LE, 0f));
      a41 = a41.blend(z, a41.compare(LE, 0f));
      a42 = a42.blend(z, a42.compare(LE, 0f));
      a50 = a50.blend(z, a50.compare(LE, 0f));
      a51 = a51.blend(z, a51.compare(LE, 0f));
      a52 = a52.blend(z, a52.compare(LE, 0f));
      a60 = a60.blend(z, a60.compare(LE, 0f));
      a61 = a61.blend(z, a61.compare(LE, 0f));
      a62 = a62.blend(z, a62.compare(LE, 0f));
      a70 = a70.blend(z, a70.compare(LE, 0f));
      a71 = a71.blend(z, a71.compare(LE, 0f));
      a72 = a72.blend(z, a72.compare(LE, 0f));
    }
    a00.intoArray(y, yo + 0 * ldy + q0);
    a01.intoArray(y, yo + 0 * ldy + q1);
    a02.intoArray(y, yo + 0 * ldy + q2);
    a10.intoArray(y, yo + 1 * ldy + q0);
    a11.intoArray(y, yo + 1 * ldy + q1);
    a12.intoArray(y, yo + 1 * ldy + q2);
    a20.intoArray(y, yo + 2 * ldy + q0);
    a21.intoArray(y, yo + 2 * ldy + q1);
    a22.intoArray(y, yo + 2 * ldy + q2);
    a30.intoArray(y, yo + 3 * ldy + q0);
    a31.intoArray(y, yo + 3 * ldy + q1);
    a32.intoArray(y, yo + 3 * ldy + q2);
    a40.intoArray(y, yo + 4 * ldy + q0);
    a41.intoArray(y, yo + 4 * ldy + q1);
    a42.intoArray(y, yo + 4 * ldy + q2);
    a50.intoArray(y, yo + 5 * ldy + q0);
    a51.intoArray(y, yo + 5 * ldy + q1);
    a52.intoArray(y, yo + 5 * ldy + q2);
    a60.intoArray(y, yo + 6 * ldy + q0);
    a61.intoArray(y, yo + 6 * ldy + q1);
    a62.intoArray(y, yo + 6 * ldy + q2);
    a70.intoArray(y, yo + 7 * ldy + q0);
    a71.intoArray(y, yo + 7 * ldy + q1);
    a72.intoArray(y, yo + 7 * ldy + q2);
  }

  /**
   * Tiles of 6 channels x 4 slots: 24 accumulators, per tap 4 loads of x and 6 broadcasts (the 8-channel tile's
   * 3 and 8); the last one to three slots two and one at a time.
   */
  @Override
  public void convTile6(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, int[] read,
      int[] write, int nslots, float[] y, int yo, int ldy, boolean relu) {
    int s = 0;
    for (; s + 4 <= nslots; s += 4) {
      convTile6x4(xp, offs, kdim, wp, wo, init, io, y, yo, ldy, read[s], read[s + 1], read[s + 2], read[s + 3], write[s],
          write[s + 1], write[s + 2], write[s + 3], relu);
    }
    for (; s + 2 <= nslots; s += 2) {
      convTile6x2(xp, offs, kdim, wp, wo, init, io, y, yo, ldy, read[s], read[s + 1], write[s], write[s + 1], relu);
    }
    if (s < nslots) convTile6x1(xp, offs, kdim, wp, wo, init, io, y, yo, ldy, read[s], write[s], relu);
  }

  private static void convTile6x4(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, float[] y,
      int yo, int ldy, int p0, int p1, int p2, int p3, int q0, int q1, int q2, int q3, boolean relu) {
    FloatVector a00 = FloatVector.broadcast(S, init == null ? 0f : init[io + 0]), a01 = a00, a02 = a00, a03 = a00;
    FloatVector a10 = FloatVector.broadcast(S, init == null ? 0f : init[io + 1]), a11 = a10, a12 = a10, a13 = a10;
    FloatVector a20 = FloatVector.broadcast(S, init == null ? 0f : init[io + 2]), a21 = a20, a22 = a20, a23 = a20;
    FloatVector a30 = FloatVector.broadcast(S, init == null ? 0f : init[io + 3]), a31 = a30, a32 = a30, a33 = a30;
    FloatVector a40 = FloatVector.broadcast(S, init == null ? 0f : init[io + 4]), a41 = a40, a42 = a40, a43 = a40;
    FloatVector a50 = FloatVector.broadcast(S, init == null ? 0f : init[io + 5]), a51 = a50, a52 = a50, a53 = a50;
    int step = tapStep;
    for (int k = 0, w = wo; k < kdim; k += step, w += step * CONV_TILE6) {
      int at = offs[k];
      FloatVector x0 = FloatVector.fromArray(S, xp, at + p0);
      FloatVector x1 = FloatVector.fromArray(S, xp, at + p1);
      FloatVector x2 = FloatVector.fromArray(S, xp, at + p2);
      FloatVector x3 = FloatVector.fromArray(S, xp, at + p3);
      FloatVector b0 = FloatVector.broadcast(S, wp[w + 0]);
      a00 = x0.fma(b0, a00);
      a01 = x1.fma(b0, a01);
      a02 = x2.fma(b0, a02);
      a03 = x3.fma(b0, a03);
      FloatVector b1 = FloatVector.broadcast(S, wp[w + 1]);
      a10 = x0.fma(b1, a10);
      a11 = x1.fma(b1, a11);
      a12 = x2.fma(b1, a12);
      a13 = x3.fma(b1, a13);
      FloatVector b2 = FloatVector.broadcast(S, wp[w + 2]);
      a20 = x0.fma(b2, a20);
      a21 = x1.fma(b2, a21);
      a22 = x2.fma(b2, a22);
      a23 = x3.fma(b2, a23);
      FloatVector b3 = FloatVector.broadcast(S, wp[w + 3]);
      a30 = x0.fma(b3, a30);
      a31 = x1.fma(b3, a31);
      a32 = x2.fma(b3, a32);
      a33 = x3.fma(b3, a33);
      FloatVector b4 = FloatVector.broadcast(S, wp[w + 4]);
      a40 = x0.fma(b4, a40);
      a41 = x1.fma(b4, a41);
      a42 = x2.fma(b4, a42);
      a43 = x3.fma(b4, a43);
      FloatVector b5 = FloatVector.broadcast(S, wp[w + 5]);
      a50 = x0.fma(b5, a50);
      a51 = x1.fma(b5, a51);
      a52 = x2.fma(b5, a52);
      a53 = x3.fma(b5, a53);
    }
    if (relu) { // the fused ReLU, as convTile3
      FloatVector z = FloatVector.zero(S);
      a00 = a00.blend(z, a00.compare(LE, 0f));
      a01 = a01.blend(z, a01.compare(LE, 0f));
      a02 = a02.blend(z, a02.compare(LE, 0f));
      a03 = a03.blend(z, a03.compare(LE, 0f));
      a10 = a10.blend(z, a10.compare(LE, 0f));
      a11 = a11.blend(z, a11.compare(LE, 0f));
      a12 = a12.blend(z, a12.compare(LE, 0f));
      a13 = a13.blend(z, a13.compare(LE, 0f));
      a20 = a20.blend(z, a20.compare(LE, 0f));
      a21 = a21.blend(z, a21.compare(LE, 0f));
      a22 = a22.blend(z, a22.compare(LE, 0f));
      a23 = a23.blend(z, a23.compare(LE, 0f));
      a30 = a30.blend(z, a30.compare(LE, 0f));
      a31 = a31.blend(z, a31.compare(LE, 0f));
      a32 = a32.blend(z, a32.compare(LE, 0f));
      a33 = a33.blend(z, a33.compare(LE, 0f));
      a40 = a40.blend(z, a40.compare(LE, 0f));
      a41 = a41.blend(z, a41.compare(LE, 0f));
      a42 = a42.blend(z, a42.compare(LE, 0f));
      a43 = a43.blend(z, a43.compare(LE, 0f));
      a50 = a50.blend(z, a50.compare(LE, 0f));
      a51 = a51.blend(z, a51.compare(LE, 0f));
      a52 = a52.blend(z, a52.compare(LE, 0f));
      a53 = a53.blend(z, a53.compare(LE, 0f));
    }
    a00.intoArray(y, yo + 0 * ldy + q0);
    a01.intoArray(y, yo + 0 * ldy + q1);
    a02.intoArray(y, yo + 0 * ldy + q2);
    a03.intoArray(y, yo + 0 * ldy + q3);
    a10.intoArray(y, yo + 1 * ldy + q0);
    a11.intoArray(y, yo + 1 * ldy + q1);
    a12.intoArray(y, yo + 1 * ldy + q2);
    a13.intoArray(y, yo + 1 * ldy + q3);
    a20.intoArray(y, yo + 2 * ldy + q0);
    a21.intoArray(y, yo + 2 * ldy + q1);
    a22.intoArray(y, yo + 2 * ldy + q2);
    a23.intoArray(y, yo + 2 * ldy + q3);
    a30.intoArray(y, yo + 3 * ldy + q0);
    a31.intoArray(y, yo + 3 * ldy + q1);
    a32.intoArray(y, yo + 3 * ldy + q2);
    a33.intoArray(y, yo + 3 * ldy + q3);
    a40.intoArray(y, yo + 4 * ldy + q0);
    a41.intoArray(y, yo + 4 * ldy + q1);
    a42.intoArray(y, yo + 4 * ldy + q2);
    a43.intoArray(y, yo + 4 * ldy + q3);
    a50.intoArray(y, yo + 5 * ldy + q0);
    a51.intoArray(y, yo + 5 * ldy + q1);
    a52.intoArray(y, yo + 5 * ldy + q2);
    a53.intoArray(y, yo + 5 * ldy + q3);
  }

  private static void convTile6x2(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, float[] y,
      int yo, int ldy, int p0, int p1, int q0, int q1, boolean relu) {
    FloatVector a00 = FloatVector.broadcast(S, init == null ? 0f : init[io + 0]), a01 = a00;
    FloatVector a10 = FloatVector.broadcast(S, init == null ? 0f : init[io + 1]), a11 = a10;
    FloatVector a20 = FloatVector.broadcast(S, init == null ? 0f : init[io + 2]), a21 = a20;
    FloatVector a30 = FloatVector.broadcast(S, init == null ? 0f : init[io + 3]), a31 = a30;
    FloatVector a40 = FloatVector.broadcast(S, init == null ? 0f : init[io + 4]), a41 = a40;
    FloatVector a50 = FloatVector.broadcast(S, init == null ? 0f : init[io + 5]), a51 = a50;
    int step = tapStep;
    for (int k = 0, w = wo; k < kdim; k += step, w += step * CONV_TILE6) {
      int at = offs[k];
      FloatVector x0 = FloatVector.fromArray(S, xp, at + p0);
      FloatVector x1 = FloatVector.fromArray(S, xp, at + p1);
      FloatVector b0 = FloatVector.broadcast(S, wp[w + 0]);
      a00 = x0.fma(b0, a00);
      a01 = x1.fma(b0, a01);
      FloatVector b1 = FloatVector.broadcast(S, wp[w + 1]);
      a10 = x0.fma(b1, a10);
      a11 = x1.fma(b1, a11);
      FloatVector b2 = FloatVector.broadcast(S, wp[w + 2]);
      a20 = x0.fma(b2, a20);
      a21 = x1.fma(b2, a21);
      FloatVector b3 = FloatVector.broadcast(S, wp[w + 3]);
      a30 = x0.fma(b3, a30);
      a31 = x1.fma(b3, a31);
      FloatVector b4 = FloatVector.broadcast(S, wp[w + 4]);
      a40 = x0.fma(b4, a40);
      a41 = x1.fma(b4, a41);
      FloatVector b5 = FloatVector.broadcast(S, wp[w + 5]);
      a50 = x0.fma(b5, a50);
      a51 = x1.fma(b5, a51);
    }
    if (relu) { // the fused ReLU, as convTile3
      FloatVector z = FloatVector.zero(S);
      a00 = a00.blend(z, a00.compare(LE, 0f));
      a01 = a01.blend(z, a01.compare(LE, 0f));
      a10 = a10.blend(z, a10.compare(LE, 0f));
      a11 = a11.blend(z, a11.compare(LE, 0f));
      a20 = a20.blend(z, a20.compare(LE, 0f));
      a21 = a21.blend(z, a21.compare(LE, 0f));
      a30 = a30.blend(z, a30.compare(LE, 0f));
      a31 = a31.blend(z, a31.compare(LE, 0f));
      a40 = a40.blend(z, a40.compare(LE, 0f));
      a41 = a41.blend(z, a41.compare(LE, 0f));
      a50 = a50.blend(z, a50.compare(LE, 0f));
      a51 = a51.blend(z, a51.compare(LE, 0f));
    }
    a00.intoArray(y, yo + 0 * ldy + q0);
    a01.intoArray(y, yo + 0 * ldy + q1);
    a10.intoArray(y, yo + 1 * ldy + q0);
    a11.intoArray(y, yo + 1 * ldy + q1);
    a20.intoArray(y, yo + 2 * ldy + q0);
    a21.intoArray(y, yo + 2 * ldy + q1);
    a30.intoArray(y, yo + 3 * ldy + q0);
    a31.intoArray(y, yo + 3 * ldy + q1);
    a40.intoArray(y, yo + 4 * ldy + q0);
    a41.intoArray(y, yo + 4 * ldy + q1);
    a50.intoArray(y, yo + 5 * ldy + q0);
    a51.intoArray(y, yo + 5 * ldy + q1);
  }

  private static void convTile6x1(float[] xp, int[] offs, int kdim, float[] wp, int wo, float[] init, int io, float[] y,
      int yo, int ldy, int p0, int q0, boolean relu) {
    FloatVector a00 = FloatVector.broadcast(S, init == null ? 0f : init[io + 0]);
    FloatVector a10 = FloatVector.broadcast(S, init == null ? 0f : init[io + 1]);
    FloatVector a20 = FloatVector.broadcast(S, init == null ? 0f : init[io + 2]);
    FloatVector a30 = FloatVector.broadcast(S, init == null ? 0f : init[io + 3]);
    FloatVector a40 = FloatVector.broadcast(S, init == null ? 0f : init[io + 4]);
    FloatVector a50 = FloatVector.broadcast(S, init == null ? 0f : init[io + 5]);
    int step = tapStep;
    for (int k = 0, w = wo; k < kdim; k += step, w += step * CONV_TILE6) {
      int at = offs[k];
      FloatVector x0 = FloatVector.fromArray(S, xp, at + p0);
      FloatVector b0 = FloatVector.broadcast(S, wp[w + 0]);
      a00 = x0.fma(b0, a00);
      FloatVector b1 = FloatVector.broadcast(S, wp[w + 1]);
      a10 = x0.fma(b1, a10);
      FloatVector b2 = FloatVector.broadcast(S, wp[w + 2]);
      a20 = x0.fma(b2, a20);
      FloatVector b3 = FloatVector.broadcast(S, wp[w + 3]);
      a30 = x0.fma(b3, a30);
      FloatVector b4 = FloatVector.broadcast(S, wp[w + 4]);
      a40 = x0.fma(b4, a40);
      FloatVector b5 = FloatVector.broadcast(S, wp[w + 5]);
      a50 = x0.fma(b5, a50);
    }
    if (relu) { // the fused ReLU, as convTile3
      FloatVector z = FloatVector.zero(S);
      a00 = a00.blend(z, a00.compare(LE, 0f));
      a10 = a10.blend(z, a10.compare(LE, 0f));
      a20 = a20.blend(z, a20.compare(LE, 0f));
      a30 = a30.blend(z, a30.compare(LE, 0f));
      a40 = a40.blend(z, a40.compare(LE, 0f));
      a50 = a50.blend(z, a50.compare(LE, 0f));
    }
    a00.intoArray(y, yo + 0 * ldy + q0);
    a10.intoArray(y, yo + 1 * ldy + q0);
    a20.intoArray(y, yo + 2 * ldy + q0);
    a30.intoArray(y, yo + 3 * ldy + q0);
    a40.intoArray(y, yo + 4 * ldy + q0);
    a50.intoArray(y, yo + 5 * ldy + q0);
  }

  /**
   * Two output rows at a time, each as two vectors (ox &lt; L and L &lt;= ox &lt; 2L; the second only when
   * ow > L): four independent fma chains per tap, the weight broadcast once for both rows. Lanes at
   * ox >= ow compute on padding and are not stored.
   */
  @Override
  public void convPlane(float[] xp, int xo, int pw, int ps, int cin, int kh, int kw, float[] w, int wo, float bias,
      float[] y, int yo, int oh, int ow) {
    if (ow <= 2 * L) {
      convBlock(xp, xo, pw, ps, cin, kh, kw, w, wo, bias, y, yo, ow, oh, ow, false);
      return;
    }
    // Wider rows (a depthwise layer's 56 columns) in blocks of 2L columns, every row of a block before
    // the next block: a block's stores stop at its last column, the next block's columns being written later.
    for (int c0 = 0; c0 < ow; c0 += 2 * L) {
      convBlock(xp, xo + c0, pw, ps, cin, kh, kw, w, wo, bias, y, yo + c0, ow, oh, Math.min(2 * L, ow - c0), true);
    }
  }

  /** Columns [0, bw) (bw &lt;= 2L) of convPlane's rows, y's rows ldy apart; {@code exact}: store no lane past bw. */
  private static void convBlock(float[] xp, int xo, int pw, int ps, int cin, int kh, int kw, float[] w, int wo,
      float bias, float[] y, int yo, int ldy, int oh, int bw, boolean exact) {
    VectorMask<Float> m0 = S.indexInRange(0, bw);
    VectorMask<Float> m1 = S.indexInRange(L, bw);
    boolean two = bw > L;
    int oy = 0;
    for (; oy < oh; oy += 2) {
      boolean pair = oy + 1 < oh;
      FloatVector a0 = FloatVector.broadcast(S, bias);
      FloatVector a1 = a0;
      FloatVector b0 = a0;
      FloatVector b1 = a0;
      for (int ci = 0; ci < cin; ci++) {
        for (int i = 0; i < kh; i++) {
          int r = xo + ci * ps + (oy + i) * pw;
          int t = wo + (ci * kh + i) * kw;
          for (int j = 0; j < kw; j++) {
            FloatVector wb = FloatVector.broadcast(S, w[t + j]);
            a0 = FloatVector.fromArray(S, xp, r + j).fma(wb, a0);
            if (two) a1 = FloatVector.fromArray(S, xp, r + j + L).fma(wb, a1);
            if (pair) {
              b0 = FloatVector.fromArray(S, xp, r + pw + j).fma(wb, b0);
              if (two) b1 = FloatVector.fromArray(S, xp, r + pw + j + L).fma(wb, b1);
            }
          }
        }
      }
      // The stores are written out here rather than in a helper: vectors handed to a call that C2 does not inline
      // are boxed, and whether it inlines a helper depends on what ran before (issue #40; KernelsTest checks).
      // A vector whose window stays inside the plane is written whole: the lanes past bw land on rows written after
      // this one (a masked store checks its bounds at run time); one reaching past the plane (or past bw when
      // exact) is masked, as the next plane may belong to another task.
      int at = yo + oy * ldy;
      int end = exact ? at + bw : yo + oh * ldy;
      if (bw >= L || at + L <= end) a0.intoArray(y, at);
      else a0.intoArray(y, at, m0);
      if (two) {
        if (at + 2 * L <= end) a1.intoArray(y, at + L);
        else a1.intoArray(y, at + L, m1);
      }
      if (pair) {
        int at1 = at + ldy;
        int end1 = exact ? at1 + bw : yo + oh * ldy;
        if (bw >= L || at1 + L <= end1) b0.intoArray(y, at1);
        else b0.intoArray(y, at1, m0);
        if (two) {
          if (at1 + 2 * L <= end1) b1.intoArray(y, at1 + L);
          else b1.intoArray(y, at1 + L, m1);
        }
      }
    }
  }

  /**
   * 24 chains (6 channels x 4 taps) over whole vectors of positions: per step 6 loads of g and 4 of
   * x feed 24 fused multiply-adds, where one channel and two taps at a time (the loop this replaced)
   * loaded 6 vectors for 4. Loads are unmasked: the layout puts zeros wherever a position is not an
   * output, so no lane needs excluding.
   */
  @Override
  public void convWeightTaps(float[] g, int[] gOff, int go, float[] x, int[] xOff, int xo, int n, float[] acc, int ao,
      int ldk) {
    int g0 = gOff[go], g1 = gOff[go + 1], g2 = gOff[go + 2], g3 = gOff[go + 3], g4 = gOff[go + 4], g5 = gOff[go + 5];
    int x0 = xOff[xo], x1 = xOff[xo + 1], x2 = xOff[xo + 2], x3 = xOff[xo + 3];
    int r = ldk * L;
    int a0 = ao, a1 = ao + r, a2 = ao + 2 * r, a3 = ao + 3 * r, a4 = ao + 4 * r, a5 = ao + 5 * r;
    FloatVector s00 = FloatVector.fromArray(S, acc, a0), s01 = FloatVector.fromArray(S, acc, a0 + L);
    FloatVector s02 = FloatVector.fromArray(S, acc, a0 + 2 * L), s03 = FloatVector.fromArray(S, acc, a0 + 3 * L);
    FloatVector s10 = FloatVector.fromArray(S, acc, a1), s11 = FloatVector.fromArray(S, acc, a1 + L);
    FloatVector s12 = FloatVector.fromArray(S, acc, a1 + 2 * L), s13 = FloatVector.fromArray(S, acc, a1 + 3 * L);
    FloatVector s20 = FloatVector.fromArray(S, acc, a2), s21 = FloatVector.fromArray(S, acc, a2 + L);
    FloatVector s22 = FloatVector.fromArray(S, acc, a2 + 2 * L), s23 = FloatVector.fromArray(S, acc, a2 + 3 * L);
    FloatVector s30 = FloatVector.fromArray(S, acc, a3), s31 = FloatVector.fromArray(S, acc, a3 + L);
    FloatVector s32 = FloatVector.fromArray(S, acc, a3 + 2 * L), s33 = FloatVector.fromArray(S, acc, a3 + 3 * L);
    FloatVector s40 = FloatVector.fromArray(S, acc, a4), s41 = FloatVector.fromArray(S, acc, a4 + L);
    FloatVector s42 = FloatVector.fromArray(S, acc, a4 + 2 * L), s43 = FloatVector.fromArray(S, acc, a4 + 3 * L);
    FloatVector s50 = FloatVector.fromArray(S, acc, a5), s51 = FloatVector.fromArray(S, acc, a5 + L);
    FloatVector s52 = FloatVector.fromArray(S, acc, a5 + 2 * L), s53 = FloatVector.fromArray(S, acc, a5 + 3 * L);
    for (int p = 0; p < n; p += L) {
      FloatVector v0 = FloatVector.fromArray(S, x, x0 + p);
      FloatVector v1 = FloatVector.fromArray(S, x, x1 + p);
      FloatVector v2 = FloatVector.fromArray(S, x, x2 + p);
      FloatVector v3 = FloatVector.fromArray(S, x, x3 + p);
      FloatVector w = FloatVector.fromArray(S, g, g0 + p);
      s00 = w.fma(v0, s00);
      s01 = w.fma(v1, s01);
      s02 = w.fma(v2, s02);
      s03 = w.fma(v3, s03);
      w = FloatVector.fromArray(S, g, g1 + p);
      s10 = w.fma(v0, s10);
      s11 = w.fma(v1, s11);
      s12 = w.fma(v2, s12);
      s13 = w.fma(v3, s13);
      w = FloatVector.fromArray(S, g, g2 + p);
      s20 = w.fma(v0, s20);
      s21 = w.fma(v1, s21);
      s22 = w.fma(v2, s22);
      s23 = w.fma(v3, s23);
      w = FloatVector.fromArray(S, g, g3 + p);
      s30 = w.fma(v0, s30);
      s31 = w.fma(v1, s31);
      s32 = w.fma(v2, s32);
      s33 = w.fma(v3, s33);
      w = FloatVector.fromArray(S, g, g4 + p);
      s40 = w.fma(v0, s40);
      s41 = w.fma(v1, s41);
      s42 = w.fma(v2, s42);
      s43 = w.fma(v3, s43);
      w = FloatVector.fromArray(S, g, g5 + p);
      s50 = w.fma(v0, s50);
      s51 = w.fma(v1, s51);
      s52 = w.fma(v2, s52);
      s53 = w.fma(v3, s53);
    }
    s00.intoArray(acc, a0);
    s01.intoArray(acc, a0 + L);
    s02.intoArray(acc, a0 + 2 * L);
    s03.intoArray(acc, a0 + 3 * L);
    s10.intoArray(acc, a1);
    s11.intoArray(acc, a1 + L);
    s12.intoArray(acc, a1 + 2 * L);
    s13.intoArray(acc, a1 + 3 * L);
    s20.intoArray(acc, a2);
    s21.intoArray(acc, a2 + L);
    s22.intoArray(acc, a2 + 2 * L);
    s23.intoArray(acc, a2 + 3 * L);
    s30.intoArray(acc, a3);
    s31.intoArray(acc, a3 + L);
    s32.intoArray(acc, a3 + 2 * L);
    s33.intoArray(acc, a3 + 3 * L);
    s40.intoArray(acc, a4);
    s41.intoArray(acc, a4 + L);
    s42.intoArray(acc, a4 + 2 * L);
    s43.intoArray(acc, a4 + 3 * L);
    s50.intoArray(acc, a5);
    s51.intoArray(acc, a5 + L);
    s52.intoArray(acc, a5 + 2 * L);
    s53.intoArray(acc, a5 + 3 * L);
  }

}
