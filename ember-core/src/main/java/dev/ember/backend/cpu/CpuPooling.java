package dev.ember.backend.cpu;

import dev.ember.backend.PoolAxis;
import dev.ember.backend.PoolingKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;

/**
 * The CPU pooling kernels, one pass each: every pooling variant is described by two
 * {@link PoolAxis} tables (per output row/column: the first in-bounds tap, the exclusive end, the step
 * and, for averages, the divisor factor), so max, average and adaptive pooling share one max and one
 * average kernel. Inputs are contiguous [planes, inH, inW] in F32 or F64; work is split over planes
 * in tasks of a size fixed by the plane size (never by the thread count), and every plane is
 * computed by one task in a fixed order, so results are bitwise the same on any number of threads.
 */
public final class CpuPooling implements PoolingKernels {
  /** The one instance: the kernels keep no state. */
  public static final CpuPooling INSTANCE = new CpuPooling();

  private CpuPooling() {}

  private static final RowKernels ROWS = RowKernels.F32;

  /** Elements of input per task: tasks stay large enough to amortise the hand-off to a worker. */
  private static final int TASK_ELEMENTS = 1 << 15;

  /** Calls {@code body(p0, p1)} over the planes in thread-count independent tasks. */
  private static void forPlanes(int planes, int planeSize, PlaneRange body) {
    int per = planesPerTask(planeSize);
    int tasks = Parallel.chunks(planes, per);
    Parallel.forEach(tasks, t -> body.run(t * per, Math.min(planes, (t + 1) * per)));
  }

  private static int planesPerTask(int planeSize) {
    return Math.max(1, TASK_ELEMENTS / Math.max(1, planeSize));
  }

  @FunctionalInterface
  private interface PlaneRange {
    void run(int p0, int p1);
  }

  // ================================================================== max

  @Override
  public void maxForward(View x, int planes, PoolAxis h, PoolAxis w, View out, View argmax) {
    int[] arg = argmax == null ? null : argmax.storage().ints();
    int inPlane = h.in() * w.in();
    int outPlane = h.out() * w.out();
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] ys = out.storage().floats();
      if (tiles2(h) && tiles2(w) && arg == null) {
        // not through forPlanes: its call of the body, which training's lambdas made bimorphic, would be
        // deoptimized by a third lambda class (see maxPlanes2x2Values)
        int per = planesPerTask(inPlane);
        Parallel.forEach(Parallel.chunks(planes, per),
            t -> maxPlanes2x2Values(xs, xo, ys, t * per, Math.min(planes, (t + 1) * per), h.in(), w.in()));
      } else if (tiles2(h) && tiles2(w)) {
        forPlanes(planes, inPlane, (p0, p1) -> maxPlanes2x2F(xs, xo, ys, arg, p0, p1, h.in(), w.in()));
      } else if (h.step() == 1 && w.step() == 1) {
        forPlanes(planes, inPlane, (p0, p1) -> maxPlanesF1(xs, xo, ys, arg, p0, p1, h, w));
      } else {
        forPlanes(planes, inPlane, (p0, p1) -> {
          for (int p = p0; p < p1; p++) maxPlaneF(xs, xo + p * inPlane, ys, p * outPlane, arg, h, w);
        });
      }
    } else {
      double[] xs = x.storage().doubles();
      double[] ys = out.storage().doubles();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) maxPlaneD(xs, xo + p * inPlane, ys, p * outPlane, arg, h, w);
      });
    }
  }

  /**
   * Whether the windows of an axis are 2 wide with stride 2, undilated, and tile it exactly
   * (in = 2 * out, no padding): the 2x2 max pooling of most convnets.
   */
  private static boolean tiles2(PoolAxis a) {
    if (a.step() != 1 || a.in() != 2 * a.out() || a.div() != null) return false;
    for (int o = 0; o < a.out(); o++) {
      if (a.start()[o] != 2 * o || a.end()[o] != 2 * o + 2) return false;
    }
    return true;
  }

  /**
   * {@link #maxPlanesF1} for 2x2 windows with stride 2 tiling planes of [inH, inW] (both even), a
   * row at a time on {@link RowKernels#maxPool2x2Row} (same scan order, tie and NaN rules).
   */
  private static void maxPlanes2x2F(float[] xs, int xo, float[] ys, int[] arg, int p0, int p1, int inH, int iw) {
    int ow = iw / 2;
    int oh = inH / 2;
    int inPlane = inH * iw;
    int outPlane = oh * ow;
    for (int p = p0; p < p1; p++) {
      int xb = xo + p * inPlane;
      int yb = p * outPlane;
      for (int r = 0; r < oh; r++) ROWS.maxPool2x2Row(xs, xb + 2 * r * iw, iw, xb, ys, arg, yb + r * ow, ow);
    }
  }

  /**
   * {@link #maxPlanes2x2F} without argmax (validation, inference): a method, a lambda and a row kernel of its own.
   * When training (argmax) and validation shared them, the C2 code compiled on training's profile had the row
   * kernel's argmax branch inlined and its plane loop's predicates built on it: the first validation deoptimized
   * it, and the kernel's calls ran in the interpreter until a second C2 compile (issue #40,
   * bench/jit-breakdown.sh). Here validation's calls reach code compiled on their own profile only.
   */
  private static void maxPlanes2x2Values(float[] xs, int xo, float[] ys, int p0, int p1, int inH, int iw) {
    int ow = iw / 2;
    int oh = inH / 2;
    int inPlane = inH * iw;
    int outPlane = oh * ow;
    for (int p = p0; p < p1; p++) {
      int xb = xo + p * inPlane;
      int yb = p * outPlane;
      for (int r = 0; r < oh; r++) ROWS.maxPool2x2RowValues(xs, xb + 2 * r * iw, iw, ys, yb + r * ow, ow);
    }
  }

  /**
   * {@link #maxPlaneF} for undilated windows (the common case) over planes p0..p1, with flat
   * indices hoisted out of the tap loop.
   */
  private static void maxPlanesF1(float[] xs, int xo, float[] ys, int[] arg, int p0, int p1, PoolAxis h, PoolAxis w) {
    int iw = w.in();
    int ow = w.out();
    int inPlane = h.in() * iw;
    int outPlane = h.out() * ow;
    int[] hs = h.start();
    int[] he = h.end();
    int[] ws = w.start();
    int[] we = w.end();
    for (int p = p0; p < p1; p++) {
      int xb = xo + p * inPlane;
      int yb = p * outPlane;
      for (int oh = 0; oh < h.out(); oh++) {
        int r0 = xb + hs[oh] * iw;
        int r1 = xb + he[oh] * iw;
        int yr = yb + oh * ow;
        for (int o = 0; o < ow; o++) {
          int w0 = ws[o];
          int w1 = we[o];
          float mv = Float.NEGATIVE_INFINITY;
          int mc = r0 + w0;
          for (int r = r0; r < r1; r += iw) {
            for (int c = r + w0, e = r + w1; c < e; c++) {
              float v = xs[c];
              boolean take = v > mv | v != v; // no short-circuit, so the JIT can use conditional moves
              mc = take ? c : mc;
              mv = take ? v : mv;
            }
          }
          ys[yr + o] = mv;
          if (arg != null) arg[yr + o] = mc - xb;
        }
      }
    }
  }

  private static void maxPlaneF(float[] x, int xb, float[] y, int yb, int[] arg, PoolAxis h, PoolAxis w) {
    int iw = w.in();
    int ow = w.out();
    int dh = h.step();
    int dw = w.step();
    int[] ws = w.start();
    int[] we = w.end();
    for (int oh = 0; oh < h.out(); oh++) {
      int h0 = h.start()[oh];
      int h1 = h.end()[oh];
      int yr = yb + oh * ow;
      for (int o = 0; o < ow; o++) {
        int w0 = ws[o];
        int w1 = we[o];
        float mv = Float.NEGATIVE_INFINITY;
        int mi = h0 * iw + w0;
        for (int ih = h0; ih < h1; ih += dh) {
          int r = ih * iw;
          for (int c = w0; c < w1; c += dw) {
            float v = x[xb + r + c];
            if (v > mv || v != v) {
              mv = v;
              mi = r + c;
            }
          }
        }
        y[yr + o] = mv;
        if (arg != null) arg[yr + o] = mi;
      }
    }
  }

  private static void maxPlaneD(double[] x, int xb, double[] y, int yb, int[] arg, PoolAxis h, PoolAxis w) {
    int iw = w.in();
    int ow = w.out();
    int dh = h.step();
    int dw = w.step();
    int[] ws = w.start();
    int[] we = w.end();
    for (int oh = 0; oh < h.out(); oh++) {
      int h0 = h.start()[oh];
      int h1 = h.end()[oh];
      int yr = yb + oh * ow;
      for (int o = 0; o < ow; o++) {
        int w0 = ws[o];
        int w1 = we[o];
        double mv = Double.NEGATIVE_INFINITY;
        int mi = h0 * iw + w0;
        for (int ih = h0; ih < h1; ih += dh) {
          int r = ih * iw;
          for (int c = w0; c < w1; c += dw) {
            double v = x[xb + r + c];
            if (v > mv || v != v) {
              mv = v;
              mi = r + c;
            }
          }
        }
        y[yr + o] = mv;
        if (arg != null) arg[yr + o] = mi;
      }
    }
  }

  /** The 2x2, stride-2 windows that tile the input: the backward zeroes and fills every input plane itself. */
  @Override
  public boolean maxBackwardWritesAll(PoolAxis h, PoolAxis w) {
    return tiles2(h) && tiles2(w);
  }

  /**
   * For windows that tile the input 2x2 ({@link #maxBackwardWritesAll}), each plane of gi zeroed by the task that
   * then adds its upstream values at their argmax (every input element is in a window, so every element is
   * written; the bits of the scatter into a zero-filled gi), in F32 and F64 alike: the caller passes an unfilled gi
   * whenever {@link #maxBackwardWritesAll} says so. It replaces the zero-fill of the whole pooled gi before the
   * kernel (a separate pass, and a forEach of its own above Storage's parallel-zero size).
   */
  @Override
  public void maxBackward(View g, View argmax, int planes, PoolAxis h, PoolAxis w, View gi) {
    if (!maxBackwardWritesAll(h, w)) {
      maxBackward(g, argmax, planes, h.in() * w.in(), h.out() * w.out(), gi);
      return;
    }
    int[] arg = argmax.storage().ints();
    int go = g.offset();
    int io = gi.offset();
    int inPlane = h.in() * w.in();
    int outPlane = h.out() * w.out();
    if (g.dtype() == DType.F32) {
      float[] gs = g.storage().floats();
      float[] is = gi.storage().floats();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = io + p * inPlane;
          int ob = p * outPlane;
          java.util.Arrays.fill(is, ib, ib + inPlane, 0f);
          for (int o = 0; o < outPlane; o++) is[ib + arg[ob + o]] += gs[go + ob + o];
        }
      });
    } else {
      double[] gs = g.storage().doubles();
      double[] is = gi.storage().doubles();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = io + p * inPlane;
          int ob = p * outPlane;
          java.util.Arrays.fill(is, ib, ib + inPlane, 0.0);
          for (int o = 0; o < outPlane; o++) is[ib + arg[ob + o]] += gs[go + ob + o];
        }
      });
    }
  }

  @Override
  public void maxBackward(View g, View argmax, int planes, int inPlane, int outPlane, View gi) {
    int[] arg = argmax.storage().ints();
    int go = g.offset();
    if (g.dtype() == DType.F32) {
      float[] gs = g.storage().floats();
      float[] is = gi.storage().floats();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          int ob = p * outPlane;
          for (int o = 0; o < outPlane; o++) {
            int a = arg[ob + o];
            if (a >= 0 && a < inPlane) is[ib + a] += gs[go + ob + o];
          }
        }
      });
    } else {
      double[] gs = g.storage().doubles();
      double[] is = gi.storage().doubles();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          int ob = p * outPlane;
          for (int o = 0; o < outPlane; o++) {
            int a = arg[ob + o];
            if (a >= 0 && a < inPlane) is[ib + a] += gs[go + ob + o];
          }
        }
      });
    }
  }

  // ================================================================== average

  @Override
  public void avgForward(View x, int planes, PoolAxis h, PoolAxis w, View out) {
    int inPlane = h.in() * w.in();
    int outPlane = h.out() * w.out();
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] ys = out.storage().floats();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int xb = xo + p * inPlane;
          int yb = p * outPlane;
          for (int oh = 0; oh < h.out(); oh++) {
            int h0 = h.start()[oh];
            int h1 = h.end()[oh];
            for (int o = 0; o < w.out(); o++) {
              int w0 = w.start()[o];
              int w1 = w.end()[o];
              double s = 0;
              for (int ih = h0; ih < h1; ih++) {
                int r = xb + ih * w.in();
                for (int c = r + w0, e = r + w1; c < e; c++) s += xs[c];
              }
              ys[yb + oh * w.out() + o] = h0 >= h1 || w0 >= w1 ? 0f : (float) (s / (h.div()[oh] * w.div()[o]));
            }
          }
        }
      });
    } else {
      double[] xs = x.storage().doubles();
      double[] ys = out.storage().doubles();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int xb = xo + p * inPlane;
          int yb = p * outPlane;
          for (int oh = 0; oh < h.out(); oh++) {
            int h0 = h.start()[oh];
            int h1 = h.end()[oh];
            for (int o = 0; o < w.out(); o++) {
              int w0 = w.start()[o];
              int w1 = w.end()[o];
              double s = 0;
              for (int ih = h0; ih < h1; ih++) {
                int r = xb + ih * w.in();
                for (int c = r + w0, e = r + w1; c < e; c++) s += xs[c];
              }
              ys[yb + oh * w.out() + o] = h0 >= h1 || w0 >= w1 ? 0 : s / (h.div()[oh] * w.div()[o]);
            }
          }
        }
      });
    }
  }

  @Override
  public void avgBackward(View g, int planes, PoolAxis h, PoolAxis w, View gi) {
    int inPlane = h.in() * w.in();
    int outPlane = h.out() * w.out();
    int go = g.offset();
    if (g.dtype() == DType.F32) {
      float[] gs = g.storage().floats();
      float[] is = gi.storage().floats();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          int gb = go + p * outPlane;
          for (int oh = 0; oh < h.out(); oh++) {
            int h0 = h.start()[oh];
            int h1 = h.end()[oh];
            for (int o = 0; o < w.out(); o++) {
              int w0 = w.start()[o];
              int w1 = w.end()[o];
              if (h0 >= h1 || w0 >= w1) continue;
              float v = (float) (gs[gb + oh * w.out() + o] / (h.div()[oh] * w.div()[o]));
              for (int ih = h0; ih < h1; ih++) {
                int r = ib + ih * w.in();
                for (int c = r + w0, e = r + w1; c < e; c++) is[c] += v;
              }
            }
          }
        }
      });
    } else {
      double[] gs = g.storage().doubles();
      double[] is = gi.storage().doubles();
      forPlanes(planes, inPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          int gb = go + p * outPlane;
          for (int oh = 0; oh < h.out(); oh++) {
            int h0 = h.start()[oh];
            int h1 = h.end()[oh];
            for (int o = 0; o < w.out(); o++) {
              int w0 = w.start()[o];
              int w1 = w.end()[o];
              if (h0 >= h1 || w0 >= w1) continue;
              double v = gs[gb + oh * w.out() + o] / (h.div()[oh] * w.div()[o]);
              for (int ih = h0; ih < h1; ih++) {
                int r = ib + ih * w.in();
                for (int c = r + w0, e = r + w1; c < e; c++) is[c] += v;
              }
            }
          }
        }
      });
    }
  }
}
