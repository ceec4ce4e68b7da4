package dev.ember.nn.functional;

import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.NE;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/** {@link RowKernels} on the Vector API (loaded by name, so nothing else refers to the incubator module). */
final class VectorRowKernels implements RowKernels {
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
    int half = L / 2;
    VectorShuffle<Float> swap = SWAP;
    VectorMask<Float> even = EVEN;
    VectorMask<Integer> evenI = EVEN_I;
    IntVector lanes = IntVector.zero(IS).addIndex(1);
    int o = 0;
    for (; o < n && xo + 2 * o + iw + L <= x.length && yo + o + L <= y.length
        && (arg == null || yo + o + L <= arg.length); o += half) {
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
      if (arg != null) {
        IntVector mi = lanes.add(c - base);
        mi = mi.blend(mi.add(1), t1.cast(IS));
        mi = mi.blend(lanes.add(c - base + iw), t2.cast(IS));
        mi = mi.blend(lanes.add(c - base + iw + 1), t3.cast(IS));
        mi.compress(evenI).intoArray(arg, yo + o, store.cast(IS));
      }
    }
    if (o < n) RowKernels.maxPool2x2Scalar(x, xo + 2 * o, iw, base, y, arg, yo + o, n - o);
  }
}
