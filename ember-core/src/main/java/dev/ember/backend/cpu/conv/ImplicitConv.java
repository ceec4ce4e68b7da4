package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.ROWS;
import static dev.ember.backend.cpu.conv.ConvSupport.floats;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.DType;
import java.util.function.IntConsumer;

/**
 * Implicit GEMM for undilated stride-1 F32 one-group convolutions: the image is zero-padded once and
 * {@link RowKernels#convTile} multiplies packed weight tiles by the taps read straight from it (no column
 * matrix); the input gradient is the same pass over the padded upstream gradient with the flipped
 * weights, and the weight gradient accumulates {@link RowKernels#convWeightTile} per chunk of images.
 * Passes whose channels fill sixes better than eights take {@link RowKernels#convTile6}; groups of slots leave
 * out the taps that read only padding (a full convolution's corners); layers of at most one vector of output
 * channels take the narrow weight-gradient tiles; a forward whose rows are not whole vectors reads planes shifted
 * by each kernel column ({@link #shiftedForward}). LeNet's second layer at batch 32, one thread: forward 0.225 ->
 * 0.176 ms, input gradient 0.42 -> 0.25 ms, weight gradient 0.33 -> 0.23 ms (CPU time, load 10).
 */
final class ImplicitConv {
  private ImplicitConv() {}

  /** Most floats of padded planes (all channels of one image) the implicit path copies per task. */
  private static final long IMPLICIT_FLOATS = 1L << 21;
  private static final ThreadLocal<float[]> F_IMPLICIT_X = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_IMPLICIT_Y = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Stride 1, undilated, and the output exactly the symmetrically padded input's valid positions
   * (oh = h + 2ph - kh + 1): "same" padding with an even kernel pads one side more, which the shared
   * pitch does not express.
   */
  private static boolean unitStride(ConvGeometry g) {
    return g.stride1() && g.oh() == g.h() + 2 * g.ph() - g.kh() + 1 && g.ow() == g.w() + 2 * g.pw() - g.kw() + 1;
  }

  /**
   * Whether a stride-1 pass over planes of {@code chans} channels of h x w, zero-padded by (padH, padW),
   * producing {@code outChans} channels, runs as {@link RowKernels#convTile}: the padded planes stay within
   * IMPLICIT_FLOATS, and its slots (see {@link #slots}) compute at most 1/8 more positions than the output
   * has, or twice as many for at most 32 output channels, where the blocked GEMM's M is too small to tile
   * well. VGG's 32- and 16-wide layers compute none extra; LeNet's 10-wide second layer 44% more, and its
   * training step ran 15% faster on this path than with the blocked GEMM (3.04-3.13 -> 2.58-2.63 ms, 2
   * threads). Wider layers keep the 1/8 bound (a 7-wide map of 512 channels, 29% more, stays on the GEMM,
   * whose M then tiles well; not measured).
   */
  private static boolean implicitFits(int chans, int h, int w, int padH, int padW, int kh, int kw, int outChans) {
    long pitch = w + 2L * padW;
    long hp = h + 2L * padH;
    if (padH < 0 || padW < 0 || hp < kh || pitch < kw || chans * hp * pitch > IMPLICIT_FLOATS) return false;
    long oh = hp - kh + 1;
    long ow = pitch - kw + 1;
    long eighths = outChans <= 32 ? 16 : 9;
    return 8 * slotCount((int) oh, (int) ow, (int) pitch) * (long) ROWS.convLanes() <= eighths * oh * ow;
  }

  /** How many slots {@link #slots} gives. */
  private static int slotCount(int oh, int ow, int pitch) {
    int lanes = ROWS.convLanes();
    int run = Math.ceilDiv((oh - 1) * pitch + ow, lanes);
    int rows = oh * Math.ceilDiv(ow, lanes);
    return Math.min(run, rows);
  }

  /**
   * Slots of convLanes() positions (see {@link RowKernels#convTile}): where each reads in the padded
   * pitch, and where it writes: in the output plane itself ({@code direct}) when every row is a whole
   * number of slots, else at the same place in the pitch layout, to be copied out.
   */
  record Slots(int[] read, int[] write, boolean direct) {}

  /**
   * The slots that cover an oh x ow output whose input rows have the given pitch, in increasing order:
   * each row on its own (its last slot running into the padding columns or the next row when ow is
   * not a multiple of the lanes), or, when that takes more, one run over every position from the
   * first row's start to the last row's end, the kw - 1 padding columns of each row computed and
   * dropped. Every position a slot reads or writes in the pitch layout is below oh*pitch + convLanes().
   */
  static Slots slots(int oh, int ow, int pitch) {
    int lanes = ROWS.convLanes();
    int n = slotCount(oh, ow, pitch);
    int[] read = new int[n];
    if (n == oh * Math.ceilDiv(ow, lanes)) {
      int[] plane = new int[n];
      for (int oy = 0, i = 0; oy < oh; oy++) {
        for (int ox = 0; ox < ow; ox += lanes, i++) {
          read[i] = oy * pitch + ox;
          plane[i] = oy * ow + ox;
        }
      }
      if (ow % lanes == 0) return new Slots(read, plane, true);
    } else {
      for (int i = 0; i < n; i++) read[i] = i * lanes;
    }
    return new Slots(read, read, false);
  }

  /**
   * Undilated stride-1 F32 one-group convolutions, except 1x1 without padding (whose GEMM reads the
   * input as it is), and except first layers of at most 4 input channels with fewer than 32 filters,
   * which keep the direct kernels: LeNet's 1 -> 6 at 28 x 28 ran 2.2x slower here (its 6 filters fill a
   * quarter of the weight gradient's 32-channel tile), while a VGG's 3 -> 32 at 32 x 32 ran 1.3x faster
   * (forward and weight gradient at batch 64).
   */
  static boolean forwardApplies(View x, int outChannels, int groups, ConvGeometry g) {
    int c = x.shapeRef()[1];
    return x.dtype() == DType.F32 && groups == 1 && (c > 4 || outChannels >= 32) && !g.identity() && unitStride(g)
        && implicitFits(c, g.h(), g.w(), g.ph(), g.pw(), g.kh(), g.kw(), outChannels);
  }

  /**
   * The input gradient of such a convolution is itself one: the upstream gradient padded by
   * (kh - 1 - ph, kw - 1 - pw), convolved with the weights flipped in both taps and with input and
   * output channels swapped.
   */
  static boolean inputGradApplies(View w, int groups, ConvGeometry g) {
    return w.dtype() == DType.F32 && groups == 1 && !g.identity() && unitStride(g)
        && implicitFits(w.shapeRef()[0], g.oh(), g.ow(), g.kh() - 1 - g.ph(), g.kw() - 1 - g.pw(), g.kh(), g.kw(),
            w.shapeRef()[1]);
  }

  /** Per tap k = (c*kh + i)*kw + j, the offset c*plane + i*pitch + j of its input in the padded planes. */
  static int[] tapOffsets(int chans, int plane, int pitch, int kh, int kw) {
    int[] offs = new int[chans * kh * kw];
    for (int c = 0, k = 0; c < chans; c++) {
      for (int i = 0; i < kh; i++) {
        for (int j = 0; j < kw; j++) offs[k++] = c * plane + i * pitch + j;
      }
    }
    return offs;
  }

  /**
   * Weights in tiles of {@code tile} output channels: wp[(t*K + k)*TILE + r] = wt(t*TILE + r, k), zero for channels
   * past outC, where wt(o, k) = w[o*ostride + kbase[k]] (K = kbase.length) is the [outC, K] matrix the pass
   * multiplies by. Plain index arithmetic: an index function called per element was megamorphic across the conv
   * paths (~0.1 ms of serial time per pass at 32K weights).
   */
  static float[] packTiles(int outC, int tile, int ostride, int[] kbase, float[] w) {
    int kdim = kbase.length;
    int tiles = (outC + tile - 1) / tile;
    float[] wp = new float[tiles * kdim * tile];
    for (int o = 0; o < outC; o++) {
      int d = (o / tile) * kdim * tile + o % tile;
      int src = o * ostride;
      for (int k = 0; k < kdim; k++, d += tile) wp[d] = w[src + kbase[k]];
    }
    return wp;
  }

  /** 0, 1, ..., n-1: the taps of a [outC, K] matrix stored row-major, for {@link #packTiles}. */
  static int[] identity(int n) {
    int[] a = new int[n];
    for (int i = 0; i < n; i++) a[i] = i;
    return a;
  }

  /**
   * One image src [inC, h, w] (at srcOff) in this thread's buffer, zero-padded by (padH, padW) and
   * followed by kw + convLanes() zeros, the most {@link RowKernels#convTile} reads past the planes.
   */
  private static float[] padImage(float[] src, int srcOff, int inC, int h, int w, int padH, int padW, int kw) {
    int pitch = w + 2 * padW;
    int plane = (h + 2 * padH) * pitch;
    int xsize = inC * plane + kw + ROWS.convLanes();
    float[] xp = F_IMPLICIT_X.get();
    if (xp.length < xsize) F_IMPLICIT_X.set(xp = new float[xsize]);
    java.util.Arrays.fill(xp, 0, xsize, 0f);
    for (int c = 0; c < inC; c++) {
      for (int r = 0; r < h; r++) {
        System.arraycopy(src, srcOff + (c * h + r) * w, xp, c * plane + (r + padH) * pitch + padW, w);
      }
    }
    return xp;
  }

  /**
   * Output channels per tile for a pass producing outC channels: RowKernels.CONV_TILE6 where sixes leave fewer
   * padding channels than eights (6 or 12 channels, and fewer than 6: a first layer's input gradient), else
   * RowKernels.CONV_TILE.
   */
  static int tileFor(int outC) {
    int six = RowKernels.CONV_TILE6;
    int eight = RowKernels.CONV_TILE;
    return Math.ceilDiv(outC, six) * six < Math.ceilDiv(outC, eight) * eight ? six : eight;
  }

  /** Slots the tile kernel runs together: 3 for convTile, 4 for convTile6. */
  private static int slotsPerCall(int tile) {
    return tile == RowKernels.CONV_TILE6 ? 4 : 3;
  }

  /**
   * Consecutive slots that {@link RowKernels#convTile} runs together (three at a time, as it groups them; four for
   * convTile6) and the taps that read some of the image for at least one of them, in tap order: {@code taps[i]}
   * indexes the full tap list. A tap every slot of a group reads only in the zero padding adds exactly 0 to each of its fma chains
   * (fma(w, 0, acc) is acc, save the sign of a zero sum and a non-finite weight), so it is left out.
   */
  record Group(int[] read, int[] write, int[] taps) {}

  /** The groups of each geometry seen: computing them reads every slot of every tap (~5,600 for LeNet's conv2). */
  private static final java.util.concurrent.ConcurrentHashMap<java.util.List<Integer>, Group[]> GROUPS =
      new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * The slot groups of a pass over inC zero-padded planes, or null when no group can leave a tap out (no
   * padding, or every tap reaching the image from every group): then the pass runs the slots as one list. The
   * input gradient of a convolution without padding is one with kh - 1, kw - 1: LeNet's second layer's (6-channel
   * tiles, four one-row slots per group) reads 60 of its 70 kernel rows x output rows (the groups at the top and
   * bottom see 4 and 2 of the 5 kernel rows).
   */
  static Group[] groups(int inC, int h, int w, int padH, int padW, int kh, int kw, Slots slots, int[] offs, int per) {
    if (padH == 0 && padW == 0) return null;
    java.util.List<Integer> key = java.util.List.of(inC, h, w, padH, padW, kh, kw, per);
    Group[] found = GROUPS.get(key);
    if (found != null) return found.length == 0 ? null : found;
    int pitch = w + 2 * padW;
    int plane = (h + 2 * padH) * pitch;
    int lanes = ROWS.convLanes();
    int size = inC * plane + kw + lanes;
    int[] inside = new int[size + 1]; // inside[q]: positions below q that hold the image (not padding)
    for (int q = 0; q < size; q++) {
      int rem = q % plane;
      int r = rem / pitch;
      int col = rem % pitch;
      boolean in = q < inC * plane && r >= padH && r < padH + h && col >= padW && col < padW + w;
      inside[q + 1] = inside[q] + (in ? 1 : 0);
    }
    int[] read = slots.read();
    int n = read.length;
    Group[] out = new Group[Math.ceilDiv(n, per)];
    boolean skips = false;
    for (int s0 = 0, gi = 0; s0 < n; s0 += per, gi++) {
      int s1 = Math.min(n, s0 + per);
      int[] live = new int[offs.length];
      int kg = 0;
      for (int k = 0; k < offs.length; k++) {
        boolean any = false;
        for (int s = s0; s < s1 && !any; s++) {
          int a = offs[k] + read[s];
          any = inside[a + lanes] > inside[a];
        }
        if (any) live[kg++] = k;
      }
      skips |= kg < offs.length;
      out[gi] = new Group(java.util.Arrays.copyOfRange(read, s0, s1),
          java.util.Arrays.copyOfRange(slots.write(), s0, s1), java.util.Arrays.copyOf(live, kg));
    }
    if (GROUPS.size() > 256) GROUPS.clear(); // a process that sees this many geometries recomputes them
    GROUPS.put(key, skips ? out : new Group[0]);
    return skips ? out : null;
  }

  /**
   * What one pass multiplies: the tap offsets and packed weights of all taps, and, when {@link #groups} gives
   * groups, each group's offsets and packed weights (tile t's rows of the group's taps,
   * gWp[g][(t*kg + i)*TILE + r] = wp[(t*kdim + taps[i])*TILE + r]).
   */
  record Taps(int tile, int[] offs, float[] wp, Group[] groups, int[][] gOffs, float[][] gWp) {
    static Taps of(int tile, int[] offs, float[] wp, Group[] groups) {
      if (groups == null) return new Taps(tile, offs, wp, null, null, null);
      int kdim = offs.length;
      int tiles = wp.length / (kdim * tile);
      int[][] gOffs = new int[groups.length][];
      float[][] gWp = new float[groups.length][];
      for (int gi = 0; gi < groups.length; gi++) {
        int[] taps = groups[gi].taps();
        int kg = taps.length;
        gOffs[gi] = new int[kg];
        for (int i = 0; i < kg; i++) gOffs[gi][i] = offs[taps[i]];
        if (kg == kdim) {
          gWp[gi] = wp;
          continue;
        }
        gWp[gi] = new float[tiles * kg * tile];
        for (int t = 0; t < tiles; t++) {
          for (int i = 0; i < kg; i++) System.arraycopy(wp, (t * kdim + taps[i]) * tile, gWp[gi], (t * kg + i) * tile, tile);
        }
      }
      return new Taps(tile, offs, wp, groups, gOffs, gWp);
    }

    /**
     * Tile t over every slot, writing at the slots' plane positions ({@code direct}) or at their read positions:
     * the whole list in one call, or group by group with each group's taps. The groups run the same fma chains
     * less the taps that add 0 (see {@link Group}), so the results are those of the one call.
     */
    void tile(int t, float[] xp, float[] init, Slots slots, boolean direct, float[] y, int yo, int ldy, boolean relu) {
      if (groups == null) {
        run(offs, wp, t, xp, init, slots.read(), direct ? slots.write() : slots.read(), y, yo, ldy, relu);
        return;
      }
      for (int gi = 0; gi < groups.length; gi++) {
        Group gr = groups[gi];
        run(gOffs[gi], gWp[gi], t, xp, init, gr.read(), direct ? gr.write() : gr.read(), y, yo, ldy, relu);
      }
    }

    private void run(int[] taps, float[] packed, int t, float[] xp, float[] init, int[] read, int[] write, float[] y,
        int yo, int ldy, boolean relu) {
      int kdim = taps.length;
      if (tile == RowKernels.CONV_TILE6) {
        ROWS.convTile6(xp, taps, kdim, packed, t * kdim * tile, init, t * tile, read, write, read.length, y, yo, ldy,
            relu);
      } else {
        ROWS.convTile(xp, taps, kdim, packed, t * kdim * tile, init, t * tile, read, write, read.length, y, yo, ldy,
            relu);
      }
    }
  }

  /**
   * One image: dst [outC, hp - kh + 1, pitch - kw + 1] (at dstOff) = the convolution of src [inC, h, w]
   * (at srcOff) zero-padded by (padH, padW) with the packed weights, each chain starting from bias[o]
   * (from 0 when bias is null), clamped at 0 in the tile's stores when {@code relu}. Slots that write
   * the plane directly do so when outC fills whole tiles (a part-filled tile would write past the image's
   * channels); otherwise the tiles go to a scratch buffer in the pitch layout and the rows are copied out.
   */
  static void implicitImage(float[] src, int srcOff, int inC, int h, int w, int padH, int padW, int kh,
      int kw, Taps taps, Slots slots, int outC, float[] bias, float[] dst, int dstOff, boolean relu) {
    int pitch = w + 2 * padW;
    int hp = h + 2 * padH;
    int oh = hp - kh + 1;
    int ow = pitch - kw + 1;
    float[] xp = padImage(src, srcOff, inC, h, w, padH, padW, kw);
    int tile = taps.tile();
    int tiles = (outC + tile - 1) / tile;
    if (slots.direct() && outC % tile == 0) {
      for (int t = 0; t < tiles; t++) taps.tile(t, xp, bias, slots, true, dst, dstOff + t * tile * oh * ow, oh * ow, relu);
      return;
    }
    int ldy = oh * pitch + ROWS.convLanes();
    float[] y = F_IMPLICIT_Y.get();
    if (y.length < tiles * tile * ldy) F_IMPLICIT_Y.set(y = new float[tiles * tile * ldy]);
    for (int t = 0; t < tiles; t++) taps.tile(t, xp, bias, slots, false, y, t * tile * ldy, ldy, relu);
    for (int o = 0; o < outC; o++) {
      for (int oy = 0; oy < oh; oy++) System.arraycopy(y, o * ldy + oy * pitch, dst, dstOff + (o * oh + oy) * ow, ow);
    }
  }

  /**
   * Forward, one task per image: every image writes its own output, so no result depends on the thread count.
   * With {@code relu} the tiles store max(v, 0) (the fused ReLU epilogue).
   */
  static void forward(View x, View w, double[] bias, View out, ConvGeometry g, boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int kdim = c * g.kk();
    float[] wf = floats(w);
    int tile = tileFor(o);
    float[] wp = packTiles(o, tile, kdim, identity(kdim), wf);
    int[] offs = tapOffsets(c, (g.h() + 2 * g.ph()) * (g.w() + 2 * g.pw()), g.w() + 2 * g.pw(), g.kh(), g.kw());
    Slots slots = slots(g.oh(), g.ow(), g.w() + 2 * g.pw());
    float[] bf = null;
    if (bias != null) {
      // whole tiles: convTile reads init per tile
      bf = new float[Math.ceilDiv(o, tile) * tile];
      for (int i = 0; i < o; i++) bf[i] = (float) bias[i];
    }
    float[] b = bf;
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    if (shiftedFits(g, c, slots)) {
      shiftedForward(xs, x.offset(), c, g, tile, wp, o, b, ys, out.offset(), n, relu);
      return;
    }
    Taps taps = Taps.of(tile, offs, wp, groups(c, g.h(), g.w(), g.ph(), g.pw(), g.kh(), g.kw(), slots, offs,
        slotsPerCall(tile)));
    Parallel.forEach(n, img -> implicitImage(xs, x.offset() + img * c * g.hw(), c, g.h(), g.w(), g.ph(), g.pw(), g.kh(),
        g.kw(), taps, slots, o, b, ys, out.offset() + img * o * g.cols(), relu));
  }

  /** Most floats of shifted planes (see {@link #shiftedForward}) per image. */
  private static final long SHIFTED_FLOATS = 1L << 18;
  private static final ThreadLocal<float[]> F_SHIFTED = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Whether the forward takes the shifted planes: they need fewer slots than the padded pitch's (whose slots also
   * compute the kw - 1 padding columns of each row) and fit SHIFTED_FLOATS. LeNet's second layer (10 x 10 outputs,
   * pitch 14): 7 slots for 9; maps whose rows are whole vectors (VGG's 32 or 16 wide) gain nothing and stay.
   */
  private static boolean shiftedFits(ConvGeometry g, int c, Slots slots) {
    int cols = g.oh() * g.ow();
    long floats = (long) c * g.kw() * (g.h() + 2L * g.ph()) * g.ow();
    return g.kw() > 1 && cols >= ROWS.convLanes() && floats <= SHIFTED_FLOATS
        && Math.ceilDiv(cols, ROWS.convLanes()) < slots.read().length;
  }

  /**
   * The forward over shifted planes: per image, input channel ci and kernel column j, the plane
   * xs[(ci*kw + j)*hp*ow + r*ow + ox] = padded x[ci, r, ox + j] (hp = h + 2ph rows of the output's width), so that
   * tap (ci, i, j) of output position p = oy*ow + ox reads it at p + i*ow: the slots run over the output plane
   * itself, with no padding columns, the last one moved back to end at oh*ow (its first positions written twice,
   * the same values). The copy is kw times the padded input; each element's chain (bias, then the taps in order) is
   * the padded pass's, so the bits are the same.
   */
  private static void shiftedForward(float[] xs, int xOff, int c, ConvGeometry g, int tile, float[] wp, int o,
      float[] bias, float[] ys, int yOff, int n, boolean relu) {
    int kh = g.kh();
    int kw = g.kw();
    int ow = g.ow();
    int hp = g.h() + 2 * g.ph();
    int pitch = g.w() + 2 * g.pw();
    int planeS = hp * ow;
    int cols = g.oh() * ow;
    int lanes = ROWS.convLanes();
    int[] offs = new int[c * kh * kw];
    for (int ci = 0, k = 0; ci < c; ci++) {
      for (int i = 0; i < kh; i++) {
        for (int j = 0; j < kw; j++) offs[k++] = (ci * kw + j) * planeS + i * ow;
      }
    }
    int nslots = Math.ceilDiv(cols, lanes);
    int[] read = new int[nslots];
    for (int s = 0; s < nslots; s++) read[s] = Math.min(s * lanes, cols - lanes);
    Taps taps = Taps.of(tile, offs, wp, null);
    Slots slots = new Slots(read, read, true);
    int tiles = Math.ceilDiv(o, tile);
    Parallel.forEach(n, img -> {
      int size = c * kw * planeS;
      float[] xsh = F_SHIFTED.get();
      if (xsh.length < size) F_SHIFTED.set(xsh = new float[size]);
      float[] src = xs;
      int so = xOff + img * c * g.hw();
      int ss = g.w();
      int splane = g.hw();
      if (g.ph() != 0 || g.pw() != 0) {
        src = padImage(xs, so, c, g.h(), g.w(), g.ph(), g.pw(), kw);
        so = 0;
        ss = pitch;
        splane = hp * pitch;
      }
      for (int ci = 0; ci < c; ci++) {
        for (int j = 0; j < kw; j++) ROWS.copyRows(src, so + ci * splane + j, ss, xsh, (ci * kw + j) * planeS, ow, hp, ow);
      }
      int dst = yOff + img * o * cols;
      if (o % tile == 0) {
        for (int t = 0; t < tiles; t++) taps.tile(t, xsh, bias, slots, true, ys, dst + t * tile * cols, cols, relu);
        return;
      }
      float[] y = F_IMPLICIT_Y.get();
      if (y.length < tiles * tile * cols) F_IMPLICIT_Y.set(y = new float[tiles * tile * cols]);
      for (int t = 0; t < tiles; t++) taps.tile(t, xsh, bias, slots, true, y, t * tile * cols, cols, relu);
      System.arraycopy(y, 0, ys, dst, o * cols);
    });
  }

  /**
   * dw [O, C*kh*kw] of an implicit-path convolution without column matrices: per chunk of
   * consecutive images (at most MAX_WEIGHT_CHUNKS, fixed by the shapes) a partial [taps, channels]
   * that {@link RowKernels#convWeightTile} accumulates from each image's padded input and its
   * upstream gradient packed position by position; the partials are summed in chunk order, so dw
   * does not depend on the thread count.
   */
  static void weightGrad(View x, View gOut, View dw, ConvGeometry g) {
    WeightPass pass = weightPass(x, gOut, dw, g);
    Parallel.forEach(pass.chunks(), pass.chunk());
    pass.finish().run();
  }

  /**
   * {@link #weightGrad} as its parts: {@code chunks} tasks of {@code per} consecutive images, each run by
   * {@code chunk}, then {@code finish} (the partials summed in chunk order into dw).
   */
  record WeightPass(int chunks, int per, IntConsumer chunk, Runnable finish) {}

  private static WeightPass weightPass(View x, View gOut, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = dw.shapeRef()[0];
    int kdim = c * g.kk();
    int taps = RowKernels.WEIGHT_TAPS;
    int kpad = (kdim + taps - 1) / taps * taps;
    // at most one vector of channels (LeNet's second layer: 16 on 16 lanes): narrow tiles, where half of each wide
    // tile would be zeros (that layer's weight gradient 0.33 -> 0.23 ms, one thread)
    boolean narrow = o <= ROWS.convLanes();
    int width = narrow ? ROWS.convLanes() : ROWS.convWeightWidth();
    int otiles = (o + width - 1) / width;
    int opad = otiles * width;
    int pitch = g.w() + 2 * g.pw();
    // the taps past kdim read offset 0 and fill rows of the partial that are never summed
    int[] offs = java.util.Arrays.copyOf(tapOffsets(c, (g.h() + 2 * g.ph()) * pitch, pitch, g.kh(), g.kw()), kpad);
    int cols = g.cols();
    int per = imagesPerChunk(n, (long) kpad * opad);
    int chunks = Parallel.chunks(n, per);
    float[][] part = new float[chunks][kpad * opad];
    // rows per call: each call loads and stores its 24 accumulators, so short calls cost (one thread, 12 taps x
    // 32 channels: 64 positions per call ran 20% slower than 128; ~512, 16 rows of 32 or a 16 x 16 plane, 0-4% faster)
    int rowBlock = Math.max(1, 512 / g.ow());
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    // the tiles read only the valid positions' taps (and the taps past kdim offset 0), so an unpadded layer reads
    // the image where it is: no copy (LeNet's second layer: ~1% of its training step's samples were this copy)
    boolean unpadded = g.ph() == 0 && g.pw() == 0;
    IntConsumer chunk = t -> {
      float[] acc = part[t];
      for (int img = t * per, n1 = Math.min(n, img + per); img < n1; img++) {
        int xOff = x.offset() + img * c * g.hw();
        float[] xp = unpadded ? xs : padImage(xs, xOff, c, g.h(), g.w(), g.ph(), g.pw(), g.kw());
        int xBase = unpadded ? xOff : 0;
        float[] gp = F_IMPLICIT_Y.get();
        if (gp.length < opad * cols) F_IMPLICIT_Y.set(gp = new float[opad * cols]);
        ROWS.packPositionMajor(gs, gOut.offset() + img * o * cols, o, opad, cols, width, gp);
        for (int ot = 0; ot < otiles; ot++) {
          for (int oy = 0; oy < g.oh(); oy += rowBlock) {
            int rows = Math.min(rowBlock, g.oh() - oy);
            int gpo = (ot * cols + oy * g.ow()) * width;
            for (int k0 = 0; k0 < kpad; k0 += taps) {
              if (narrow) {
                ROWS.convWeightTileNarrow(xp, xBase + oy * pitch, offs, k0, pitch, rows, g.ow(), gp, gpo, acc,
                    k0 * opad + ot * width, opad);
              } else {
                ROWS.convWeightTile(xp, xBase + oy * pitch, offs, k0, pitch, rows, g.ow(), gp, gpo, acc,
                    k0 * opad + ot * width, opad);
              }
            }
          }
        }
      }
    };
    Runnable finish = () -> {
      float[] d = dw.storage().floats();
      for (int oc = 0; oc < o; oc++) {
        for (int k = 0; k < kdim; k++) {
          float sum = part[0][k * opad + oc];
          for (int t = 1; t < chunks; t++) sum += part[t][k * opad + oc];
          d[dw.offset() + oc * kdim + k] = sum;
        }
      }
    };
    return new WeightPass(chunks, per, chunk, finish);
  }

  /**
   * Both gradients in one forEach, so that the backward hands work to the pool and waits for it once instead of
   * twice: each weight-gradient chunk followed by the input gradients of its images (chunks + n tasks; LeNet's
   * second layer at batch 32: 8 + 32). Every task is one the separate passes run, so dx and dw keep their bits.
   */
  static void backward(View x, View w, View gOut, View dx, View dw, ConvGeometry g) {
    int n = x.shapeRef()[0];
    IntConsumer image = inputGradPass(w, gOut, dx, g);
    WeightPass pass = weightPass(x, gOut, dw, g);
    int per = pass.per();
    Parallel.forEach(pass.chunks() + n, t -> {
      int chunk = t / (per + 1);
      int r = t % (per + 1);
      if (r == 0) {
        pass.chunk().accept(chunk);
      } else {
        image.accept(chunk * per + r - 1);
      }
    });
    pass.finish().run();
  }

  /** dx of every image from its upstream gradient (see {@link #inputGradApplies}), one task per image. */
  static void inputGrad(View w, View gOut, View dx, ConvGeometry g) {
    Parallel.forEach(gOut.shapeRef()[0], inputGradPass(w, gOut, dx, g));
  }

  /** {@link #inputGrad}'s task: dx of image {@code img}. */
  private static IntConsumer inputGradPass(View w, View gOut, View dx, ConvGeometry g) {
    int o = w.shapeRef()[0];
    int c = w.shapeRef()[1];
    int kh = g.kh();
    int kw = g.kw();
    int kk = g.kk();
    int kdim = o * kk;
    int padH = kh - 1 - g.ph();
    int padW = kw - 1 - g.pw();
    float[] wf = floats(w);
    // row ci of the flipped weights, tap (oc, i, j): w[oc, ci, kh-1-i, kw-1-j]
    int tile = tileFor(c);
    int[] kbase = new int[kdim]; // element (ci, k = (oc, t)) is w[(oc*c + ci)*kk + kk-1-t] = w[ci*kk + kbase[k]]
    for (int k = 0; k < kdim; k++) kbase[k] = (k / kk) * c * kk + (kk - 1 - k % kk);
    float[] wp = packTiles(c, tile, kk, kbase, wf);
    int pitch = g.ow() + 2 * padW;
    int[] offs = tapOffsets(o, (g.oh() + 2 * padH) * pitch, pitch, kh, kw);
    Slots slots = slots(g.h(), g.w(), pitch);
    float[] gs = gOut.storage().floats();
    float[] ds = dx.storage().floats();
    Taps taps = Taps.of(tile, offs, wp, groups(o, g.oh(), g.ow(), padH, padW, kh, kw, slots, offs, slotsPerCall(tile)));
    return img -> implicitImage(gs, gOut.offset() + img * o * g.cols(), o, g.oh(), g.ow(), padH, padW, kh, kw, taps,
        slots, c, null, ds, dx.offset() + img * c * g.hw(), false);
  }
}
