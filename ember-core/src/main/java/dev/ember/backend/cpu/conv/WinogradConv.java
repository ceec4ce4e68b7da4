package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuBackends;
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
 * <p>Every transform is per row, written once, and every GEMM reduces in a fixed order, so results do not
 * depend on the thread count.
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

  /** Most floats of one transformed operand (6 x channels x tiles), so the three buffers stay in memory bounds. */
  private static final long MAX_FLOATS = 1L << 26;

  private static final ThreadLocal<float[]> F_V = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_M = ThreadLocal.withInitial(() -> new float[0]);

  private static float[] buffer(ThreadLocal<float[]> tl, long n) {
    float[] a = tl.get();
    if (a.length < n) tl.set(a = new float[(int) n]);
    return a;
  }

  /**
   * Whether the path applies: F32, one group, a 1 x 3 kernel, stride 1, undilated, no vertical padding,
   * horizontal padding 0-2 with the output as wide as the padded input's valid positions (so the input
   * gradient is the same convolution with padding 2 - p), and at least MIN_CHANNELS input and output channels.
   */
  static boolean applies(View x, int outChannels, int groups, ConvGeometry g) {
    int c = x.shapeRef()[1];
    if (x.dtype() != DType.F32 || groups != 1 || g.kh() != 1 || g.kw() != 3 || !g.stride1() || g.ph() != 0
        || g.pw() > 2 || g.oh() != g.h() || g.ow() != g.w() + 2 * g.pw() - 2 || g.ow() < 1) {
      return false;
    }
    if (c < MIN_CHANNELS || outChannels < MIN_CHANNELS) return false;
    long rows = (long) x.shapeRef()[0] * g.h();
    long tiles = rows * Math.ceilDiv(Math.max(g.w(), g.ow()), M);
    return ALPHA * Math.max(c, outChannels) * tiles <= MAX_FLOATS;
  }

  /** Tiles of a row of {@code len} outputs. */
  private static int tiles(int len) {
    return Math.ceilDiv(len, M);
  }

  /**
   * v[xi][ch][T] (T = row * tw + t over the rows of every image) = B^T d of each tile: d_k = src(4t - pad + k),
   * zero outside the row, for planes [n, chans, rows, len].
   */
  static void inputTransform(float[] s, int so, int n, int chans, int rows, int len, int pad, int tw,
      float[] v) {
    long tt = (long) n * rows * tw;
    int cs = (int) (chans * tt);
    Parallel.forEach(Parallel.chunks((long) n * chans, Math.max(1, ConvSupport.GRAIN / Math.max(1, rows * len))),
        task -> {
          int per = Math.max(1, ConvSupport.GRAIN / Math.max(1, rows * len));
          for (int p = task * per, p1 = Math.min(n * chans, p + per); p < p1; p++) {
            int img = p / chans;
            int ch = p % chans;
            for (int r = 0; r < rows; r++) {
              ROWS.winogradInput(s, so + (p * rows + r) * len, len, pad, tw, v,
                  (int) (ch * tt) + (img * rows + r) * tw, cs);
            }
          }
        });
  }

  /** m[xi][ch][T] = A dy of each tile of 4 upstream-gradient values (zero past len), planes [n, chans, rows, len]. */
  static void gradTransform(float[] s, int so, int n, int chans, int rows, int len, int tw, float[] m) {
    long tt = (long) n * rows * tw;
    int cs = (int) (chans * tt);
    int per = Math.max(1, ConvSupport.GRAIN / Math.max(1, rows * len));
    Parallel.forEach(Parallel.chunks((long) n * chans, per), task -> {
      for (int p = task * per, p1 = Math.min(n * chans, p + per); p < p1; p++) {
        int img = p / chans;
        int ch = p % chans;
        for (int r = 0; r < rows; r++) {
          ROWS.winogradGrad(s, so + (p * rows + r) * len, len, tw, m, (int) (ch * tt) + (img * rows + r) * tw, cs);
        }
      }
    });
  }

  /** out planes [n, chans, rows, len] = A^T m of each tile plus bias[ch] (0 for null), clamped at 0 with relu. */
  static void outputTransform(float[] m, int n, int chans, int rows, int len, int tw, float[] bias,
      boolean relu, float[] out, int oo) {
    long tt = (long) n * rows * tw;
    int cs = (int) (chans * tt);
    int per = Math.max(1, ConvSupport.GRAIN / Math.max(1, rows * len));
    Parallel.forEach(Parallel.chunks((long) n * chans, per), task -> {
      for (int p = task * per, p1 = Math.min(n * chans, p + per); p < p1; p++) {
        int img = p / chans;
        int ch = p % chans;
        float b = bias == null ? 0f : bias[ch];
        for (int r = 0; r < rows; r++) {
          ROWS.winogradOutput(m, (int) (ch * tt) + (img * rows + r) * tw, cs, tw, b, relu, out,
              oo + (p * rows + r) * len, len);
        }
      }
    });
  }

  /**
   * u[xi][a][b] = (G g)[xi] for the 3 taps g of w[index(a, b) .. + 2] (reversed when {@code flip}), computed in
   * double and rounded once.
   */
  private static float[] weightTransform(float[] w, int na, int nb, boolean swap, boolean flip) {
    int ab = na * nb;
    float[] u = new float[ALPHA * ab];
    for (int a = 0; a < na; a++) {
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
    }
    return u;
  }

  /** out[xi] = a[xi] [m, k] x b[xi] [k, n] for the 6 products (b transposed: stored [n, k]). */
  static void gemm6(float[] a, int m, int k, float[] b, int n, boolean bTransposed, float[] out) {
    StridedView av = new StridedView(Storage.wrap(a), new int[] {ALPHA, m, k}, new int[] {m * k, k, 1}, 0);
    StridedView bv = new StridedView(Storage.wrap(b), new int[] {ALPHA, k, n},
        bTransposed ? new int[] {k * n, 1, k} : new int[] {k * n, n, 1}, 0);
    StridedView ov = new StridedView(Storage.wrap(out), new int[] {ALPHA, m, n}, new int[] {m * n, n, 1}, 0);
    CpuBackends.instance().matmul(av, bv, ov, false);
  }

  /** The transformed input V of x, in {@code v} (at least 6 * C * tiles floats). */
  private static void transformInput(View x, ConvGeometry g, float[] v) {
    int[] s = x.shapeRef();
    inputTransform(x.storage().floats(), x.offset(), s[0], s[1], g.h(), g.w(), g.pw(), tiles(g.ow()), v);
  }

  /** Floats of x's transformed input V. */
  static long transformedSize(View x, ConvGeometry g) {
    return (long) ALPHA * x.shapeRef()[1] * x.shapeRef()[0] * g.h() * tiles(g.ow());
  }

  /**
   * out = x convolved with w plus bias (doubles, or null), clamped at 0 with relu. V is not kept for the weight
   * gradient: a fresh array for it cost more (1.0 ms a call at conv1d's 1.6M floats, one thread) than building it
   * again in the backward pass (0.85 ms, and that on every thread).
   */
  static void forward(View x, View w, double[] bias, View out, ConvGeometry g, boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int tw = tiles(g.ow());
    int tt = n * g.h() * tw;
    float[] v = buffer(F_V, transformedSize(x, g));
    transformInput(x, g, v);
    float[] u = weightTransform(floats(w), o, c, false, false);
    float[] m = buffer(F_M, (long) ALPHA * o * tt);
    gemm6(u, o, c, v, tt, false, m);
    float[] b = null;
    if (bias != null) {
      b = new float[o];
      for (int i = 0; i < o; i++) b[i] = (float) bias[i];
    }
    outputTransform(m, n, o, g.h(), g.ow(), tw, b, relu, out.storage().floats(), out.offset());
  }

  /** dx (input gradient, or null) and dw (weight gradient, or null), both overwritten. */
  static void backward(View x, View w, View gOut, View dx, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int rows = g.h();
    float[] gs = gOut.storage().floats();
    if (dx != null) { // dx = gOut padded by 2 - p, convolved with the flipped weights, channels swapped
      int tw = tiles(g.w());
      int tt = n * rows * tw;
      float[] vd = buffer(F_V, (long) ALPHA * o * tt);
      inputTransform(gs, gOut.offset(), n, o, rows, g.ow(), 2 - g.pw(), tw, vd);
      float[] u = weightTransform(floats(w), c, o, true, true);
      float[] md = buffer(F_M, (long) ALPHA * c * tt);
      gemm6(u, c, o, vd, tt, false, md);
      outputTransform(md, n, c, rows, g.w(), tw, null, false, dx.storage().floats(), dx.offset());
    }
    if (dw != null) { // W[xi] = (A dy)[xi] [O, T] x V[xi]^T [T, C]; dg = G^T W
      int tw = tiles(g.ow());
      int tt = n * rows * tw;
      float[] v = buffer(F_V, transformedSize(x, g));
      transformInput(x, g, v);
      float[] mw = buffer(F_M, (long) ALPHA * o * tt);
      gradTransform(gs, gOut.offset(), n, o, rows, g.ow(), tw, mw);
      float[] wt = new float[ALPHA * o * c];
      gemm6(mw, o, tt, v, c, true, wt);
      float[] d = dw.storage().floats();
      int oc = o * c;
      for (int q = 0; q < oc; q++) {
        double w0 = wt[q];
        double w1 = wt[q + oc];
        double w2 = wt[q + 2 * oc];
        double w3 = wt[q + 3 * oc];
        double w4 = wt[q + 4 * oc];
        double w5 = wt[q + 5 * oc];
        int at = dw.offset() + q * 3;
        d[at] = (float) (w0 / 4 - (w1 + w2) / 6 + (w3 + w4) / 24);
        d[at + 1] = (float) ((w2 - w1) / 6 + (w3 - w4) / 12);
        d[at + 2] = (float) ((w3 + w4 - w1 - w2) / 6 + w5);
      }
    }
  }
}
