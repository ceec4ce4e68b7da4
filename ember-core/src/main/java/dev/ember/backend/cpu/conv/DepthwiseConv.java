package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.GRAIN;
import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.doubles;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.paddedPlanes;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.backend.cpu.Rows;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * Depthwise convolution (one input channel per group), whose per-group GEMMs would have a single row:
 * F32 stride-1 3 x 3 layers run {@link RowKernels#depthwise3x3} on the planes in place (forward and input gradient)
 * and, with one output channel per input channel, {@link RowKernels#depthwise3x3Weight} in the same pass as the
 * input gradient; other F32 stride-1 layers run {@link RowKernels#convPlane} over zero-padded planes, other F32 layers the row
 * loops of {@link ConvLoops}, F64 the generic row helpers. The input gradient splits by input plane, the
 * weight gradient by output channel, each summing over the batch in order.
 */
final class DepthwiseConv {
  private DepthwiseConv() {}

  /**
   * Whether a float32 depthwise layer takes {@link RowKernels#convPlane} over zero-padded planes: stride 1,
   * no dilation, and padding of at most k - 1 (so that the input gradient is the same kernel over the
   * padded output gradient with the taps reversed). The per-tap row loops it replaces ran one call of 56
   * floats per tap and row, 3 vectors and a tail, and ran the depthwise layer's forward+backward at 0.34x
   * PyTorch (8 x 64 x 56 x 56, 3 x 3).
   */
  private static boolean depthwiseDirect(View x, ConvGeometry g) {
    return x.dtype() == DType.F32 && g.stride1() && g.ph() <= g.kh() - 1 && g.pw() <= g.kw() - 1;
  }

  /** Row pitch of the padded planes the direct depthwise kernels read for output rows of {@code ow}. */
  private static int directPitch(int ow, int kw) {
    int d = ROWS.directWidth();
    return (ow + d - 1) / d * d + kw - 1;
  }

  private static final ThreadLocal<float[]> F_PITCHED = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * The rows x cols plane of {@code s} at {@code src} in this thread's second buffer, rows {@code pitch} apart,
   * zeros between.
   */
  private static float[] pitched(float[] s, int src, int rows, int cols, int pitch) {
    int size = rows * pitch;
    float[] d = F_PITCHED.get();
    if (d.length < size) F_PITCHED.set(d = new float[size]);
    for (int r = 0; r < rows; r++) {
      System.arraycopy(s, src + r * cols, d, r * pitch, cols);
      java.util.Arrays.fill(d, r * pitch + cols, (r + 1) * pitch, 0f);
    }
    return d;
  }

  /**
   * out[n, o] = bias[o] + sum over (i, j) of w[o, 0, i, j] * x[n, o / mult] shifted: a direct kernel per plane.
   * With {@code relu} each plane is clamped at 0 as soon as it is written, while it is in L1.
   */
  static void forward(View x, View w, double[] bias, View out, int mult, ConvGeometry g, boolean relu) {
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int planes = x.shapeRef()[0] * o;
    int cols = g.cols();
    int kk = g.kk();
    Storage xs = x.storage();
    Storage os = out.storage();
    double[] wv = doubles(w);
    float[] wf = x.dtype() == DType.F32 ? floats(w) : null;
    int per = Math.max(1, GRAIN / Math.max(1, cols * kk));
    boolean direct = depthwiseDirect(x, g);
    int rows = g.oh() + g.kh() - 1;
    int pitch = directPitch(g.ow(), g.kw());
    boolean nine = g.kh() == 3 && g.kw() == 3;
    Parallel.forEach(Parallel.chunks(planes, per), t -> {
      for (int p = t * per, p1 = Math.min(planes, p + per); p < p1; p++) {
        int oc = p % o;
        int src = x.offset() + ((p / o) * c + oc / mult) * g.hw();
        int dst = p * cols;
        if (direct && nine) { // in place, no padded copy: the kernel masks the border lanes
          ROWS.depthwise3x3(xs.floats(), src, g.h(), g.w(), g.ph(), g.pw(), wf, oc * kk,
              bias == null ? 0f : (float) bias[oc], os.floats(), dst, g.oh(), g.ow());
        } else if (direct) {
          float[] xp = paddedPlanes(xs.floats(), src, 1, g.h(), g.w(), g.ph(), g.pw(), rows, pitch, 0);
          ROWS.convPlane(xp, 0, pitch, rows * pitch, 1, g.kh(), g.kw(), wf, oc * kk,
              bias == null ? 0f : (float) bias[oc], os.floats(), dst, g.oh(), g.ow());
        } else if (wf != null) {
          ConvLoops.depthwisePlane(xs.floats(), src, wf, oc * kk, bias == null ? 0f : (float) bias[oc], g, os.floats(),
              dst);
        } else {
          generalPlane(xs, src, wv, oc, bias, g, os, dst);
        }
        if (relu) ConvSupport.relu(os, dst, dst + cols);
      }
    });
  }

  /** One plane of the F64 (or strided) depthwise forward by the generic row helpers. */
  private static void generalPlane(Storage xs, int src, double[] wv, int oc, double[] bias, ConvGeometry g, Storage os,
      int dst) {
    int cols = g.cols();
    int kk = g.kk();
    Rows.fill(os, dst, dst + cols, bias == null ? 0 : bias[oc]);
    for (int i = 0; i < g.kh(); i++) {
      for (int j = 0; j < g.kw(); j++) {
        double wij = wv[oc * kk + i * g.kw() + j];
        int xl = g.xLo(j);
        int xh = g.xHi(j);
        int ix = src + j * g.dw() - g.pw() + xl * g.sw();
        for (int oy = 0; oy < g.oh(); oy++) {
          int iy = oy * g.sh() - g.ph() + i * g.dh();
          if (iy >= 0 && iy < g.h()) {
            Rows.axpyGather(os, dst + oy * g.ow() + xl, xs, ix + iy * g.w(), g.sw(), wij, xh - xl);
          }
        }
      }
    }
  }

  /**
   * Whether backward takes {@link #backward3x3}: float32, one output channel per input channel, 3 x 3, stride 1, no
   * dilation, padding at most 2 (the input gradient's padding of the output gradient, 2 - p, is not negative).
   */
  private static boolean fused3x3(View x, ConvGeometry g, int mult) {
    return x.dtype() == DType.F32 && mult == 1 && g.kh() == 3 && g.kw() == 3 && g.stride1() && g.ph() <= 2
        && g.pw() <= 2;
  }

  static void backward(View x, View w, View gOut, View dx, View dw, int mult, ConvGeometry g) {
    if (fused3x3(x, g, mult)) {
      backward3x3(x, w, gOut, dx, dw, g);
      return;
    }
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cols = g.cols();
    int kk = g.kk();
    Storage xs = x.storage();
    Storage gs = gOut.storage();
    double[] wv = doubles(w);
    float[] wf = x.dtype() == DType.F32 ? floats(w) : null;
    if (dx != null) { // a task owns whole input planes (n, c) and visits the mult output planes reading them
      Storage ds = dx.storage();
      int per = Math.max(1, GRAIN / Math.max(1, cols * kk * mult));
      boolean direct = depthwiseDirect(x, g);
      // Direct: dx = the mult output-gradient planes, padded by k - 1 - p, correlated with the reversed taps.
      float[] flipped = direct ? new float[o * kk] : null;
      if (direct) {
        for (int q = 0; q < o * kk; q += kk) {
          for (int tap = 0; tap < kk; tap++) flipped[q + tap] = wf[q + kk - 1 - tap];
        }
      }
      int rows = g.h() + g.kh() - 1;
      int pitch = directPitch(g.w(), g.kw());
      Parallel.forEach(Parallel.chunks(n * c, per), t -> {
        for (int p = t * per, p1 = Math.min(n * c, p + per); p < p1; p++) {
          int img = p / c;
          int ci = p % c;
          if (direct) {
            int go = gOut.offset() + (img * o + ci * mult) * cols;
            float[] gp = paddedPlanes(gs.floats(), go, mult, g.oh(), g.ow(), g.kh() - 1 - g.ph(), g.kw() - 1 - g.pw(),
                rows, pitch, 0);
            ROWS.convPlane(gp, 0, pitch, rows * pitch, mult, g.kh(), g.kw(), flipped, ci * mult * kk, 0f, ds.floats(),
                p * g.hw(), g.h(), g.w());
            continue;
          }
          for (int m = 0; m < mult; m++) {
            int oc = ci * mult + m;
            int go = gOut.offset() + (img * o + oc) * cols;
            if (wf != null) {
              ConvLoops.depthwiseInputPlane(gs.floats(), go, wf, oc * kk, g, ds.floats(), p * g.hw());
              continue;
            }
            for (int i = 0; i < g.kh(); i++) {
              for (int j = 0; j < g.kw(); j++) {
                double wij = wv[oc * kk + i * g.kw() + j];
                int xl = g.xLo(j);
                int xh = g.xHi(j);
                int ix = p * g.hw() + j * g.dw() - g.pw() + xl * g.sw();
                for (int oy = 0; oy < g.oh(); oy++) {
                  int iy = oy * g.sh() - g.ph() + i * g.dh();
                  if (iy >= 0 && iy < g.h()) {
                    Rows.axpyScatter(ds, ix + iy * g.w(), g.sw(), gs, go + oy * g.ow() + xl, wij, xh - xl);
                  }
                }
              }
            }
          }
        }
      });
    }
    if (dw != null) { // a task owns output channels and sums over the batch in order
      Storage dws = dw.storage();
      int per = Math.max(1, GRAIN / Math.max(1, cols * kk * n));
      // Stride 1, no dilation, float32: per image, one dot of a whole plane per tap instead of one per tap and
      // row (rows of 56: 3 vectors and a tail each); any padding, the input padded by it.
      boolean directW = x.dtype() == DType.F32 && g.stride1();
      int pitch = g.ow() + g.kw() - 1;
      boolean nine = g.kh() == 3 && g.kw() == 3;
      Parallel.forEach(Parallel.chunks(o, per), t -> {
        double[] acc = new double[kk];
        float[] taps = new float[9];
        for (int oc = t * per, o1 = Math.min(o, oc + per); oc < o1; oc++) {
          java.util.Arrays.fill(acc, 0);
          for (int img = 0; img < n; img++) {
            int go = gOut.offset() + (img * o + oc) * cols;
            int src = x.offset() + (img * c + oc / mult) * g.hw();
            if (directW) {
              // One float dot per tap over the whole plane: the output gradient laid out in the padded
              // input's pitch with zeros past its ow columns, against the padded input shifted by the tap.
              float[] xp = paddedPlanes(xs.floats(), src, 1, g.h(), g.w(), g.ph(), g.pw(), g.oh() + g.kh(), pitch, 0);
              float[] gp = pitched(gs.floats(), go, g.oh(), g.ow(), pitch);
              if (nine) { // 3 x 3: the nine dots in one pass over the plane
                ROWS.dot3x3(gp, 0, xp, 0, pitch, g.oh() * pitch, taps);
                for (int e = 0; e < 9; e++) acc[e] += taps[e];
                continue;
              }
              for (int i = 0; i < g.kh(); i++) {
                for (int j = 0; j < g.kw(); j++) {
                  acc[i * g.kw() + j] += ROWS.dot(gp, 0, xp, i * pitch + j, g.oh() * pitch);
                }
              }
              continue;
            }
            if (wf != null) {
              ConvLoops.depthwiseWeightPlane(gs.floats(), go, xs.floats(), src, g, acc);
              continue;
            }
            for (int i = 0; i < g.kh(); i++) {
              for (int j = 0; j < g.kw(); j++) {
                int xl = g.xLo(j);
                int xh = g.xHi(j);
                int ix = src + j * g.dw() - g.pw() + xl * g.sw();
                double s = 0;
                for (int oy = 0; oy < g.oh(); oy++) {
                  int iy = oy * g.sh() - g.ph() + i * g.dh();
                  if (iy >= 0 && iy < g.h()) {
                    s += Rows.dot(gs, go + oy * g.ow() + xl, xs, ix + iy * g.w(), g.sw(), xh - xl);
                  }
                }
                acc[i * g.kw() + j] += s;
              }
            }
          }
          for (int e = 0; e < kk; e++) dws.setDouble(oc * kk + e, acc[e]);
        }
      });
    }
  }

  /**
   * Both gradients of a 3 x 3 depthwise layer in one pass over the planes: a task owns whole (image, channel) planes
   * (a split fixed by the shape) and, reading the output-gradient and input planes in place (no padded copies),
   * writes the input-gradient plane ({@link RowKernels#depthwise3x3} over the output gradient padded by 2 - p, taps
   * reversed) and the plane's nine weight-gradient sums ({@link RowKernels#depthwise3x3Weight}) into a partial per
   * plane, which are added over the images in order, in double, per channel. Same bits on any thread count.
   */
  private static void backward3x3(View x, View w, View gOut, View dx, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    float[] wf = floats(w);
    float[] flipped = new float[c * 9];
    for (int q = 0; q < c * 9; q += 9) {
      for (int tap = 0; tap < 9; tap++) flipped[q + tap] = wf[q + 8 - tap];
    }
    float[] part = dw == null ? null : new float[n * c * 9];
    float[] gs = gOut.storage().floats();
    float[] xs = x.storage().floats();
    float[] ds = dx == null ? null : dx.storage().floats();
    int hw = g.hw();
    int cols = g.cols();
    int per = Math.max(1, GRAIN / Math.max(1, cols * 9 * (dx != null && dw != null ? 2 : 1)));
    Parallel.forEach(Parallel.chunks(n * c, per), t -> {
      float[] taps = new float[9];
      for (int p = t * per, p1 = Math.min(n * c, p + per); p < p1; p++) {
        int go = gOut.offset() + p * cols;
        if (ds != null) {
          ROWS.depthwise3x3(gs, go, g.oh(), g.ow(), 2 - g.ph(), 2 - g.pw(), flipped, (p % c) * 9, 0f, ds,
              dx.offset() + p * hw, g.h(), g.w());
        }
        if (part != null) {
          ROWS.depthwise3x3Weight(gs, go, g.oh(), g.ow(), xs, x.offset() + p * hw, g.h(), g.w(), g.ph(), g.pw(), taps);
          System.arraycopy(taps, 0, part, p * 9, 9);
        }
      }
    });
    if (part == null) return;
    Storage dws = dw.storage();
    for (int oc = 0; oc < c; oc++) {
      for (int e = 0; e < 9; e++) {
        double s = 0;
        for (int img = 0; img < n; img++) s += part[(img * c + oc) * 9 + e];
        dws.setDouble(dw.offset() + oc * 9 + e, s);
      }
    }
  }
}
