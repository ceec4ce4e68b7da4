package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.gemm;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * Winograd F(4, 3) along the rows for F32 one-group convolutions with 1 x 3 kernels (conv1d with kernel 3),
 * stride 1: each row is cut into tiles of 4 outputs; a tile's 6 inputs d become V = B^T d, the 3 weights g of
 * each (output, input) channel pair U = G g, and the 6 products of each tile are 6 GEMMs {@code M[xi] = U[xi]
 * x V[xi]} over all the tiles of the batch (a wide N), whose results A^T M are the tile's 4 outputs: 6 GEMM
 * multiplications per 4 outputs instead of 12. The input gradient is the same pass over the upstream gradient
 * (padded by 2 - p, weights flipped and their channels swapped); the weight gradient is the adjoint
 * {@code dg = G^T sum over tiles of V * (A dy)}, 6 more GEMMs of the transformed upstream gradient against V
 * (built again). Exact in real arithmetic; in float the transforms (entries up to 8
 * and 1/24) round differently from the direct sum (WinogradConvTest bounds it against a float64 oracle).
 *
 * <p>One task per image (per chunk of images for the weight gradient): the image's transformed operands, of 6 x
 * channels x its tiles, stay in the core's L2 between the transform, the 6 GEMMs (run inline) and the inverse
 * transform. Over the whole batch at once (N = every tile, 6 MB operands at conv1d's N=16 128x512) the same work
 * moved 96 MB through memory per forward+backward and ran at ~1.2x the implicit GEMM on one thread. Each image
 * writes only its own outputs, and the weight gradient sums fixed chunks of images in chunk order, so results do
 * not depend on the thread count.
 */
final class WinogradConv {
  private WinogradConv() {}

  /** Outputs per tile (m of F(m, 3)) and inputs per tile (m + 2). */
  static final int M = 4;
  static final int ALPHA = 6;

  /**
   * Channels below which the transforms cost more than the GEMM multiplications they save: on this path the
   * GEMMs run over [O, C] x [C, tiles], whose M and K are the channel counts.
   */
  private static final int MIN_CHANNELS = 32;

  /**
   * Most floats of one image's transformed operand (6 x channels x tiles): 8 MiB per thread-local buffer (conv1d's
   * 128 x 512 takes 0.4 MiB, within a core's L2; much longer rows would stream from memory as the whole-batch form
   * did).
   */
  private static final long MAX_IMAGE_FLOATS = 1L << 21;

  static final ThreadLocal<float[]> F_V = ThreadLocal.withInitial(() -> new float[0]);
  static final ThreadLocal<float[]> F_M = ThreadLocal.withInitial(() -> new float[0]);
  /** The weight gradient's partials, one slice per chunk of images (the calling thread's, reused across calls). */
  private static final ThreadLocal<float[]> F_PARTIALS = ThreadLocal.withInitial(() -> new float[0]);

  /** This thread's buffer of tl of at least n floats (contents undefined). */
  static float[] buffer(ThreadLocal<float[]> tl, long n) {
    float[] a = tl.get();
    if (a.length < n) tl.set(a = new float[(int) n]);
    return a;
  }

  /**
   * Whether the path applies: F32, one group, a 1 x 3 kernel, stride 1, undilated, no vertical padding,
   * horizontal padding 0-2 with the output as wide as the padded input's valid positions (so the input
   * gradient is the same convolution with padding 2 - p), at least MIN_CHANNELS input and output channels, and
   * one image's transformed operands within MAX_IMAGE_FLOATS.
   */
  static boolean applies(View x, int outChannels, int groups, ConvGeometry g) {
    int c = x.shapeRef()[1];
    if (x.dtype() != DType.F32 || groups != 1 || g.kh() != 1 || g.kw() != 3 || !g.stride1() || g.ph() != 0
        || g.pw() > 2 || g.oh() != g.h() || g.ow() != g.w() + 2 * g.pw() - 2 || g.ow() < 1) {
      return false;
    }
    if (c < MIN_CHANNELS || outChannels < MIN_CHANNELS) return false;
    long tiles = (long) g.h() * tiles(Math.max(g.w(), g.ow()));
    return ALPHA * Math.max(c, outChannels) * tiles <= MAX_IMAGE_FLOATS;
  }

  /** Tiles of a row of {@code len} outputs. */
  private static int tiles(int len) {
    return Math.ceilDiv(len, M);
  }

  /**
   * v[xi][ch][T] (T = row * tw + t, tt = rows * tw) = B^T d of each tile of one image's planes [chans, rows, len]
   * at so: d_k = src(4t - pad + k), zero outside the row.
   */
  static void inputTransform(float[] s, int so, int chans, int rows, int len, int pad, int tw, float[] v) {
    int tt = rows * tw;
    for (int ch = 0; ch < chans; ch++) {
      for (int r = 0; r < rows; r++) {
        ROWS.winogradInput(s, so + (ch * rows + r) * len, len, pad, tw, v, ch * tt + r * tw, chans * tt);
      }
    }
  }

  /** m[xi][ch][T] = A dy of each tile of 4 upstream-gradient values (zero past len) of one image's planes. */
  static void gradTransform(float[] s, int so, int chans, int rows, int len, int tw, float[] m) {
    int tt = rows * tw;
    for (int ch = 0; ch < chans; ch++) {
      for (int r = 0; r < rows; r++) {
        ROWS.winogradGrad(s, so + (ch * rows + r) * len, len, tw, m, ch * tt + r * tw, chans * tt);
      }
    }
  }

  /** One image's planes [chans, rows, len] at oo = A^T m of each tile plus bias[ch] (0 for null), relu-clamped. */
  static void outputTransform(float[] m, int chans, int rows, int len, int tw, float[] bias, boolean relu,
      float[] out, int oo) {
    int tt = rows * tw;
    for (int ch = 0; ch < chans; ch++) {
      float b = bias == null ? 0f : bias[ch];
      for (int r = 0; r < rows; r++) {
        ROWS.winogradOutput(m, ch * tt + r * tw, chans * tt, tw, b, relu, out, oo + (ch * rows + r) * len, len);
      }
    }
  }

  /**
   * u[xi][a][b] = (G g)[xi] for the 3 taps g of w[index(a, b) .. + 2] (reversed when {@code flip}), computed in
   * double and rounded once.
   */
  private static float[] weightTransform(float[] w, int na, int nb, boolean swap, boolean flip) {
    int ab = na * nb;
    float[] u = new float[ALPHA * ab];
    Parallel.forEach(na, a -> { // each element on its own: any split gives the same bits
      for (int b = 0; b < nb; b++) {
        int at = (swap ? b * na + a : a * nb + b) * 3;
        double g0 = w[at + (flip ? 2 : 0)];
        double g1 = w[at + 1];
        double g2 = w[at + (flip ? 0 : 2)];
        int q = a * nb + b;
        u[q] = (float) (g0 / 4);
        u[q + ab] = (float) (-(g0 + g1 + g2) / 6);
        u[q + 2 * ab] = (float) (-(g0 - g1 + g2) / 6);
        u[q + 3 * ab] = (float) ((g0 + 2 * g1 + 4 * g2) / 24);
        u[q + 4 * ab] = (float) ((g0 - 2 * g1 + 4 * g2) / 24);
        u[q + 5 * ab] = (float) g2;
      }
    });
    return u;
  }

  /**
   * One image's convolution: src planes [inC, rows, len] at so, padded by pad, against the transformed weights u
   * [6][outC][inC], into dst planes [outC, rows, outLen] at dO, plus bias, relu-clamped: the transform into this
   * thread's V, 6 GEMMs into its M, the inverse transform.
   */
  private static void image(float[] s, int so, int inC, int rows, int len, int pad, Storage u, int outC,
      int outLen, float[] bias, boolean relu, float[] d, int dO) {
    int tw = tiles(outLen);
    int tt = rows * tw;
    float[] v = buffer(F_V, (long) ALPHA * inC * tt);
    inputTransform(s, so, inC, rows, len, pad, tw, v);
    float[] m = buffer(F_M, (long) ALPHA * outC * tt);
    Storage vs = Storage.wrap(v);
    Storage ms = Storage.wrap(m);
    for (int xi = 0; xi < ALPHA; xi++) {
      gemm(u, xi * outC * inC, outC, inC, inC, false, vs, xi * inC * tt, tt, tt, false, ms, xi * outC * tt, tt,
          false);
    }
    outputTransform(m, outC, rows, outLen, tw, bias, relu, d, dO);
  }

  /** The bias (doubles, or null) as the floats the kernels add, or null. */
  static float[] floatBias(double[] bias, int o) {
    if (bias == null) return null;
    float[] b = new float[o];
    for (int i = 0; i < o; i++) b[i] = (float) bias[i];
    return b;
  }

  /** out = x convolved with w plus bias (doubles, or null), clamped at 0 with relu: one task per image. */
  static void forward(View x, View w, double[] bias, View out, ConvGeometry g, boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    Storage u = Storage.wrap(weightTransform(floats(w), o, c, false, false));
    float[] bf = floatBias(bias, o);
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    Parallel.forEach(n, img -> image(xs, x.offset() + img * c * g.hw(), c, g.h(), g.w(), g.pw(), u, o, g.ow(), bf,
        relu, ys, out.offset() + img * o * g.cols()));
  }

  /** dx (input gradient, or null) and dw (weight gradient, or null), both overwritten. */
  static void backward(View x, View w, View gOut, View dx, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int rows = g.h();
    float[] gs = gOut.storage().floats();
    float[] xs = x.storage().floats();
    if (dx != null) { // dx = gOut padded by 2 - p, convolved with the flipped weights, channels swapped
      Storage u = Storage.wrap(weightTransform(floats(w), c, o, true, true));
      float[] ds = dx.storage().floats();
      Parallel.forEach(n, img -> image(gs, gOut.offset() + img * o * g.cols(), o, rows, g.ow(), 2 - g.pw(), u, c,
          g.w(), null, false, ds, dx.offset() + img * c * g.hw()));
    }
    if (dw == null) return;
    // per chunk of images: W[xi] (+)= (A dy)[xi] [O, T] x V[xi]^T [T, C] image by image; then dg = G^T W
    int tw = tiles(g.ow());
    int tt = rows * tw;
    int oc = o * c;
    int per = imagesPerChunk(n, (long) ALPHA * oc);
    int chunks = Parallel.chunks(n, per);
    int size = ALPHA * oc;
    // a reused buffer, not zeroed: each chunk's first image overwrites its slice. Fresh arrays (3 MiB at conv1d's
    // 128 x 128, 8 chunks) were zeroed by the calling thread alone before the parallel work, on every call
    float[] part = buffer(F_PARTIALS, (long) chunks * size);
    Storage ps = Storage.wrap(part);
    Parallel.forEach(chunks, t -> {
      for (int img = t * per, n0 = img, n1 = Math.min(n, img + per); img < n1; img++) {
        float[] v = buffer(F_V, (long) ALPHA * c * tt);
        inputTransform(xs, x.offset() + img * c * g.hw(), c, rows, g.w(), g.pw(), tw, v);
        float[] m = buffer(F_M, (long) ALPHA * o * tt);
        gradTransform(gs, gOut.offset() + img * o * g.cols(), o, rows, g.ow(), tw, m);
        Storage vs = Storage.wrap(v);
        Storage ms = Storage.wrap(m);
        for (int xi = 0; xi < ALPHA; xi++) {
          gemm(ms, xi * o * tt, o, tt, tt, false, vs, xi * c * tt, c, tt, true, ps, t * size + xi * oc, c,
              img != n0);
        }
      }
    });
    // the partials added into the first in chunk order, element by element (unit stride), then dg = G^T W per
    // output channel: tasks fixed by the shapes (this ran on one thread after the parallel part, reading the
    // partials 48 strided streams at a time)
    int block = Math.max(1, Math.min(size, 1 << 14));
    Parallel.forEach(Parallel.chunks(size, block), b -> {
      for (int t = 1; t < chunks; t++) {
        for (int i = b * block, j = t * size + i, i1 = Math.min(size, i + block); i < i1; i++, j++) part[i] += part[j];
      }
    });
    float[] d = dw.storage().floats();
    Parallel.forEach(o, k -> {
      double[] wx = new double[ALPHA];
      for (int q = k * c, q1 = q + c; q < q1; q++) {
        for (int xi = 0; xi < ALPHA; xi++) wx[xi] = part[xi * oc + q];
        int at = dw.offset() + q * 3;
        d[at] = (float) (wx[0] / 4 - (wx[1] + wx[2]) / 6 + (wx[3] + wx[4]) / 24);
        d[at + 1] = (float) ((wx[2] - wx[1]) / 6 + (wx[3] - wx[4]) / 12);
        d[at + 2] = (float) ((wx[3] + wx[4] - wx[1] - wx[2]) / 6 + wx[5]);
      }
    });
  }
}
