package dev.ember.testing;

import java.util.Arrays;
import java.util.List;
import java.util.function.DoubleBinaryOperator;
import java.util.function.DoubleUnaryOperator;

/** Naive double-precision reference implementations (oracles) used by the op table. */
public final class Ref {
  private Ref() {}

  public static Arr map(Arr a, DoubleUnaryOperator f) {
    double[] o = new double[a.numel()];
    for (int i = 0; i < o.length; i++) o[i] = f.applyAsDouble(a.data()[i]);
    return new Arr(o, a.shape());
  }

  public static int[] broadcastShape(int[] a, int[] b) {
    int r = Math.max(a.length, b.length);
    int[] s = new int[r];
    for (int i = 1; i <= r; i++) {
      int da = i <= a.length ? a[a.length - i] : 1;
      int db = i <= b.length ? b[b.length - i] : 1;
      s[r - i] = da == 1 ? db : da;
    }
    return s;
  }

  public static Arr zip(Arr a, Arr b, DoubleBinaryOperator f) {
    int[] shape = broadcastShape(a.shape(), b.shape());
    Arr out = Arr.zeros(shape);
    for (int i = 0; i < out.numel(); i++) {
      int[] idx = out.index(i);
      out.data()[i] = f.applyAsDouble(a.getBroadcast(idx), b.getBroadcast(idx));
    }
    return out;
  }

  public static Arr where(Arr c, Arr a, Arr b) {
    int[] shape = broadcastShape(broadcastShape(c.shape(), a.shape()), b.shape());
    Arr out = Arr.zeros(shape);
    for (int i = 0; i < out.numel(); i++) {
      int[] idx = out.index(i);
      out.data()[i] = c.getBroadcast(idx) != 0 ? a.getBroadcast(idx) : b.getBroadcast(idx);
    }
    return out;
  }

  /** Reduces over axes (null = all) with f from init; keepDim keeps size-1 axes. */
  public static Arr reduce(Arr a, int[] axes, boolean keepDim, double init, DoubleBinaryOperator f) {
    boolean[] red = new boolean[a.rank()];
    if (axes == null) Arrays.fill(red, true);
    else for (int ax : axes) red[ax < 0 ? ax + a.rank() : ax] = true;
    int[] keep = a.shape().clone();
    for (int d = 0; d < red.length; d++) if (red[d]) keep[d] = 1;
    Arr out = Arr.zeros(keep);
    Arrays.fill(out.data(), init);
    for (int i = 0; i < a.numel(); i++) {
      int[] idx = a.index(i);
      for (int d = 0; d < red.length; d++) if (red[d]) idx[d] = 0;
      int o = out.flat(idx);
      out.data()[o] = f.applyAsDouble(out.data()[o], a.data()[i]);
    }
    if (keepDim) return out;
    int[] s = new int[0];
    for (int d = 0; d < red.length; d++) if (!red[d]) s = append(s, a.shape()[d]);
    return new Arr(out.data(), s);
  }

  public static Arr sum(Arr a, int[] axes, boolean keep) {
    return reduce(a, axes, keep, 0, Double::sum);
  }

  public static int count(Arr a, int[] axes) {
    if (axes == null) return a.numel();
    int c = 1;
    for (int ax : axes) c *= a.shape()[ax < 0 ? ax + a.rank() : ax];
    return c;
  }

  public static Arr mean(Arr a, int[] axes, boolean keep) {
    int c = count(a, axes);
    return map(sum(a, axes, keep), v -> v / c);
  }

  public static Arr var(Arr a, int[] axes, boolean unbiased, boolean keep) {
    Arr m = mean(a, axes, true);
    Arr sq = zip(a, m, (x, mu) -> (x - mu) * (x - mu));
    int c = count(a, axes) - (unbiased ? 1 : 0);
    return map(sum(sq, axes, keep), v -> v / c);
  }

  public static Arr max(Arr a, int[] axes, boolean keep) {
    return reduce(a, axes, keep, Double.NEGATIVE_INFINITY, Math::max);
  }

  public static Arr min(Arr a, int[] axes, boolean keep) {
    return reduce(a, axes, keep, Double.POSITIVE_INFINITY, Math::min);
  }

  /** Index of the first max/min along axis (keepDim=false). */
  public static Arr arg(Arr a, int axis, boolean max) {
    int[] outShape = remove(a.shape(), axis);
    Arr out = Arr.zeros(outShape);
    for (int o = 0; o < out.numel(); o++) {
      int[] oi = out.index(o);
      int best = 0;
      double bv = Double.NaN;
      for (int j = 0; j < a.shape()[axis]; j++) {
        double v = a.get(insert(oi, axis, j));
        if (j == 0 || (max ? v > bv : v < bv)) {
          best = j;
          bv = v;
        }
      }
      out.data()[o] = best;
    }
    return out;
  }

  public static Arr softmax(Arr a, int axis, boolean log) {
    Arr m = max(a, new int[] {axis}, true);
    Arr e = zip(a, m, (x, mx) -> Math.exp(x - mx));
    Arr s = sum(e, new int[] {axis}, true);
    if (!log) return zip(e, s, (x, t) -> x / t);
    Arr lse = zip(map(s, Math::log), m, Double::sum);
    return zip(a, lse, (x, l) -> x - l);
  }

  public static Arr cumsum(Arr a, int axis) {
    Arr out = Arr.zeros(a.shape());
    for (int i = 0; i < a.numel(); i++) {
      int[] idx = a.index(i);
      double s = 0;
      for (int j = 0; j <= idx[axis]; j++) {
        int[] k = idx.clone();
        k[axis] = j;
        s += a.get(k);
      }
      out.data()[i] = s;
    }
    return out;
  }

  /** NumPy matmul (1-d promotion, broadcast batch dims). */
  public static Arr matmul(Arr a, Arr b) {
    boolean av = a.rank() == 1;
    boolean bv = b.rank() == 1;
    Arr a2 = av ? new Arr(a.data(), new int[] {1, a.shape()[0]}) : a;
    Arr b2 = bv ? new Arr(b.data(), new int[] {b.shape()[0], 1}) : b;
    int m = a2.shape()[a2.rank() - 2];
    int k = a2.shape()[a2.rank() - 1];
    int n = b2.shape()[b2.rank() - 1];
    int[] batch = broadcastShape(Arrays.copyOf(a2.shape(), a2.rank() - 2), Arrays.copyOf(b2.shape(), b2.rank() - 2));
    int[] outShape = append(append(batch, m), n);
    Arr out = Arr.zeros(outShape);
    for (int o = 0; o < out.numel(); o++) {
      int[] idx = out.index(o);
      int i = idx[idx.length - 2];
      int j = idx[idx.length - 1];
      double s = 0;
      for (int p = 0; p < k; p++) {
        int[] ai = idx.clone();
        ai[ai.length - 1] = p;
        int[] bi = idx.clone();
        bi[bi.length - 2] = p;
        bi[bi.length - 1] = j;
        ai[ai.length - 2] = i;
        s += a2.getBroadcast(ai) * b2.getBroadcast(bi);
      }
      out.data()[o] = s;
    }
    int[] s = outShape;
    if (av) s = remove(s, s.length - 2);
    if (bv) s = remove(s, s.length - 1);
    return new Arr(out.data(), s);
  }

  public static Arr permute(Arr a, int... perm) {
    int[] shape = new int[perm.length];
    for (int i = 0; i < perm.length; i++) shape[i] = a.shape()[perm[i]];
    Arr out = Arr.zeros(shape);
    for (int o = 0; o < out.numel(); o++) {
      int[] oi = out.index(o);
      int[] ai = new int[perm.length];
      for (int i = 0; i < perm.length; i++) ai[perm[i]] = oi[i];
      out.data()[o] = a.get(ai);
    }
    return out;
  }

  public static Arr reshape(Arr a, int... shape) {
    return new Arr(a.data().clone(), shape);
  }

  /** Broadcast a to shape (materialised). */
  public static Arr expand(Arr a, int... shape) {
    Arr out = Arr.zeros(shape);
    for (int o = 0; o < out.numel(); o++) out.data()[o] = a.getBroadcast(out.index(o));
    return out;
  }

  public static Arr slice(Arr a, int axis, int start, int end, int step) {
    int n = a.shape()[axis];
    int s = Math.max(0, Math.min(n, start < 0 ? start + n : start));
    int e = Math.max(0, Math.min(n, end < 0 ? end + n : end));
    int len = e > s ? (e - s + step - 1) / step : 0;
    int[] shape = a.shape().clone();
    shape[axis] = len;
    Arr out = Arr.zeros(shape);
    for (int o = 0; o < out.numel(); o++) {
      int[] idx = out.index(o);
      idx[axis] = s + idx[axis] * step;
      out.data()[o] = a.get(idx);
    }
    return out;
  }

  public static Arr select(Arr a, int axis, int index) {
    Arr s = slice(a, axis, index, index + 1, 1);
    return new Arr(s.data(), remove(a.shape(), axis));
  }

  public static Arr cat(List<Arr> parts, int axis) {
    int[] shape = parts.get(0).shape().clone();
    shape[axis] = 0;
    for (Arr p : parts) shape[axis] += p.shape()[axis];
    Arr out = Arr.zeros(shape);
    int at = 0;
    for (Arr p : parts) {
      for (int i = 0; i < p.numel(); i++) {
        int[] idx = p.index(i);
        idx[axis] += at;
        out.data()[out.flat(idx)] = p.data()[i];
      }
      at += p.shape()[axis];
    }
    return out;
  }

  public static Arr gather(Arr a, int axis, Arr index) {
    Arr out = Arr.zeros(index.shape());
    for (int o = 0; o < out.numel(); o++) {
      int[] idx = out.index(o);
      idx[axis] = (int) index.data()[o];
      out.data()[o] = a.get(idx);
    }
    return out;
  }

  public static Arr scatter(Arr a, int axis, Arr index, Arr src, boolean add) {
    Arr out = new Arr(a.data().clone(), a.shape());
    for (int i = 0; i < index.numel(); i++) {
      int[] idx = index.index(i);
      double v = src.get(idx);
      idx[axis] = (int) index.data()[i];
      int f = out.flat(idx);
      out.data()[f] = add ? out.data()[f] + v : v;
    }
    return out;
  }

  /** erf by its Maclaurin series (|x| <= 3 in the tests: error ~1e-12 after cancellation). */
  public static double erf(double x) {
    double sum = 0;
    double term = x;
    for (int n = 0; n < 200; n++) {
      sum += term / (2 * n + 1);
      term *= -x * x / (n + 1);
      if (Math.abs(term) < 1e-17) break;
    }
    return 2 / Math.sqrt(Math.PI) * sum;
  }

  public static int[] append(int[] s, int v) {
    int[] o = Arrays.copyOf(s, s.length + 1);
    o[s.length] = v;
    return o;
  }

  public static int[] remove(int[] s, int axis) {
    int[] o = new int[s.length - 1];
    for (int d = 0, j = 0; d < s.length; d++) if (d != axis) o[j++] = s[d];
    return o;
  }

  public static int[] insert(int[] s, int axis, int v) {
    int[] o = new int[s.length + 1];
    for (int d = 0, j = 0; d < o.length; d++) o[d] = d == axis ? v : s[j++];
    return o;
  }
}
