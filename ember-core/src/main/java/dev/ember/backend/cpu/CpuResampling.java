package dev.ember.backend.cpu;

import dev.ember.backend.LinearAxis;
import dev.ember.backend.ResamplingKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * The CPU resampling kernels: nearest and bilinear interpolation (F32 or F64, the arithmetic in the
 * input's precision) and padding (any dtype, element by element through the storage's accessors), one
 * pass over contiguous planes each, parallel over planes in tasks whose size the shapes fix, and every
 * plane computed by one task in a fixed order, so results are bitwise the same on any number of threads.
 */
public final class CpuResampling implements ResamplingKernels {
  /** The one instance: the kernels keep no state. */
  public static final CpuResampling INSTANCE = new CpuResampling();

  private CpuResampling() {}

  /** Output elements per interpolation task. */
  private static final int TASK_ELEMENTS = 1 << 15;

  private static void forPlanes(int planes, int planeSize, Pl body) {
    int per = Math.max(1, TASK_ELEMENTS / Math.max(1, planeSize));
    Parallel.forEach(Parallel.chunks(planes, per), t -> body.run(t * per, Math.min(planes, (t + 1) * per)));
  }

  @FunctionalInterface
  private interface Pl {
    void run(int p0, int p1);
  }

  @Override
  public void nearestForward(View x, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View y) {
    int oh = hIdx.length;
    int ow = wIdx.length;
    int inPlane = ih * iw;
    int outPlane = oh * ow;
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] ys = y.storage().floats();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          for (int h = 0; h < oh; h++) {
            int src = xo + p * inPlane + hIdx[h] * iw;
            int dst = p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) ys[dst + w] = xs[src + wIdx[w]];
          }
        }
      });
    } else {
      double[] xs = x.storage().doubles();
      double[] ys = y.storage().doubles();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          for (int h = 0; h < oh; h++) {
            int src = xo + p * inPlane + hIdx[h] * iw;
            int dst = p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) ys[dst + w] = xs[src + wIdx[w]];
          }
        }
      });
    }
  }

  @Override
  public void nearestBackward(View g, int planes, int ih, int iw, int[] hIdx, int[] wIdx, View gi) {
    int oh = hIdx.length;
    int ow = wIdx.length;
    int inPlane = ih * iw;
    int outPlane = oh * ow;
    int go = g.offset();
    if (g.dtype() == DType.F32) {
      float[] gs = g.storage().floats();
      float[] is = gi.storage().floats();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          for (int h = 0; h < oh; h++) {
            int dst = p * inPlane + hIdx[h] * iw;
            int src = go + p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) is[dst + wIdx[w]] += gs[src + w];
          }
        }
      });
    } else {
      double[] gs = g.storage().doubles();
      double[] is = gi.storage().doubles();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          for (int h = 0; h < oh; h++) {
            int dst = p * inPlane + hIdx[h] * iw;
            int src = go + p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) is[dst + wIdx[w]] += gs[src + w];
          }
        }
      });
    }
  }

  @Override
  public void bilinearForward(View x, int planes, int ih, int iw, LinearAxis lh, LinearAxis lw, View y) {
    int oh = lh.i0().length;
    int ow = lw.i0().length;
    int inPlane = ih * iw;
    int outPlane = oh * ow;
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] ys = y.storage().floats();
      float[] w0 = toFloats(lw.l0());
      float[] w1 = toFloats(lw.l1());
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int xb = xo + p * inPlane;
          for (int h = 0; h < oh; h++) {
            int r0 = xb + lh.i0()[h] * iw;
            int r1 = xb + lh.i1()[h] * iw;
            float a = (float) lh.l0()[h];
            float b = (float) lh.l1()[h];
            int dst = p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) {
              int c0 = lw.i0()[w];
              int c1 = lw.i1()[w];
              float t0 = xs[r0 + c0] * w0[w] + xs[r0 + c1] * w1[w];
              float t1 = xs[r1 + c0] * w0[w] + xs[r1 + c1] * w1[w];
              ys[dst + w] = t0 * a + t1 * b;
            }
          }
        }
      });
    } else {
      double[] xs = x.storage().doubles();
      double[] ys = y.storage().doubles();
      double[] w0 = lw.l0();
      double[] w1 = lw.l1();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int xb = xo + p * inPlane;
          for (int h = 0; h < oh; h++) {
            int r0 = xb + lh.i0()[h] * iw;
            int r1 = xb + lh.i1()[h] * iw;
            double a = lh.l0()[h];
            double b = lh.l1()[h];
            int dst = p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) {
              int c0 = lw.i0()[w];
              int c1 = lw.i1()[w];
              double t0 = xs[r0 + c0] * w0[w] + xs[r0 + c1] * w1[w];
              double t1 = xs[r1 + c0] * w0[w] + xs[r1 + c1] * w1[w];
              ys[dst + w] = t0 * a + t1 * b;
            }
          }
        }
      });
    }
  }

  @Override
  public void bilinearBackward(View g, int planes, int ih, int iw, LinearAxis lh, LinearAxis lw, View gi) {
    int oh = lh.i0().length;
    int ow = lw.i0().length;
    int inPlane = ih * iw;
    int outPlane = oh * ow;
    int go = g.offset();
    if (g.dtype() == DType.F32) {
      float[] gs = g.storage().floats();
      float[] is = gi.storage().floats();
      float[] w0 = toFloats(lw.l0());
      float[] w1 = toFloats(lw.l1());
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          for (int h = 0; h < oh; h++) {
            int r0 = ib + lh.i0()[h] * iw;
            int r1 = ib + lh.i1()[h] * iw;
            float a = (float) lh.l0()[h];
            float b = (float) lh.l1()[h];
            int src = go + p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) {
              float v = gs[src + w];
              int c0 = lw.i0()[w];
              int c1 = lw.i1()[w];
              is[r0 + c0] += a * w0[w] * v;
              is[r0 + c1] += a * w1[w] * v;
              is[r1 + c0] += b * w0[w] * v;
              is[r1 + c1] += b * w1[w] * v;
            }
          }
        }
      });
    } else {
      double[] gs = g.storage().doubles();
      double[] is = gi.storage().doubles();
      double[] w0 = lw.l0();
      double[] w1 = lw.l1();
      forPlanes(planes, outPlane, (p0, p1) -> {
        for (int p = p0; p < p1; p++) {
          int ib = p * inPlane;
          for (int h = 0; h < oh; h++) {
            int r0 = ib + lh.i0()[h] * iw;
            int r1 = ib + lh.i1()[h] * iw;
            double a = lh.l0()[h];
            double b = lh.l1()[h];
            int src = go + p * outPlane + h * ow;
            for (int w = 0; w < ow; w++) {
              double v = gs[src + w];
              int c0 = lw.i0()[w];
              int c1 = lw.i1()[w];
              is[r0 + c0] += a * w0[w] * v;
              is[r0 + c1] += a * w1[w] * v;
              is[r1 + c0] += b * w0[w] * v;
              is[r1 + c1] += b * w1[w] * v;
            }
          }
        }
      });
    }
  }

  private static float[] toFloats(double[] d) {
    float[] f = new float[d.length];
    for (int i = 0; i < d.length; i++) f[i] = (float) d[i];
    return f;
  }

  /** Planes per padding task: about 16K output elements. */
  private static int padPlanesPerTask(int oh, int ow) {
    return Math.max(1, (1 << 14) / Math.max(1, oh * ow));
  }

  @Override
  public void padForward(View x, int planes, int h, int w, int[] mapH, int[] mapW, double value, View out) {
    int oh = mapH.length;
    int ow = mapW.length;
    Storage xs = x.storage();
    Storage os = out.storage();
    int per = padPlanesPerTask(oh, ow);
    Parallel.forEach(Parallel.chunks(planes, per), t -> {
      for (int p = t * per, p1 = Math.min(planes, p + per); p < p1; p++) {
        int src = x.offset() + p * h * w;
        int dst = p * oh * ow;
        for (int oy = 0; oy < oh; oy++) {
          int sy = mapH[oy];
          for (int ox = 0; ox < ow; ox++) {
            int sx = mapW[ox];
            os.setDouble(dst + oy * ow + ox, sy < 0 || sx < 0 ? value : xs.getDouble(src + sy * w + sx));
          }
        }
      }
    });
  }

  @Override
  public void padBackward(View g, int planes, int h, int w, int[] mapH, int[] mapW, View dx) {
    int oh = mapH.length;
    int ow = mapW.length;
    Storage gs = g.storage();
    Storage ds = dx.storage();
    int per = padPlanesPerTask(oh, ow);
    Parallel.forEach(Parallel.chunks(planes, per), t -> {
      for (int p = t * per, p1 = Math.min(planes, p + per); p < p1; p++) {
        int src = p * h * w;
        int go = g.offset() + p * oh * ow;
        for (int oy = 0; oy < oh; oy++) {
          int sy = mapH[oy];
          if (sy < 0) continue;
          for (int ox = 0; ox < ow; ox++) {
            int sx = mapW[ox];
            if (sx >= 0) {
              int i = src + sy * w + sx;
              ds.setDouble(i, ds.getDouble(i) + gs.getDouble(go + oy * ow + ox));
            }
          }
        }
      }
    });
  }
}
