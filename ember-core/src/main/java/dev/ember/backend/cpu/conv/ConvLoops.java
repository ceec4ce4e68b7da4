package dev.ember.backend.cpu.conv;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.cpu.RowKernels;

import java.util.Arrays;

/**
 * The float32 inner loops of the convolution strategies, one channel or plane at a time, written out on
 * {@code float[]} so that the per-row work is a bare counted loop (the JIT vectorises the unit-stride
 * ones) instead of a call: with rows as short as 24-56 elements the call and dispatch cost of the
 * generic row helpers measured larger than the arithmetic. Same index rules as ConvGeometry;
 * the F64 path (gradient checks) keeps the generic helpers.
 */
final class ConvLoops {
  private static final RowKernels ROWS = RowKernels.F32;

  private ConvLoops() {}

  /** The kk column rows of one channel: d[row0 + (i*kw + j) * cols + oy*ow + ox] = s[so + iy*w + ix] or 0. */
  static void im2col(float[] s, int so, ConvGeometry g, float[] d, int row0) {
    im2col(s, so, g, d, row0, g.oh() * g.ow());
  }

  /** {@link #im2col(float[], int, ConvGeometry, float[], int)} with column rows {@code cols} apart. */
  static void im2col(float[] s, int so, ConvGeometry g, float[] d, int row0, int cols) {
    int ow = g.ow();
    int sw = g.sw();
    int sh = g.sh();
    int maxKy = (g.h() + sh - 1) / sh;
    int maxKx = (g.w() + sw - 1) / sw;
    float[] ph = null;
    if (sw != 1) { // the image's sh x sw phase planes, each dense: every tap then copies rows with unit stride
      ph = PHASE.get();
      if (ph.length < sh * sw * maxKy * maxKx) PHASE.set(ph = new float[sh * sw * maxKy * maxKx]);
      for (int py = 0; py < Math.min(sh, g.h()); py++) {
        for (int px = 0; px < Math.min(sw, g.w()); px++) {
          gatherPlane(s, so + py * g.w() + px, sh * g.w(), sw, ph, (py * sw + px) * maxKy * maxKx,
              (g.h() - py + sh - 1) / sh, (g.w() - px + sw - 1) / sw);
        }
      }
    }
    for (int i = 0; i < g.kh(); i++) {
      int oy0 = firstRow(g, i);
      int oy1 = endRow(g, i);
      for (int j = 0; j < g.kw(); j++) {
        int r = row0 + (i * g.kw() + j) * cols;
        int xl = g.xLo(j);
        int xh = g.xHi(j);
        int ixb = so + j * g.dw() - g.pw();
        Arrays.fill(d, r, r + oy0 * ow, 0f); // rows above and below the image
        Arrays.fill(d, r + oy1 * ow, r + g.oh() * ow, 0f);
        if (oy1 <= oy0) continue;
        if (xl > 0 || xh < ow) {
          for (int oy = oy0; oy < oy1; oy++) {
            int o = r + oy * ow;
            for (int ox = 0; ox < xl; ox++) d[o + ox] = 0f;
            for (int ox = xh; ox < ow; ox++) d[o + ox] = 0f;
          }
        }
        int iy0 = oy0 * g.sh() - g.ph() + i * g.dh();
        if (sw == 1) {
          if (xh > xl) {
            ROWS.copyRows(s, ixb + iy0 * g.w() + xl, g.sh() * g.w(), d, r + oy0 * ow + xl, ow, oy1 - oy0, xh - xl);
          }
        } else if (xh > xl) { // iy = (oy + qy) * sh + py, ix = (ox + qx) * sw + px
          int bi = i * g.dh() - g.ph();
          int bj = j * g.dw() - g.pw();
          int py = Math.floorMod(bi, sh);
          int px = Math.floorMod(bj, sw);
          int nkx = (g.w() - px + sw - 1) / sw;
          int src = (py * sw + px) * maxKy * maxKx + (oy0 + Math.floorDiv(bi, sh)) * nkx + xl + Math.floorDiv(bj, sw);
          ROWS.copyRows(ph, src, nkx, d, r + oy0 * ow + xl, ow, oy1 - oy0, xh - xl);
        }
      }
    }
  }

  /** Stride 1 and undilated: the row kernels' col2imUnit applies. */
  private static boolean unit(ConvGeometry g) {
    return g.sh() == 1 && g.sw() == 1 && g.dh() == 1 && g.dw() == 1;
  }

  /** The first output row whose input row for kernel row i lies in the image. */
  private static int firstRow(ConvGeometry g, int i) {
    int off = i * g.dh() - g.ph(); // iy = oy * sh + off
    return off >= 0 ? 0 : Math.min(g.oh(), Math.ceilDiv(-off, g.sh()));
  }

  /** One past the last such row (at least firstRow). */
  private static int endRow(ConvGeometry g, int i) {
    int off = i * g.dh() - g.ph();
    int end = off > g.h() - 1 ? 0 : Math.min(g.oh(), (g.h() - 1 - off) / g.sh() + 1);
    return Math.max(end, firstRow(g, i));
  }

  /** The adjoint of {@link #im2col}: s[so + iy*w + ix] += col entries that lie in the image. */
  static void col2im(float[] col, int row0, ConvGeometry g, float[] s, int so) {
    col2im(col, row0, g, s, so, g.oh() * g.ow());
  }

  /** {@link #col2im(float[], int, ConvGeometry, float[], int)} with column rows {@code cols} apart. */
  static void col2im(float[] col, int row0, ConvGeometry g, float[] s, int so, int cols) {
    if (unit(g)) {
      ROWS.col2imUnit(col, row0, cols, g.h(), g.w(), g.kh(), g.kw(), g.ph(), g.pw(), g.oh(), g.ow(), s, so);
      return;
    }
    if (g.sw() != 1) {
      col2imStrided(col, row0, g, s, so, cols);
      return;
    }
    int ow = g.ow();
    for (int i = 0; i < g.kh(); i++) {
      int oy0 = firstRow(g, i);
      int oy1 = endRow(g, i);
      if (oy1 <= oy0) continue;
      int iy0 = oy0 * g.sh() - g.ph() + i * g.dh();
      for (int j = 0; j < g.kw(); j++) {
        int r = row0 + (i * g.kw() + j) * cols;
        int xl = g.xLo(j);
        int xh = g.xHi(j);
        int ixb = so + j * g.dw() - g.pw();
        if (xh > xl) {
          ROWS.addRows(col, r + oy0 * ow + xl, ow, s, ixb + iy0 * g.w() + xl, g.sh() * g.w(), oy1 - oy0, xh - xl);
        }
      }
    }
  }

  /** The phase planes of {@link #im2col} and {@link #col2imStrided} (per thread). */
  private static final ThreadLocal<float[]> PHASE = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * col2im with a horizontal stride above 1, one output phase at a time: the pixels
   * {@code (py + ky*sh, px + kx*sw)} of the image are gathered into a dense plane, every tap (i, j) that
   * reaches that phase adds its column block there with unit stride (the taps in (i, j) order, as the
   * tap-by-tap loop adds them to each pixel, so the sums are the same bits), and the plane is stored back.
   * Scattering tap by tap with stride sw instead did four strided read-modify-writes per pixel of a k4 s2
   * transposed convolution (~0.9 ns per column entry, 40% of its forward).
   */
  private static void col2imStrided(float[] col, int row0, ConvGeometry g, float[] s, int so, int cols) {
    int h = g.h();
    int w = g.w();
    int ow = g.ow();
    int sh = g.sh();
    int sw = g.sw();
    int kh = g.kh();
    int kw = g.kw();
    int maxKy = (h + sh - 1) / sh;
    int maxKx = (w + sw - 1) / sw;
    float[] buf = PHASE.get();
    if (buf.length < maxKy * maxKx) PHASE.set(buf = new float[maxKy * maxKx]);
    for (int py = 0; py < Math.min(sh, h); py++) {
      int nky = (h - py + sh - 1) / sh;
      for (int px = 0; px < Math.min(sw, w); px++) {
        int nkx = (w - px + sw - 1) / sw;
        boolean loaded = false;
        for (int i = 0; i < kh; i++) {
          int bi = py + g.ph() - i * g.dh(); // oy = ky + ry
          if (Math.floorMod(bi, sh) != 0) continue;
          int ry = Math.floorDiv(bi, sh);
          int ky0 = Math.max(0, -ry);
          int ky1 = Math.min(nky, g.oh() - ry);
          if (ky1 <= ky0) continue;
          for (int j = 0; j < kw; j++) {
            int bj = px + g.pw() - j * g.dw(); // ox = kx + rx
            if (Math.floorMod(bj, sw) != 0) continue;
            int rx = Math.floorDiv(bj, sw);
            int kx0 = Math.max(0, -rx);
            int kx1 = Math.min(nkx, ow - rx);
            if (kx1 <= kx0) continue;
            if (!loaded) {
              gatherPlane(s, so + py * w + px, sh * w, sw, buf, 0, nky, nkx);
              loaded = true;
            }
            int src = row0 + (i * kw + j) * cols + (ky0 + ry) * ow + kx0 + rx;
            ROWS.addRows(col, src, ow, buf, ky0 * nkx + kx0, nkx, ky1 - ky0, kx1 - kx0);
          }
        }
        if (!loaded) continue;
        scatterPlane(buf, nky, nkx, s, so + py * w + px, sh * w, sw);
      }
    }
  }

  /** d[dOff + ky*nkx + kx] = s[so + ky*rs + kx*sw] for ky &lt; nky, kx &lt; nkx (stride 2 spelled out for the JIT). */
  private static void gatherPlane(float[] s, int so, int rs, int sw, float[] d, int dOff, int nky, int nkx) {
    for (int ky = 0; ky < nky; ky++) {
      int sr = so + ky * rs;
      int br = dOff + ky * nkx;
      if (sw == 2) {
        for (int kx = 0; kx < nkx; kx++) d[br + kx] = s[sr + 2 * kx];
      } else {
        for (int kx = 0; kx < nkx; kx++) d[br + kx] = s[sr + kx * sw];
      }
    }
  }

  /** The inverse of {@link #gatherPlane}: s[so + ky*rs + kx*sw] = d[ky*nkx + kx]. */
  private static void scatterPlane(float[] d, int nky, int nkx, float[] s, int so, int rs, int sw) {
    for (int ky = 0; ky < nky; ky++) {
      int sr = so + ky * rs;
      int br = ky * nkx;
      if (sw == 2) {
        for (int kx = 0; kx < nkx; kx++) s[sr + 2 * kx] = d[br + kx];
      } else {
        for (int kx = 0; kx < nkx; kx++) s[sr + kx * sw] = d[br + kx];
      }
    }
  }

  /** out[dst + oy*ow + ox] = bias + sum over taps of w[wo + i*kw + j] * x[src + iy*w + ix]. */
  static void depthwisePlane(float[] x, int src, float[] w, int wo, float bias, ConvGeometry g, float[] out,
      int dst) {
    int ow = g.ow();
    int sw = g.sw();
    Arrays.fill(out, dst, dst + g.oh() * ow, bias);
    for (int oy = 0; oy < g.oh(); oy++) {
      int o = dst + oy * ow;
      for (int i = 0; i < g.kh(); i++) {
        int iy = oy * g.sh() - g.ph() + i * g.dh();
        if (iy < 0 || iy >= g.h()) continue;
        for (int j = 0; j < g.kw(); j++) {
          float wv = w[wo + i * g.kw() + j];
          int xl = g.xLo(j);
          int xh = g.xHi(j);
          int sb = src + iy * g.w() + j * g.dw() - g.pw();
          if (sw == 1) {
            if (xh > xl) ROWS.axpy(wv, x, sb + xl, out, o + xl, xh - xl);
          } else {
            for (int ox = xl; ox < xh; ox++) out[o + ox] += wv * x[sb + ox * sw];
          }
        }
      }
    }
  }

  /** dx[dxo + iy*w + ix] += w * g over the taps: the input gradient of one (plane, output channel) pair. */
  static void depthwiseInputPlane(float[] gr, int go, float[] w, int wo, ConvGeometry g, float[] dx, int dxo) {
    int ow = g.ow();
    int sw = g.sw();
    for (int oy = 0; oy < g.oh(); oy++) {
      int o = go + oy * ow;
      for (int i = 0; i < g.kh(); i++) {
        int iy = oy * g.sh() - g.ph() + i * g.dh();
        if (iy < 0 || iy >= g.h()) continue;
        for (int j = 0; j < g.kw(); j++) {
          float wv = w[wo + i * g.kw() + j];
          int xl = g.xLo(j);
          int xh = g.xHi(j);
          int sb = dxo + iy * g.w() + j * g.dw() - g.pw();
          if (sw == 1) {
            if (xh > xl) ROWS.axpy(wv, gr, o + xl, dx, sb + xl, xh - xl);
          } else {
            for (int ox = xl; ox < xh; ox++) dx[sb + ox * sw] += wv * gr[o + ox];
          }
        }
      }
    }
  }

  /**
   * acc[i*kw + j] += sum over the plane of g * x shifted by the tap: the weight gradient of one
   * (image, output channel) pair. Each row's dot product runs in float with four partial sums (to
   * hide the add latency) and is added to the double accumulator in a fixed order.
   */
  static void depthwiseWeightPlane(float[] gr, int go, float[] x, int src, ConvGeometry g, double[] acc) {
    int ow = g.ow();
    int sw = g.sw();
    for (int i = 0; i < g.kh(); i++) {
      for (int j = 0; j < g.kw(); j++) {
        int xl = g.xLo(j);
        int xh = g.xHi(j);
        double s = 0;
        for (int oy = 0; oy < g.oh(); oy++) {
          int iy = oy * g.sh() - g.ph() + i * g.dh();
          if (iy < 0 || iy >= g.h()) continue;
          int o = go + oy * ow;
          int sb = src + iy * g.w() + j * g.dw() - g.pw();
          if (sw == 1) {
            if (xh > xl) s += ROWS.dot(gr, o + xl, x, sb + xl, xh - xl);
            continue;
          }
          float s0 = 0;
          float s1 = 0;
          float s2 = 0;
          float s3 = 0;
          int ox = xl;
          for (; ox + 3 < xh; ox += 4) {
            s0 += gr[o + ox] * x[sb + ox * sw];
            s1 += gr[o + ox + 1] * x[sb + (ox + 1) * sw];
            s2 += gr[o + ox + 2] * x[sb + (ox + 2) * sw];
            s3 += gr[o + ox + 3] * x[sb + (ox + 3) * sw];
          }
          for (; ox < xh; ox++) s0 += gr[o + ox] * x[sb + ox * sw];
          s += (s0 + s1) + (s2 + s3);
        }
        acc[i * g.kw() + j] += s;
      }
    }
  }
}
