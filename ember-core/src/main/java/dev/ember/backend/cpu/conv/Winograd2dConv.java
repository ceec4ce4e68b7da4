package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;
import static dev.ember.backend.cpu.conv.WinogradConv.ALPHA;
import static dev.ember.backend.cpu.conv.WinogradConv.F_M;
import static dev.ember.backend.cpu.conv.WinogradConv.F_V;
import static dev.ember.backend.cpu.conv.WinogradConv.M;
import static dev.ember.backend.cpu.conv.WinogradConv.buffer;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.DType;

/**
 * Winograd F(4x4, 3x3) for F32 one-group 3 x 3 stride-1 convolutions (VGG's layers): each output plane is cut into
 * 4 x 4 tiles; a tile's 6 x 6 inputs d become V = B^T d B, the 9 weights g of each (output, input) channel pair
 * U = G g G^T (in double, rounded once), and the 36 products of each tile are 36 matrix products {@code M[p] = U[p] x
 * V[p]} over the tiles (p = 6*eta + xi, eta down, xi across), whose results A^T M A are the tile's 16 outputs: 36
 * multiplications per 16 outputs instead of 144. The input gradient is the same pass over the upstream gradient
 * (padded by 2 - p, weights flipped in both taps and their channels swapped); the weight gradient is G^T [sum over tiles of
 * (A e A^T) x (B^T d B)] G, e the upstream-gradient tiles ({@link #weightGrad}). Exact in real arithmetic; in float the 2-d transforms (entries up to 8 x 8
 * and 1/576) round differently from the direct sum (Winograd2dConvTest bounds it against a float64 oracle).
 *
 * <p>The transforms reuse the row kernels of the 1-d F(4, 3) ({@link WinogradConv}): a zero-padded channel plane
 * of pitch 4 (tw + 1) (tw tiles across and one more, whose results are dropped) is first transformed down its
 * columns ({@code winogradColumns}, 6 rows of 4 tile rows' worth at a time, unit stride along the row), then its
 * tile rows, laid end to end, are one long row for {@code winogradInput}: tile t of tile row r starts at
 * {@code r * pitch + 4t}, every 4 floats, so the row kernel's vector groups span tile rows however narrow the
 * plane (VGG's 56 wide has 14 tiles, fewer than one AVX-512 group). The output goes back the same way
 * ({@code winogradColumnsOut}, then {@code winogradOutput} over the long row with the bias and ReLU) and its rows
 * are copied out. The dropped tile costs 1/(tw + 1) of the products.
 *
 * <p>The 36 products run on the implicit GEMM's register tiles ({@link RowKernels#convTile}, 8 output channels by
 * 3 vectors of tiles, the transformed weights packed once per call); the backend's GEMM, packing both operands on
 * each of the 36 small calls per block, ran at 0.8-0.9x the implicit GEMM where convTile runs 1.3-1.8x.
 *
 * <p>One task per image (or per group of small images, see imagesPerTask); within it, blocks of tile rows whose
 * transformed operands (36 x (channels in + out) x tiles) fit blockFloats, so they stay in the core's L2 between
 * the transform, the 36 products and the inverse transform. Each task writes only its own images' outputs, and
 * every tile's results are the same bits in any block or group: results do not depend on the thread count.
 */
final class Winograd2dConv {
  private Winograd2dConv() {}

  /** Transform points of a tile, ALPHA x ALPHA. */
  private static final int POINTS = ALPHA * ALPHA;

  /**
   * Channels below which the transforms cost more than the GEMM multiplications they save (the GEMMs run over
   * [O, C] x [C, tiles]).
   */
  private static final int MIN_CHANNELS = 32;

  /**
   * Output width below which the dropped tile of each tile row (1 / (tw + 1) of the products: a third at 7 wide)
   * costs more than Winograd saves. Measured against the implicit GEMM, forward plus input gradient, 2 threads on a
   * busy host (load 11-15, so +-15%): 56 wide with 64 channels 1.25-1.59x, with 32 channels 1.50-1.64x; 28 wide with
   * 128 channels 1.07-1.49x; 32 wide with 32 channels 1.06-1.09x; 16 wide with 32-64 channels (8 images per task)
   * 1.06-1.19x.
   */
  private static final int MIN_WIDTH = 16;

  /** Floats of a block's transformed operands V and M together (1 MiB: within a core's L2); tests lower it. */
  static long blockFloats = 1L << 18;

  private static final ThreadLocal<float[]> F_COLUMNS = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Whether the path applies: F32, one group, a 3 x 3 kernel, stride 1, undilated, padding 0-2 on each axis with
   * the output exactly the padded input's valid positions (so the input gradient is the same convolution with
   * padding 2 - p), and at least MIN_CHANNELS input and output channels.
   */
  static boolean applies(View x, int outChannels, int groups, ConvGeometry g) {
    int c = x.shapeRef()[1];
    return x.dtype() == DType.F32 && groups == 1 && g.kh() == 3 && g.kw() == 3 && g.stride1() && g.ph() <= 2
        && g.pw() <= 2 && g.oh() == g.h() + 2 * g.ph() - 2 && g.ow() == g.w() + 2 * g.pw() - 2 && g.oh() >= 1
        && g.ow() >= 1 && c >= MIN_CHANNELS && outChannels >= MIN_CHANNELS && g.ow() >= MIN_WIDTH;
  }

  /**
   * Channels (input and output) from which the weight gradient takes {@link #weightGrad}. Measured against the
   * implicit GEMM's, one thread, CPU time, busy host: VGG's 64 -> 64 at 56 x 56, batch 8, 1.29x; a convnet's 64 -> 64
   * at 16 x 16, batch 64, 1.07x; but 32 -> 64 at 16 x 16 0.91x and 32 -> 32 at 32 x 32 0.99x.
   */
  private static final int MIN_WEIGHT_CHANNELS = 64;

  /** Whether the weight gradient takes {@link #weightGrad}: where {@link #applies} holds, with 64 channels or more. */
  static boolean weightGradApplies(View x, int outChannels, int groups, ConvGeometry g) {
    return applies(x, outChannels, groups, g) && x.shapeRef()[1] >= MIN_WEIGHT_CHANNELS
        && outChannels >= MIN_WEIGHT_CHANNELS;
  }

  /**
   * The transformed weights in {@link RowKernels#convTile}'s tiles, point by point: wp[((p*tiles + t)*inC + c)*TILE +
   * r] = (G g G^T)[p] of the 3 x 3 taps g of output channel o = t*TILE + r and input channel c, read at w[(o*inC +
   * c)*9] (at w[(c*outC + o)*9] when {@code swap}, rotated by 180 degrees when {@code flip}), zero for channels past
   * outC. G g G^T is G applied down the taps' columns, then along the rows ({@link #transformTaps}), in double,
   * rounded once. One task per output channel (each writes its own entries).
   */
  private static float[] packedWeights(float[] w, int outC, int inC, boolean swap, boolean flip) {
    int tile = RowKernels.CONV_TILE;
    int tiles = Math.ceilDiv(outC, tile);
    float[] wp = new float[POINTS * tiles * inC * tile];
    int perPoint = tiles * inC * tile;
    Parallel.forEach(outC, o -> {
      double[] g = new double[9];
      double[] t = new double[ALPHA * 3];
      double[] u = new double[ALPHA];
      float[] mine = new float[POINTS * inC]; // [p][c]: written out point by point below
      for (int c = 0; c < inC; c++) {
        int at = (swap ? c * outC + o : o * inC + c) * 9;
        for (int k = 0; k < 9; k++) g[k] = w[at + (flip ? 8 - k : k)];
        for (int j = 0; j < 3; j++) transformTaps(g[j], g[3 + j], g[6 + j], t, j, 3);
        for (int eta = 0; eta < ALPHA; eta++) {
          transformTaps(t[eta * 3], t[eta * 3 + 1], t[eta * 3 + 2], u, 0, 1);
          for (int xi = 0; xi < ALPHA; xi++) mine[(eta * ALPHA + xi) * inC + c] = (float) u[xi];
        }
      }
      // one point at a time: the 36 points' rows lie perPoint floats apart (16 KiB at 64 x 64), and writing them
      // interleaved hit the same L1 sets (64 x 64, one thread: 0.69 ms per call with the quotients and interleaved
      // writes, 0.43 ms now, of which the writes 0.1 ms; busy host)
      int at0 = (o / tile * inC) * tile + o % tile;
      for (int p = 0; p < POINTS; p++) {
        for (int c = 0; c < inC; c++) wp[p * perPoint + at0 + c * tile] = mine[p * inC + c];
      }
    });
    return wp;
  }

  private static final double SIXTH = 1.0 / 6;
  private static final double TWENTY_FOURTH = 1.0 / 24;

  /**
   * out[at + xi*stride] = (G g)[xi] for the 3 taps g0, g1, g2 (the rows of G, as WinogradConv's weights), with
   * products by 1/6 and 1/24 rather than quotients (far below the float rounding that follows).
   */
  private static void transformTaps(double g0, double g1, double g2, double[] out, int at, int stride) {
    double a = g0 + g2;
    double b = g0 + 4 * g2;
    out[at] = g0 * 0.25;
    out[at + stride] = -(a + g1) * SIXTH;
    out[at + 2 * stride] = -(a - g1) * SIXTH;
    out[at + 3 * stride] = (b + 2 * g1) * TWENTY_FOURTH;
    out[at + 4 * stride] = (b - 2 * g1) * TWENTY_FOURTH;
    out[at + 5 * stride] = g2;
  }

  /** Tile rows per block: the block's V and M within blockFloats, at least one. */
  private static int rowsPerBlock(int inC, int outC, int tw, int th) {
    long perRow = (long) POINTS * (inC + outC) * (tw + 1);
    return (int) Math.max(1, Math.min(th, blockFloats / perRow));
  }

  /**
   * v[p][ch][T] (rows ld apart) = B^T d B of the tiles of tile rows ty0 .. ty0 + nb of {@code count} images' planes
   * [inC, h, w] (the first at so, the next imgStride on), zero-padded by (padH, padW): T = ((img * nb) + ty - ty0) *
   * (tw + 1) + t, every image's tile rows end to end; col holds 6 * count * nb * 4 (tw + 1) floats.
   */
  private static void inputBlock(float[] s, int so, int imgStride, int count, int inC, int h, int w, int padH,
      int padW, int ty0, int nb, int tw, int ld, float[] v, float[] col) {
    int pitch = M * (tw + 1);
    int len = count * nb * pitch;
    int tt = count * nb * (tw + 1);
    for (int ch = 0; ch < inC; ch++) {
      for (int img = 0; img < count; img++) {
        float[] xp = ConvSupport.paddedPlanes(s, so + img * imgStride + ch * h * w, 1, h, w, padH - M * ty0, padW,
            M * nb + 2, pitch, 0);
        for (int ty = 0; ty < nb; ty++) {
          ROWS.winogradColumns(xp, ty * M * pitch, pitch, pitch, col, (img * nb + ty) * pitch, len);
        }
      }
      for (int eta = 0; eta < ALPHA; eta++) {
        ROWS.winogradInput(col, eta * len, len, 0, tt, v, (eta * ALPHA * inC + ch) * ld, inC * ld);
      }
    }
  }

  /**
   * Images per task: planes of at most a block's tile rows go {@code count} at a time (their tile rows end to end,
   * within blockFloats, at most n / 8 so that 8 tasks remain), which fills the slots that one small image (16 x 16:
   * 20 tiles in 32 positions) leaves part empty. Fixed by the shapes; every tile's results are the same bits in any
   * grouping.
   */
  private static int imagesPerTask(int n, int inC, int outC, int tw, int th) {
    int tile = RowKernels.CONV_TILE;
    int rb = rowsPerBlock(inC, Math.ceilDiv(outC, tile) * tile, tw, Integer.MAX_VALUE);
    return Math.max(1, Math.min(rb / th, n / 8));
  }

  /**
   * {@code count} images' convolution: src planes [inC, h, w] (the first at so, then every srcStride), zero-padded
   * by (padH, padW), against the transformed weights wp (see {@link #packedWeights}), into dst planes [outC, oh, ow]
   * (at dO, then every dstStride), plus bias (0 for null), relu-clamped. The 36 products of a block are
   * {@link RowKernels#convTile} over V (its rows ld apart, ld the block's tiles rounded up to whole slots; the
   * columns past the tiles are computed and dropped). Several images go in one block of whole planes; one image
   * in blocks of tile rows.
   */
  private static void images(float[] s, int so, int srcStride, int count, int inC, int h, int w, int padH, int padW,
      float[] wp, int outC, int oh, int ow, float[] bias, boolean relu, float[] d, int dO, int dstStride) {
    int tw = Math.ceilDiv(ow, M);
    int th = Math.ceilDiv(oh, M);
    int pitch = M * (tw + 1);
    int tile = RowKernels.CONV_TILE;
    int otiles = Math.ceilDiv(outC, tile);
    int opad = otiles * tile;
    int lanes = ROWS.convLanes();
    int rb = count > 1 ? th : rowsPerBlock(inC, opad, tw, th);
    for (int ty0 = 0; ty0 < th; ty0 += rb) {
      int nb = Math.min(rb, th - ty0);
      int rows = count * nb; // tile rows of the block, end to end
      int tt = rows * (tw + 1); // the block's tiles, the dropped one of each tile row included
      int len = rows * pitch; // = M * tt
      int nslots = Math.ceilDiv(tt, lanes);
      int ld = nslots * lanes;
      float[] v = buffer(F_V, (long) POINTS * inC * ld);
      float[] col = buffer(F_COLUMNS, (long) (ALPHA + 4) * len);
      inputBlock(s, so, srcStride, count, inC, h, w, padH, padW, ty0, nb, tw, ld, v, col);
      float[] m = buffer(F_M, (long) POINTS * opad * ld);
      int[] slots = new int[nslots];
      for (int q = 0; q < nslots; q++) slots[q] = q * lanes;
      int[] offs = new int[inC];
      for (int p = 0; p < POINTS; p++) {
        for (int c = 0; c < inC; c++) offs[c] = (p * inC + c) * ld;
        for (int t = 0; t < otiles; t++) {
          ROWS.convTile(v, offs, inC, wp, (p * otiles + t) * inC * tile, null, 0, slots, slots, nslots, m,
              (p * opad + t * tile) * ld, ld, false);
        }
      }
      // per output channel: r[i][xi][T] = (A^T down the columns), then each row i across into y[i] (len floats)
      int y = ALPHA * len;
      for (int k = 0; k < outC; k++) {
        for (int xi = 0; xi < ALPHA; xi++) {
          ROWS.winogradColumnsOut(m, (xi * opad + k) * ld, ALPHA * opad * ld, tt, col, xi * tt, ALPHA * tt);
        }
        float b = bias == null ? 0f : bias[k];
        for (int i = 0; i < M; i++) ROWS.winogradOutput(col, i * ALPHA * tt, tt, tt, b, relu, col, y + i * len, len);
        for (int img = 0; img < count; img++) {
          for (int ty = 0; ty < nb; ty++) {
            for (int i = 0; i < M; i++) {
              int oy = M * (ty0 + ty) + i;
              if (oy < oh) {
                System.arraycopy(col, y + i * len + (img * nb + ty) * pitch, d, dO + img * dstStride + (k * oh + oy) * ow,
                    ow);
              }
            }
          }
        }
      }
    }
  }

  /**
   * src images [n, inC, h, w] at so, padded by (padH, padW), convolved with wp into dst [n, outC, oh, ow] at dO:
   * one task per image or group of images (see {@link #imagesPerTask}).
   */
  private static void run(float[] s, int so, int n, int inC, int h, int w, int padH, int padW, float[] wp, int outC,
      int oh, int ow, float[] bias, boolean relu, float[] d, int dO) {
    int per = imagesPerTask(n, inC, outC, Math.ceilDiv(ow, M), Math.ceilDiv(oh, M));
    int srcStride = inC * h * w;
    int dstStride = outC * oh * ow;
    Parallel.forEach(Parallel.chunks(n, per), t -> {
      int i0 = t * per;
      images(s, so + i0 * srcStride, srcStride, Math.min(per, n - i0), inC, h, w, padH, padW, wp, outC, oh, ow, bias,
          relu, d, dO + i0 * dstStride, dstStride);
    });
  }

  /** out = x convolved with w plus bias (doubles, or null), clamped at 0 with relu: one task per image. */
  static void forward(View x, View w, double[] bias, View out, ConvGeometry g, boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    float[] u = packedWeights(floats(w), o, c, false, false);
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    run(xs, x.offset(), n, c, g.h(), g.w(), g.ph(), g.pw(), u, o, g.oh(), g.ow(), WinogradConv.floatBias(bias, o), relu,
        ys, out.offset());
  }

  /** dx (overwritten) = gOut padded by 2 - p, convolved with the rotated weights, channels swapped. */
  static void inputGrad(View w, View gOut, View dx, ConvGeometry g) {
    int n = gOut.shapeRef()[0];
    int o = w.shapeRef()[0];
    int c = w.shapeRef()[1];
    float[] u = packedWeights(floats(w), c, o, true, true);
    float[] gs = gOut.storage().floats();
    float[] ds = dx.storage().floats();
    run(gs, gOut.offset(), n, o, g.oh(), g.ow(), 2 - g.ph(), 2 - g.pw(), u, c, g.h(), g.w(), null, false, ds,
        dx.offset());
  }

  /**
   * m[p][ch][T] (rows tt apart, p = 6*eta + xi) = A e A^T of the 4 x 4 upstream-gradient tiles e of {@code count}
   * images' planes [chans, oh, ow] (the first at so, the next imgStride on; zero past the plane), the tiles laid
   * out as {@link #inputBlock}'s with nb = th: T = (img * th + ty) * (tw + 1) + t, the last tile of each tile row
   * all zeros; col holds 6 * count * th * 4 (tw + 1) floats.
   */
  private static void gradBlock(float[] s, int so, int imgStride, int count, int chans, int oh, int ow, int th,
      int tw, float[] m, float[] col) {
    int pitch = M * (tw + 1);
    int len = count * th * pitch;
    int tt = count * th * (tw + 1);
    for (int ch = 0; ch < chans; ch++) {
      for (int img = 0; img < count; img++) {
        float[] yp = ConvSupport.paddedPlanes(s, so + img * imgStride + ch * oh * ow, 1, oh, ow, 0, 0, M * th, pitch,
            0);
        for (int ty = 0; ty < th; ty++) {
          ROWS.winogradColumnsGrad(yp, ty * M * pitch, pitch, pitch, col, (img * th + ty) * pitch, len);
        }
      }
      for (int eta = 0; eta < ALPHA; eta++) {
        ROWS.winogradGrad(col, eta * len, len, tt, m, (eta * ALPHA * chans + ch) * tt, chans * tt);
      }
    }
  }

  /**
   * out[at + i*stride] = (G^T w)[i] for i &lt; 3, w the 6 values at w[wo + xi*ws] (the 1-d back-transform of
   * WinogradConv's weight gradient), in double.
   */
  private static void backTaps(double[] w, int wo, int ws, double[] out, int at, int stride) {
    double w0 = w[wo];
    double w1 = w[wo + ws];
    double w2 = w[wo + 2 * ws];
    double w3 = w[wo + 3 * ws];
    double w4 = w[wo + 4 * ws];
    double w5 = w[wo + 5 * ws];
    out[at] = w0 * 0.25 - (w1 + w2) * SIXTH + (w3 + w4) * TWENTY_FOURTH;
    out[at + stride] = (w2 - w1) * SIXTH + (w3 - w4) * (2 * TWENTY_FOURTH);
    out[at + 2 * stride] = (w3 + w4 - w1 - w2) * SIXTH + w5;
  }

  private static final ThreadLocal<float[]> F_PACKED = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_PARTIALS = ThreadLocal.withInitial(() -> new float[0]);

  /** Tiles below which the weight gradient takes several images per group (see {@link #weightGrad}). */
  private static final int MIN_POSITIONS = 256;

  /**
   * Most chunks of images (each its own partial, 36 x channels x channels floats: 0.66 MB at 64 x 64) of the weight
   * gradient, fixed by the shapes: fewer partials, less memory to zero, fill and add. VGG 64 -> 64 at 56 x 56, batch
   * 8, one thread, wall time, load 3: 8 chunks 11.6 ms, 4 10.5 ms, 2 9.9 ms (the implicit GEMM's weight gradient
   * 15.3 ms); 4 keeps four tasks for larger hosts.
   */
  private static final int MAX_CHUNKS = 4;

  /**
   * dw (overwritten) of the convolution of x, from gOut, in the transformed domain: per image, V = B^T d B of the
   * input tiles (as the forward) and E = A e A^T of the upstream-gradient tiles, then the 36 products W[p] (+)= E[p]
   * [O, tiles] x V[p]^T [tiles, C] on the implicit GEMM's weight-gradient tiles ({@link RowKernels#convWeightTile}:
   * V[p]'s channel rows as its taps, E[p] packed position-major as its upstream gradient, one row of tiles as its
   * positions), into one partial per chunk of images (a number fixed by the shapes); the partials are added in chunk
   * order and each (output, input) channel pair's 6 x 6 sums go back to its 3 x 3 taps as G^T W G, in double,
   * rounded once. Small images go several to a group (their tiles end to end, the group size fixed by the shapes).
   * 36 multiplications per 16 positions and tap set instead of 144 (the backend's GEMM, packing both
   * operands on each of the 36 calls per image, ran no faster than the implicit GEMM's 144). The result does not
   * depend on the thread count (nor on blockFloats: whole images).
   */
  static void weightGrad(View x, View gOut, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = dw.shapeRef()[0];
    int tw = Math.ceilDiv(g.ow(), M);
    int th = Math.ceilDiv(g.oh(), M);
    int taps = RowKernels.WEIGHT_TAPS;
    int kpad = Math.ceilDiv(c, taps) * taps;
    int width = ROWS.convWeightWidth();
    int otiles = Math.ceilDiv(o, width);
    int opad = otiles * width;
    int pointFloats = kpad * opad; // a point's partial [kpad][opad]: rows past c are never read
    int per = Math.max(imagesPerChunk(n, (long) POINTS * pointFloats), Math.ceilDiv(n, MAX_CHUNKS));
    int chunks = Parallel.chunks(n, per);
    int partFloats = POINTS * pointFloats;
    // images per group, their tiles end to end as the products' positions: each convWeightTile call loads and stores
    // its accumulators, so a 16 x 16 image's 20 tiles alone would cost as much in those as in products
    int group = Math.max(1, Math.min(per, MIN_POSITIONS / (th * (tw + 1))));
    // one slice per chunk, each point's part zeroed by its task just before its first products (in cache): a reused
    // buffer, since fresh arrays of this size (5 MiB at VGG's 64 x 64, batch 8) cost their page faults on every call
    // (3 of 15 ms per call, one thread, busy host)
    float[] part = buffer(F_PARTIALS, (long) chunks * partFloats);
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    Parallel.forEach(chunks, t -> {
      int[] offs = new int[kpad];
      for (int img = t * per, n0 = img, n1 = Math.min(n, img + per); img < n1; img += group) {
        int count = Math.min(group, n1 - img);
        int tt = count * th * (tw + 1);
        float[] col = buffer(F_COLUMNS, (long) ALPHA * M * tt);
        float[] v = buffer(F_V, (long) POINTS * c * tt);
        inputBlock(xs, x.offset() + img * c * g.hw(), c * g.hw(), count, c, g.h(), g.w(), g.ph(), g.pw(), 0, th, tw,
            tt, v, col);
        float[] m = buffer(F_M, (long) POINTS * o * tt);
        gradBlock(gs, gOut.offset() + img * o * g.cols(), o * g.cols(), count, o, g.oh(), g.ow(), th, tw, m, col);
        float[] gp = buffer(F_PACKED, (long) opad * tt);
        for (int p = 0; p < POINTS; p++) {
          ROWS.packPositionMajor(m, p * o * tt, o, opad, tt, gp);
          for (int ch = 0; ch < c; ch++) offs[ch] = (p * c + ch) * tt;
          int at = t * partFloats + p * pointFloats;
          if (img == n0) java.util.Arrays.fill(part, at, at + pointFloats, 0f);
          for (int ot = 0; ot < otiles; ot++) {
            for (int k0 = 0; k0 < kpad; k0 += taps) {
              ROWS.convWeightTile(v, 0, offs, k0, tt, 1, tt, gp, ot * tt * width, part,
                  at + k0 * opad + ot * width, opad);
            }
          }
        }
      }
    });
    // the partials added in chunk order, element by element (unit stride), into the first
    Parallel.forEach(POINTS, p -> { // point by point (unit stride): each element's sum in chunk order
      for (int t = 1; t < chunks; t++) {
        for (int i = p * pointFloats, j = t * partFloats + i, i1 = i + pointFloats; i < i1; i++, j++) part[i] += part[j];
      }
    });
    float[] d = dw.storage().floats();
    Parallel.forEach(o, k -> {
      double[] wq = new double[POINTS];
      double[] r = new double[ALPHA * 3];
      double[] tap = new double[9];
      for (int ch = 0; ch < c; ch++) {
        for (int p = 0; p < POINTS; p++) wq[p] = part[p * pointFloats + ch * opad + k];
        for (int eta = 0; eta < ALPHA; eta++) backTaps(wq, eta * ALPHA, 1, r, eta * 3, 1); // r[eta][j]
        for (int j = 0; j < 3; j++) backTaps(r, j, 3, tap, j, 3); // tap[i][j]
        int at = dw.offset() + (k * c + ch) * 9;
        for (int k9 = 0; k9 < 9; k9++) d[at + k9] = (float) tap[k9];
      }
    });
  }
}
