package dev.ember.nn.functional;

import dev.ember.backend.cpu.RowKernels;
import dev.ember.backend.cpu.Rows;

import dev.ember.backend.Backend;
import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;

/**
 * Convolution kernels lowered to the backend's GEMM. For one image and one group, im2col copies
 * the receptive fields into a [Cg*kh*kw, oh*ow] column matrix (in a per-thread scratch buffer), so
 * the forward is one GEMM {@code W_g [Og, Cg*kk] x col}; the backward is {@code dW_g += g x col^T}
 * and {@code dcol = W_g^T x g} followed by col2im (a scatter-add back onto the image). The
 * transposed operands are strided views that GEMM reads by packing, never materialised. A 1x1,
 * stride-1, unpadded convolution uses the image itself as its column matrix. The transposed
 * convolution runs the same pieces the other way round. Depthwise convolution (one input channel
 * per group) has a direct kernel: its per-group GEMMs would have a single row.
 *
 * <p>Threads and determinism: the forward and the input gradient split work by image (each task
 * owns its output rows); the weight gradient splits the batch into a number of chunks fixed by the
 * shapes, each summing its images into its own partial, and the partials are added in chunk order.
 * Inside one task, im2col/col2im and GEMM run inline; with a single image they use the pool
 * themselves. So results are bitwise the same on any thread count. Tensors are contiguous, F32 or F64.
 */
final class ConvKernels {
  private ConvKernels() {}

  /**
   * The geometry of a convolution between an image [h, w] and its column grid [oh, ow]:
   * {@code iy = oy * sh - ph + i * dh}, {@code ix = ox * sw - pw + j * dw} for kernel offset (i, j);
   * positions outside the image read zero. {@code ph, pw} are the top and left padding (the bottom
   * and right ones are implied by oh, ow).
   */
  record Geom(int h, int w, int kh, int kw, int sh, int sw, int ph, int pw, int dh, int dw, int oh, int ow) {
    int hw() {
      return h * w;
    }

    int cols() {
      return oh * ow;
    }

    int kk() {
      return kh * kw;
    }

    /** Stride 1 and no dilation in both dimensions. */
    boolean stride1() {
      return sh == 1 && sw == 1 && dh == 1 && dw == 1;
    }

    /** The column matrix of a channel is the channel itself. */
    boolean identity() {
      return kh == 1 && kw == 1 && sh == 1 && sw == 1 && ph == 0 && pw == 0 && oh == h && ow == w;
    }

    /** First ox whose input column for kernel column j lies in the image. */
    int xLo(int j) {
      int off = j * dw - pw;
      return off >= 0 ? 0 : Math.min(ow, (-off + sw - 1) / sw);
    }

    /** One past the last such ox (at least xLo(j)). */
    int xHi(int j) {
      int off = j * dw - pw;
      int hi = off > w - 1 ? 0 : Math.min(ow, (w - 1 - off) / sw + 1);
      return Math.max(hi, xLo(j));
    }
  }

  /** Elements of work below which a task is not worth a hand-off (fixed, so chunking depends on shapes only). */
  private static final int GRAIN = 1 << 14;
  /** Budget in elements for the weight-gradient partials of all batch chunks together. */
  private static final long PARTIAL_BUDGET = 1L << 23;
  private static final int MAX_WEIGHT_CHUNKS = 8;

  private static final ThreadLocal<float[]> F_SCRATCH = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<double[]> D_SCRATCH = ThreadLocal.withInitial(() -> new double[0]);

  /** This thread's scratch buffer of at least n elements (contents undefined). */
  static Storage scratch(DType dt, int n) {
    if (dt == DType.F32) {
      float[] a = F_SCRATCH.get();
      if (a.length < n) F_SCRATCH.set(a = new float[n]);
      return Storage.wrap(a);
    }
    double[] a = D_SCRATCH.get();
    if (a.length < n) D_SCRATCH.set(a = new double[n]);
    return Storage.wrap(a);
  }

  // ================================================================== im2col, col2im, GEMM

  /** dst[d + (c*kk + i*kw + j) * cols + oy*ow + ox] = image(c, iy, ix), 0 outside. */
  static void im2col(Storage src, int so, int channels, Geom g, Storage dst, int d) {
    int kk = g.kk();
    int cols = g.cols();
    int per = Math.max(1, GRAIN / Math.max(1, kk * cols));
    boolean f32 = src.dtype() == DType.F32;
    Parallel.forEach(Parallel.chunks(channels, per), t -> {
      for (int c = t * per, c1 = Math.min(channels, c + per); c < c1; c++) {
        if (f32) {
          ConvLoops.im2col(src.floats(), so + c * g.hw(), g, dst.floats(), d + c * kk * cols);
          continue;
        }
        for (int i = 0; i < g.kh; i++) {
          for (int j = 0; j < g.kw; j++) {
            int row = d + (c * kk + i * g.kw + j) * cols;
            int xl = g.xLo(j);
            int xh = g.xHi(j);
            int ix = so + c * g.hw() + j * g.dw - g.pw + xl * g.sw;
            for (int oy = 0; oy < g.oh; oy++) {
              int iy = oy * g.sh - g.ph + i * g.dh;
              int r = row + oy * g.ow;
              if (iy < 0 || iy >= g.h) {
                Rows.zero(dst, r, r + g.ow);
              } else {
                Rows.zero(dst, r, r + xl);
                Rows.gather(src, ix + iy * g.w, g.sw, dst, r + xl, xh - xl);
                Rows.zero(dst, r + xh, r + g.ow);
              }
            }
          }
        }
      }
    });
  }

  /** image(c, iy, ix) += col[...] for every column entry that lies in the image (the adjoint of im2col). */
  static void col2im(Storage col, int d, int channels, Geom g, Storage dst, int so) {
    int kk = g.kk();
    int cols = g.cols();
    int per = Math.max(1, GRAIN / Math.max(1, kk * cols));
    boolean f32 = col.dtype() == DType.F32;
    Parallel.forEach(Parallel.chunks(channels, per), t -> {
      for (int c = t * per, c1 = Math.min(channels, c + per); c < c1; c++) {
        if (f32) {
          ConvLoops.col2im(col.floats(), d + c * kk * cols, g, dst.floats(), so + c * g.hw());
          continue;
        }
        for (int i = 0; i < g.kh; i++) {
          for (int j = 0; j < g.kw; j++) {
            int row = d + (c * kk + i * g.kw + j) * cols;
            int xl = g.xLo(j);
            int xh = g.xHi(j);
            int ix = so + c * g.hw() + j * g.dw - g.pw + xl * g.sw;
            for (int oy = 0; oy < g.oh; oy++) {
              int iy = oy * g.sh - g.ph + i * g.dh;
              if (iy >= 0 && iy < g.h) Rows.scatterAdd(col, row + oy * g.ow + xl, dst, ix + iy * g.w, g.sw, xh - xl);
            }
          }
        }
      }
    });
  }

  /**
   * C[m, n] (+)= op(A)[m, k] op(B)[k, n] on the backend's GEMM. A transposed operand is stored as
   * the row-major transpose with leading dimension lda (ldb); GEMM packs it, no copy is made.
   */
  static void gemm(Storage a, int ao, int m, int k, int lda, boolean ta, Storage b, int bo, int n, int ldb,
      boolean tb, Storage c, int co, int ldc, boolean accumulate) {
    Backend be = Device.CPU.backend();
    Tensor at = new Tensor(a, new int[] {1, m, k}, ta ? new int[] {m * k, 1, lda} : new int[] {m * k, lda, 1}, ao);
    Tensor bt = new Tensor(b, new int[] {1, k, n}, tb ? new int[] {k * n, 1, ldb} : new int[] {k * n, ldb, 1}, bo);
    Tensor ct = new Tensor(c, new int[] {1, m, n}, new int[] {m * n, ldc, 1}, co);
    be.matmul(at, bt, ct, accumulate);
  }

  // ================================================================== convolution

  /**
   * The column matrices of a blocked forward pass, one per block of images, kept for the weight
   * gradient so that the backward pass does not build them again (see {@link #KEEP_BUDGET}).
   */
  static final class SavedColumns {
    private float[][] blocks;
  }

  /**
   * out [N, O, oh, ow] of x [N, C, h, w] with w [O, C/groups, kh, kw] and bias [O] (as doubles, or
   * null), keeping the blocked path's column matrices in {@code keep} (when not null and they fit
   * the budget) for {@link #convBackward}.
   */
  static Tensor convForward(Tensor x, Tensor w, double[] bias, int groups, Geom g, SavedColumns keep) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    int og = o / groups;
    int rows = cg * g.kk();
    int cols = g.cols();
    // Every path below writes each output element (bias or product, never adds to what is there):
    // no zero-fill of a pooled array (ConvolutionTest checks it with NaN-filled pool arrays).
    Tensor out = Tensor.uninitialized(x.dtype(), n, o, g.oh, g.ow);
    if (out.numel() == 0) return out;
    if (groups == c && cg == 1 && groups > 1) {
      depthwiseForward(x, w, bias, out, o / c, g);
      return out;
    }
    boolean direct = g.identity();
    if (implicitForwardApplies(x, o, groups, g)) {
      implicitForward(x, w, bias, out, g);
      return out;
    }
    if (directSmall(x, groups, g)) {
      directForward(x, w, bias, out, g);
      return out;
    }
    if (blocked(x, groups, g)) {
      blockedForward(x, w, bias, out, g, keep);
      return out;
    }
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage os = out.storage();
    Parallel.forEach(n, img -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int gi = 0; gi < groups; gi++) {
        int co = (img * o + gi * og) * cols;
        if (bias != null) for (int r = 0; r < og; r++) Rows.fill(os, co + r * cols, co + (r + 1) * cols, bias[gi * og + r]);
        int xo = x.offset() + (img * c + gi * cg) * g.hw();
        Storage bs = xs;
        int bo = xo;
        if (!direct) {
          im2col(xs, xo, cg, g, col, 0);
          bs = col;
          bo = 0;
        }
        gemm(ws, w.offset() + gi * og * rows, og, rows, rows, false, bs, bo, cols, cols, false, os, co, cols,
            bias != null);
      }
    });
    return out;
  }

  /**
   * {dx, dw} (each null when not needed) of a convolution, from the upstream gradient gOut [N, O, oh, ow],
   * reusing the forward's saved columns when {@code saved} holds them.
   */
  static Tensor[] convBackward(Tensor x, Tensor w, Tensor gOut, int groups, Geom g, boolean needX, boolean needW,
      SavedColumns saved) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    int og = o / groups;
    Tensor dx = needX ? Tensor.empty(x.dtype(), x.shapeRef()) : null;
    Tensor dw = needW ? Tensor.empty(w.dtype(), w.shapeRef()) : null;
    if (gOut.numel() == 0) return new Tensor[] {dx, dw};
    if (groups == c && cg == 1 && groups > 1) {
      depthwiseBackward(x, w, gOut, dx, dw, o / c, g);
      return new Tensor[] {dx, dw};
    }
    // the implicit passes first (they also take first layers the direct kernels would), then whatever is left
    boolean implicitX = needX && implicitBackwardApplies(w, groups, g);
    boolean implicitW = needW && implicitForwardApplies(x, o, groups, g);
    if (implicitX) implicitBackwardData(w, gOut, dx, g);
    if (implicitW) implicitWeightGrad(x, gOut, dw, g);
    Tensor restX = implicitX ? null : dx;
    Tensor restW = implicitW ? null : dw;
    if (restX == null && restW == null) return new Tensor[] {dx, dw};
    if (!needX && directSmall(x, groups, g)) {
      directWeightGrad(x, gOut, dw, g);
      return new Tensor[] {dx, dw};
    }
    if (blocked(x, groups, g)) { // always so when a pass went implicit: the rest never reaches the per-image GEMMs
      blockedBackward(x, w, gOut, restX, restW, g, saved == null ? null : saved.blocks);
      return new Tensor[] {dx, dw};
    }
    int rows = cg * g.kk();
    int cols = g.cols();
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage gs = gOut.storage();
    int per = imagesPerChunk(n, w.numel());
    int chunks = Parallel.chunks(n, per);
    Storage[] part = partials(dw, chunks);
    Parallel.forEach(chunks, t -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int img = t * per, n1 = Math.min(n, img + per), n0 = img; img < n1; img++) {
        for (int gi = 0; gi < groups; gi++) {
          int go = gOut.offset() + (img * o + gi * og) * cols;
          int xo = x.offset() + (img * c + gi * cg) * g.hw();
          int wo = w.offset() + gi * og * rows;
          if (needW) { // dW_g [og, rows] (+)= g_g [og, cols] x col^T [cols, rows]
            Storage bs = xs;
            int bo = xo;
            if (!direct) {
              im2col(xs, xo, cg, g, col, 0);
              bs = col;
              bo = 0;
            }
            gemm(gs, go, og, cols, cols, false, bs, bo, rows, cols, true, part[t], gi * og * rows, rows, img != n0);
          }
          if (needX) { // dcol [rows, cols] = W_g^T [rows, og] x g_g [og, cols]
            int dxo = (img * c + gi * cg) * g.hw();
            if (direct) {
              gemm(ws, wo, rows, og, rows, true, gs, go, cols, cols, false, dx.storage(), dxo, cols, false);
            } else {
              gemm(ws, wo, rows, og, rows, true, gs, go, cols, cols, false, col, 0, cols, false);
              col2im(col, 0, cg, g, dx.storage(), dxo);
            }
          }
        }
      }
    });
    if (needW) sumPartials(part, (int) dw.numel());
    return new Tensor[] {dx, dw};
  }

  // ================================================================== direct (few input channels)

  private static final RowKernels ROWS = RowKernels.F32;
  /** Images per task of the direct kernels (fixed, so the weight-gradient partials do not depend on threads). */
  private static final int DIRECT_IMAGES = 8;
  private static final ThreadLocal<float[]> F_PADDED = ThreadLocal.withInitial(() -> new float[0]);
  /** An output gradient in the padded input's pitch, for the direct weight gradient. */
  private static final ThreadLocal<float[]> F_GRAD_PITCH = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Whether the direct kernels apply: F32, one group, stride 1, undilated, output rows no wider
   * than the kernel's two vectors and at most 4 input channels (a first layer on grey or RGB
   * images). There the column matrix would be the input copied kh*kw times and GEMM's M (the
   * output channels) is too small to tile well; the direct loops read the padded image instead.
   */
  private static boolean directSmall(Tensor x, int groups, Geom g) {
    return x.dtype() == DType.F32 && groups == 1 && x.shapeRef()[1] <= 4 && g.stride1() && g.ow <= ROWS.directWidth();
  }

  /**
   * Image img of x copied into this thread's zero-padded buffer: cin planes of ph = oh + kh - 1
   * rows of pw = directWidth() + kw - 1 floats, the image at (top, left) = (ph, pw) padding.
   */
  private static float[] padded(float[] xs, int xOff, int cin, Geom g, int img, int ph, int pw) {
    return padded(xs, xOff, cin, g, img, ph, pw, 0);
  }

  /** {@link #padded(float[], int, int, Geom, int, int, int)} followed by {@code extra} zeros. */
  private static float[] padded(float[] xs, int xOff, int cin, Geom g, int img, int ph, int pw, int extra) {
    return paddedPlanes(xs, xOff + img * cin * g.hw(), cin, g.h, g.w, g.ph, g.pw, ph, pw, extra);
  }

  private static void directForward(Tensor x, Tensor w, double[] bias, Tensor out, Geom g) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int ph = g.oh + g.kh - 1;
    int pw = ROWS.directWidth() + g.kw - 1;
    int cols = g.cols();
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    float[] wf = w.contiguous().toFloatArray();
    int taps = cin * g.kk();
    Parallel.forEach(Parallel.chunks(n, DIRECT_IMAGES), t -> {
      for (int img = t * DIRECT_IMAGES, n1 = Math.min(n, img + DIRECT_IMAGES); img < n1; img++) {
        float[] xp = padded(xs, x.offset(), cin, g, img, ph, pw);
        for (int oc = 0; oc < o; oc++) {
          ROWS.convPlane(xp, 0, pw, ph * pw, cin, g.kh, g.kw, wf, oc * taps, bias == null ? 0f : (float) bias[oc], ys,
              (img * o + oc) * cols, g.oh, g.ow);
        }
      }
    });
  }

  /**
   * The weight gradient of the direct path as blocks of {@link RowKernels#convWeightTaps}: per image,
   * the input zero-padded to pitch ow + kw - 1 (so tap (ci, i, j) of position p reads
   * xp[ci*plane + i*pitch + j + p]) and the output gradient copied into the same pitch with zeros
   * past ow; output channels in blocks of 6 (a zero plane fills the last), taps in blocks of 4 (extra
   * taps read tap 0 and are dropped). Each task of DIRECT_IMAGES images keeps its own slots, summed
   * in task order at the end, so the result does not depend on the thread count.
   */
  private static void directWeightGrad(Tensor x, Tensor gOut, Tensor dw, Geom g) {
    if (dw == null) return;
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int o = gOut.shapeRef()[1];
    int lanes = ROWS.convLanes();
    int rows = g.oh + g.kh - 1;
    int pitch = g.ow + g.kw - 1;
    int positions = (g.oh * pitch + lanes - 1) / lanes * lanes; // whole vectors over the oh rows
    int cols = g.cols();
    int taps = cin * g.kk();
    int tapsPad = (taps + RowKernels.TAPS_TAPS - 1) / RowKernels.TAPS_TAPS * RowKernels.TAPS_TAPS;
    int chans = (o + RowKernels.TAPS_CHANNELS - 1) / RowKernels.TAPS_CHANNELS * RowKernels.TAPS_CHANNELS;
    int[] xOff = new int[tapsPad];
    for (int ci = 0, t = 0; ci < cin; ci++) {
      for (int i = 0; i < g.kh; i++) {
        for (int j = 0; j < g.kw; j++) xOff[t++] = ci * rows * pitch + i * pitch + j;
      }
    }
    int[] gOff = new int[chans];
    for (int k = 0; k < chans; k++) gOff[k] = Math.min(k, o) * positions; // plane o is all zeros
    // the furthest read: the last tap's offset plus the last vector, past the padded planes by at most this
    int extra = positions - g.oh * pitch + g.kw;
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    int go = gOut.offset();
    int chunks = Parallel.chunks(n, DIRECT_IMAGES);
    float[][] part = new float[chunks][chans * tapsPad * lanes];
    Parallel.forEach(chunks, t -> {
      float[] gp = F_GRAD_PITCH.get();
      int gSize = (o + 1) * positions;
      if (gp.length < gSize) F_GRAD_PITCH.set(gp = new float[gSize]);
      java.util.Arrays.fill(gp, 0, gSize, 0f);
      for (int img = t * DIRECT_IMAGES, n1 = Math.min(n, img + DIRECT_IMAGES); img < n1; img++) {
        float[] xp = padded(xs, x.offset(), cin, g, img, rows, pitch, extra);
        for (int oc = 0; oc < o; oc++) {
          for (int oy = 0; oy < g.oh; oy++) {
            System.arraycopy(gs, go + (img * o + oc) * cols + oy * g.ow, gp, oc * positions + oy * pitch, g.ow);
          }
        }
        for (int k0 = 0; k0 < chans; k0 += RowKernels.TAPS_CHANNELS) {
          for (int t0 = 0; t0 < tapsPad; t0 += RowKernels.TAPS_TAPS) {
            ROWS.convWeightTaps(gp, gOff, k0, xp, xOff, t0, positions, part[t], (k0 * tapsPad + t0) * lanes, tapsPad);
          }
        }
      }
    });
    float[] d = dw.storage().floats();
    for (int oc = 0; oc < o; oc++) { // each task's slots summed in slot order, then the tasks in order
      for (int tap = 0; tap < taps; tap++) {
        int at = (oc * tapsPad + tap) * lanes;
        float s = RowKernels.sumSlots(part[0], at, lanes);
        for (int t = 1; t < chunks; t++) s += RowKernels.sumSlots(part[t], at, lanes);
        d[dw.offset() + oc * taps + tap] = s;
      }
    }
  }

  // ================================================================== implicit GEMM (F32, one group, stride 1)

  /** Most floats of padded planes (all channels of one image) the implicit path copies per task. */
  private static final long IMPLICIT_FLOATS = 1L << 21;
  private static final ThreadLocal<float[]> F_IMPLICIT_X = ThreadLocal.withInitial(() -> new float[0]);
  private static final ThreadLocal<float[]> F_IMPLICIT_Y = ThreadLocal.withInitial(() -> new float[0]);

  /**
   * Stride 1, undilated, and the output exactly the symmetrically padded input's valid positions
   * (oh = h + 2ph - kh + 1): "same" padding with an even kernel pads one side more, which the shared
   * pitch does not express.
   */
  private static boolean unitStride(Geom g) {
    return g.stride1() && g.oh == g.h + 2 * g.ph - g.kh + 1 && g.ow == g.w + 2 * g.pw - g.kw + 1;
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
  private static Slots slots(int oh, int ow, int pitch) {
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
  private static boolean implicitForwardApplies(Tensor x, int outChannels, int groups, Geom g) {
    int c = x.shapeRef()[1];
    return x.dtype() == DType.F32 && groups == 1 && (c > 4 || outChannels >= 32) && !g.identity() && unitStride(g)
        && implicitFits(c, g.h, g.w, g.ph, g.pw, g.kh, g.kw, outChannels);
  }

  /**
   * The input gradient of such a convolution is itself one: the upstream gradient padded by
   * (kh - 1 - ph, kw - 1 - pw), convolved with the weights flipped in both taps and with input and
   * output channels swapped.
   */
  private static boolean implicitBackwardApplies(Tensor w, int groups, Geom g) {
    return w.dtype() == DType.F32 && groups == 1 && !g.identity() && unitStride(g)
        && implicitFits(w.shapeRef()[0], g.oh, g.ow, g.kh - 1 - g.ph, g.kw - 1 - g.pw, g.kh, g.kw, w.shapeRef()[1]);
  }

  /** Per tap k = (c*kh + i)*kw + j, the offset c*plane + i*pitch + j of its input in the padded planes. */
  private static int[] tapOffsets(int chans, int plane, int pitch, int kh, int kw) {
    int[] offs = new int[chans * kh * kw];
    for (int c = 0, k = 0; c < chans; c++) {
      for (int i = 0; i < kh; i++) {
        for (int j = 0; j < kw; j++) offs[k++] = c * plane + i * pitch + j;
      }
    }
    return offs;
  }

  /**
   * Weights in tiles of RowKernels.CONV_TILE output channels: wp[(t*K + k)*TILE + r] = wt(t*TILE + r, k),
   * zero for channels past outC, where wt(o, k) reads the [outC, K] matrix the pass multiplies by.
   */
  private static float[] packTiles(int outC, int kdim, java.util.function.IntBinaryOperator index, float[] w) {
    int tile = RowKernels.CONV_TILE;
    int tiles = (outC + tile - 1) / tile;
    float[] wp = new float[tiles * kdim * tile];
    for (int o = 0; o < outC; o++) {
      int t = o / tile;
      int r = o % tile;
      for (int k = 0; k < kdim; k++) wp[(t * kdim + k) * tile + r] = w[index.applyAsInt(o, k)];
    }
    return wp;
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
      for (int r = 0; r < h; r++) System.arraycopy(src, srcOff + (c * h + r) * w, xp, c * plane + (r + padH) * pitch + padW, w);
    }
    return xp;
  }

  /**
   * One image: dst [outC, hp - kh + 1, pitch - kw + 1] (at dstOff) = the convolution of src [inC, h, w]
   * (at srcOff) zero-padded by (padH, padW) with the packed weights, each chain starting from bias[o]
   * (from 0 when bias is null). Slots that write the plane directly do so when outC fills whole tiles
   * (a part-filled tile would write past the image's channels); otherwise the tiles go to a scratch
   * buffer in the pitch layout and the rows are copied out.
   */
  private static void implicitImage(float[] src, int srcOff, int inC, int h, int w, int padH, int padW, int kh,
      int kw, float[] wp, int[] offs, Slots slots, int outC, float[] bias, float[] dst, int dstOff) {
    int pitch = w + 2 * padW;
    int hp = h + 2 * padH;
    int oh = hp - kh + 1;
    int ow = pitch - kw + 1;
    float[] xp = padImage(src, srcOff, inC, h, w, padH, padW, kw);
    int tile = RowKernels.CONV_TILE;
    int tiles = (outC + tile - 1) / tile;
    int kdim = offs.length;
    int n = slots.read().length;
    if (slots.direct() && outC % tile == 0) {
      for (int t = 0; t < tiles; t++) {
        ROWS.convTile(xp, offs, kdim, wp, t * kdim * tile, bias, t * tile, slots.read(), slots.write(), n, dst,
            dstOff + t * tile * oh * ow, oh * ow);
      }
      return;
    }
    int ldy = oh * pitch + ROWS.convLanes();
    float[] y = F_IMPLICIT_Y.get();
    if (y.length < tiles * tile * ldy) F_IMPLICIT_Y.set(y = new float[tiles * tile * ldy]);
    for (int t = 0; t < tiles; t++) {
      ROWS.convTile(xp, offs, kdim, wp, t * kdim * tile, bias, t * tile, slots.read(), slots.read(), n, y,
          t * tile * ldy, ldy);
    }
    for (int o = 0; o < outC; o++) {
      for (int oy = 0; oy < oh; oy++) System.arraycopy(y, o * ldy + oy * pitch, dst, dstOff + (o * oh + oy) * ow, ow);
    }
  }

  /** Forward, one task per image: every image writes its own output, so no result depends on the thread count. */
  private static void implicitForward(Tensor x, Tensor w, double[] bias, Tensor out, Geom g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int kdim = c * g.kk();
    float[] wf = w.contiguous().toFloatArray();
    float[] wp = packTiles(o, kdim, (oc, k) -> oc * kdim + k, wf);
    int[] offs = tapOffsets(c, (g.h + 2 * g.ph) * (g.w + 2 * g.pw), g.w + 2 * g.pw, g.kh, g.kw);
    Slots slots = slots(g.oh, g.ow, g.w + 2 * g.pw);
    float[] bf = null;
    if (bias != null) {
      bf = new float[Math.ceilDiv(o, RowKernels.CONV_TILE) * RowKernels.CONV_TILE]; // whole tiles: convTile reads init per tile
      for (int i = 0; i < o; i++) bf[i] = (float) bias[i];
    }
    float[] b = bf;
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    Parallel.forEach(n, img -> implicitImage(xs, x.offset() + img * c * g.hw(), c, g.h, g.w, g.ph, g.pw, g.kh, g.kw,
        wp, offs, slots, o, b, ys, out.offset() + img * o * g.cols()));
  }

  /**
   * dw [O, C*kh*kw] of an implicit-path convolution without column matrices: per chunk of
   * consecutive images (at most MAX_WEIGHT_CHUNKS, fixed by the shapes) a partial [taps, channels]
   * that {@link RowKernels#convWeightTile} accumulates from each image's padded input and its
   * upstream gradient packed position by position; the partials are summed in chunk order, so dw
   * does not depend on the thread count.
   */
  private static void implicitWeightGrad(Tensor x, Tensor gOut, Tensor dw, Geom g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = dw.shapeRef()[0];
    int kdim = c * g.kk();
    int taps = RowKernels.WEIGHT_TAPS;
    int kpad = (kdim + taps - 1) / taps * taps;
    int width = ROWS.convWeightWidth();
    int otiles = (o + width - 1) / width;
    int opad = otiles * width;
    int pitch = g.w + 2 * g.pw;
    // the taps past kdim read offset 0 and fill rows of the partial that are never summed
    int[] offs = java.util.Arrays.copyOf(tapOffsets(c, (g.h + 2 * g.ph) * pitch, pitch, g.kh, g.kw), kpad);
    int cols = g.cols();
    int per = imagesPerChunk(n, (long) kpad * opad);
    int chunks = Parallel.chunks(n, per);
    float[][] part = new float[chunks][kpad * opad];
    // rows per call: each call loads and stores its 24 accumulators, so short calls cost (one thread, 12 taps x
    // 32 channels: 64 positions per call ran 20% slower than 128; ~512, 16 rows of 32 or a 16 x 16 plane, 0-4% faster)
    int rowBlock = Math.max(1, 512 / g.ow);
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    Parallel.forEach(chunks, t -> {
      float[] acc = part[t];
      for (int img = t * per, n1 = Math.min(n, img + per); img < n1; img++) {
        float[] xp = padImage(xs, x.offset() + img * c * g.hw(), c, g.h, g.w, g.ph, g.pw, g.kw);
        float[] gp = F_IMPLICIT_Y.get();
        if (gp.length < opad * cols) F_IMPLICIT_Y.set(gp = new float[opad * cols]);
        ROWS.packPositionMajor(gs, gOut.offset() + img * o * cols, o, opad, cols, gp);
        for (int ot = 0; ot < otiles; ot++) {
          for (int oy = 0; oy < g.oh; oy += rowBlock) {
            int rows = Math.min(rowBlock, g.oh - oy);
            int gpo = (ot * cols + oy * g.ow) * width;
            for (int k0 = 0; k0 < kpad; k0 += taps) {
              ROWS.convWeightTile(xp, oy * pitch, offs, k0, pitch, rows, g.ow, gp, gpo, acc, k0 * opad + ot * width, opad);
            }
          }
        }
      }
    });
    float[] d = dw.storage().floats();
    for (int oc = 0; oc < o; oc++) {
      for (int k = 0; k < kdim; k++) {
        float sum = part[0][k * opad + oc];
        for (int t = 1; t < chunks; t++) sum += part[t][k * opad + oc];
        d[dw.offset() + oc * kdim + k] = sum;
      }
    }
  }

  /** dx of every image from its upstream gradient (see {@link #implicitBackwardApplies}), one task per image. */
  private static void implicitBackwardData(Tensor w, Tensor gOut, Tensor dx, Geom g) {
    int n = gOut.shapeRef()[0];
    int o = w.shapeRef()[0];
    int c = w.shapeRef()[1];
    int kh = g.kh;
    int kw = g.kw;
    int kk = g.kk();
    int kdim = o * kk;
    int padH = kh - 1 - g.ph;
    int padW = kw - 1 - g.pw;
    float[] wf = w.contiguous().toFloatArray();
    // row ci of the flipped weights, tap (oc, i, j): w[oc, ci, kh-1-i, kw-1-j]
    float[] wp = packTiles(c, kdim, (ci, k) -> {
      int oc = k / kk;
      int t = k % kk;
      return (oc * c + ci) * kk + (kk - 1 - t);
    }, wf);
    int pitch = g.ow + 2 * padW;
    int[] offs = tapOffsets(o, (g.oh + 2 * padH) * pitch, pitch, kh, kw);
    Slots slots = slots(g.h, g.w, pitch);
    float[] gs = gOut.storage().floats();
    float[] ds = dx.storage().floats();
    Parallel.forEach(n, img -> implicitImage(gs, gOut.offset() + img * o * g.cols(), o, g.oh, g.ow, padH, padW, kh, kw,
        wp, offs, slots, c, null, ds, dx.offset() + img * c * g.hw()));
  }

  // ================================================================== blocks of images (F32, one group)

  /**
   * Most floats of column matrices (all blocks together) a forward pass keeps for its backward
   * pass: 16 MiB, so LeNet's second convolution at batch 128 (150 x 12,800) keeps them, a VGG
   * layer (288 x 65,536 at batch 64) builds them again. Building them twice was 8% of a LeNet epoch.
   */
  static final long KEEP_BUDGET = 1L << 22;

  /** Floats of column matrix per block of images: the block (and its GEMM operand) stays in L2. */
  private static final int BLOCK_FLOATS = 1 << 17;
  private static final ThreadLocal<float[]> F_SCRATCH2 = ThreadLocal.withInitial(() -> new float[0]);

  /** A second per-thread scratch buffer (the block's output or gradient rows), of at least n floats. */
  private static float[] scratch2(int n) {
    float[] a = F_SCRATCH2.get();
    if (a.length < n) F_SCRATCH2.set(a = new float[n]);
    return a;
  }

  /**
   * Whether the F32 one-group path over blocks of images applies: with a column matrix of one
   * image as narrow as a small feature map (LeNet's [150, 100]), per-image GEMMs run mostly in
   * packing and edge tiles; a block of images side by side gives GEMM a wide N.
   */
  private static boolean blocked(Tensor x, int groups, Geom g) {
    return x.dtype() == DType.F32 && groups == 1 && !g.identity();
  }

  /** Images per block: the block's column matrix [C*kk, B*oh*ow] fits in BLOCK_FLOATS (at least one image). */
  private static int imagesPerBlock(int n, int rows, int cols) {
    return Math.max(1, Math.min(n, BLOCK_FLOATS / Math.max(1, rows * cols)));
  }

  /**
   * The column matrix of images [i0, i0 + nb) side by side: col[(c*kk + t) * ld + b*cols + p] for
   * image i0 + b, with ld = nb * cols.
   */
  private static void blockIm2col(float[] xs, int xOff, int c, Geom g, int i0, int nb, float[] col) {
    int cols = g.cols();
    int kk = g.kk();
    int ld = nb * cols;
    for (int b = 0; b < nb; b++) {
      for (int ch = 0; ch < c; ch++) {
        ConvLoops.im2col(xs, xOff + ((i0 + b) * c + ch) * g.hw(), g, col, ch * kk * ld + b * cols, ld);
      }
    }
  }

  /**
   * Forward over blocks of images: per block, im2col of its images side by side, one GEMM
   * W [O, C*kk] x col [C*kk, B*cols], then the rows are copied to out with the bias added. Blocks
   * are fixed by the shapes and each writes only its own images, so results do not depend on the
   * thread count.
   */
  private static void blockedForward(Tensor x, Tensor w, double[] bias, Tensor out, Geom g, SavedColumns keep) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int rows = c * g.kk();
    int cols = g.cols();
    int per = imagesPerBlock(n, rows, cols);
    float[][] kept = keep != null && (long) rows * n * cols <= KEEP_BUDGET ? new float[Parallel.chunks(n, per)][] : null;
    if (keep != null) keep.blocks = kept;
    float[] xs = x.storage().floats();
    float[] ys = out.storage().floats();
    float[] bf = new float[o];
    if (bias != null) for (int i = 0; i < o; i++) bf[i] = (float) bias[i];
    Storage ws = w.storage();
    Parallel.forEach(Parallel.chunks(n, per), t -> {
      int i0 = t * per;
      int nb = Math.min(n, i0 + per) - i0;
      int ld = nb * cols;
      Storage col = kept != null ? Storage.wrap(kept[t] = new float[rows * ld]) : scratch(DType.F32, rows * ld);
      float[] blk = scratch2(o * ld);
      blockIm2col(xs, x.offset(), c, g, i0, nb, col.floats());
      gemm(ws, w.offset(), o, rows, rows, false, col, 0, ld, ld, false, Storage.wrap(blk), 0, ld, false);
      for (int b = 0; b < nb; b++) {
        for (int oc = 0; oc < o; oc++) {
          int src = oc * ld + b * cols;
          int dst = ((i0 + b) * o + oc) * cols;
          float bv = bf[oc];
          for (int p = 0; p < cols; p++) ys[dst + p] = blk[src + p] + bv;
        }
      }
    });
  }

  /**
   * Backward over the same blocks: the block's upstream gradient rows are gathered side by side
   * (gb [O, B*cols]); gb x col^T adds to the weight-gradient partial of the block's chunk (consecutive
   * blocks, at most MAX_WEIGHT_CHUNKS chunks: one partial per image at batch 64 was 21% of a VGG step's
   * allocation), and dcol = W^T x gb is scattered back by col2im. Chunks are fixed by the shapes and
   * their partials summed in chunk order, so dW does not depend on the thread count.
   */
  private static void blockedBackward(Tensor x, Tensor w, Tensor gOut, Tensor dx, Tensor dw, Geom g,
      float[][] kept) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int rows = c * g.kk();
    int cols = g.cols();
    int per = imagesPerBlock(n, rows, cols);
    int blocks = Parallel.chunks(n, per);
    // consecutive blocks share a weight-gradient partial: at most MAX_WEIGHT_CHUNKS of them, fixed by the shapes
    int perChunk = imagesPerChunk(blocks, dw == null ? 0 : dw.numel());
    int chunks = Parallel.chunks(blocks, perChunk);
    float[] xs = x.storage().floats();
    float[] gs = gOut.storage().floats();
    int go = gOut.offset();
    Storage ws = w.storage();
    Storage[] part = partials(dw, chunks);
    Parallel.forEach(chunks, ch -> {
      for (int t = ch * perChunk, t1 = Math.min(blocks, t + perChunk); t < t1; t++) {
        int i0 = t * per;
        int nb = Math.min(n, i0 + per) - i0;
        int ld = nb * cols;
        Storage col = scratch(DType.F32, rows * ld);
        float[] gb = scratch2(o * ld);
        for (int b = 0; b < nb; b++) {
          for (int oc = 0; oc < o; oc++) {
            System.arraycopy(gs, go + ((i0 + b) * o + oc) * cols, gb, oc * ld + b * cols, cols);
          }
        }
        Storage gbs = Storage.wrap(gb);
        if (dw != null) { // dW [O, rows] (+)= gb [O, ld] x col^T [ld, rows]
          Storage cw = col;
          if (kept != null) cw = Storage.wrap(kept[t]);
          else blockIm2col(xs, x.offset(), c, g, i0, nb, col.floats());
          gemm(gbs, 0, o, ld, ld, false, cw, 0, rows, ld, true, part[ch], 0, rows, t != ch * perChunk);
        }
        if (dx != null) { // dcol [rows, ld] = W^T [rows, O] x gb [O, ld], then col2im per image
          gemm(ws, w.offset(), rows, o, rows, true, gbs, 0, ld, ld, false, col, 0, ld, false);
          float[] dxs = dx.storage().floats();
          float[] cs = col.floats();
          for (int b = 0; b < nb; b++) {
            for (int chn = 0; chn < c; chn++) {
              ConvLoops.col2im(cs, chn * g.kk() * ld + b * cols, g, dxs, ((i0 + b) * c + chn) * g.hw(), ld);
            }
          }
        }
      }
    });
    if (dw != null) sumPartials(part, (int) dw.numel());
  }

  // ================================================================== transposed convolution

  /**
   * out [N, O, g.h, g.w] of the transposed convolution of x [N, Cin, g.oh, g.ow] with
   * w [Cin, O/groups, kh, kw]: per image and group, col = W_g^T x, then col2im onto the output.
   */
  static Tensor convTransposeForward(Tensor x, Tensor w, double[] bias, int groups, Geom g) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int og = w.shapeRef()[1];
    int o = og * groups;
    int cig = cin / groups;
    int rows = og * g.kk();
    int cols = g.cols();
    Tensor out = Tensor.empty(x.dtype(), n, o, g.h, g.w);
    if (out.numel() == 0) return out;
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage os = out.storage();
    Parallel.forEach(n, img -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int gi = 0; gi < groups; gi++) {
        int xo = x.offset() + (img * cin + gi * cig) * cols;
        int wo = w.offset() + gi * cig * rows;
        int oo = (img * o + gi * og) * g.hw();
        if (direct) {
          gemm(ws, wo, rows, cig, rows, true, xs, xo, cols, cols, false, os, oo, cols, false);
        } else {
          gemm(ws, wo, rows, cig, rows, true, xs, xo, cols, cols, false, col, 0, cols, false);
          col2im(col, 0, og, g, os, oo);
        }
        if (bias != null) {
          for (int r = 0; r < og; r++) {
            Rows.add(os, oo + r * g.hw(), oo + (r + 1) * g.hw(), bias[gi * og + r]);
          }
        }
      }
    });
    return out;
  }

  /** {dx, dw} of a transposed convolution: im2col of the upstream gradient, then one GEMM for each. */
  static Tensor[] convTransposeBackward(Tensor x, Tensor w, Tensor gOut, int groups, Geom g, boolean needX,
      boolean needW) {
    int n = x.shapeRef()[0];
    int cin = x.shapeRef()[1];
    int og = w.shapeRef()[1];
    int o = og * groups;
    int cig = cin / groups;
    int rows = og * g.kk();
    int cols = g.cols();
    Tensor dx = needX ? Tensor.empty(x.dtype(), x.shapeRef()) : null;
    Tensor dw = needW ? Tensor.empty(w.dtype(), w.shapeRef()) : null;
    if (gOut.numel() == 0 || x.numel() == 0) return new Tensor[] {dx, dw};
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage gs = gOut.storage();
    int per = imagesPerChunk(n, w.numel());
    int chunks = Parallel.chunks(n, per);
    Storage[] part = partials(dw, chunks);
    Parallel.forEach(chunks, t -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int img = t * per, n1 = Math.min(n, img + per), n0 = img; img < n1; img++) {
        for (int gi = 0; gi < groups; gi++) {
          int xo = x.offset() + (img * cin + gi * cig) * cols;
          int wo = w.offset() + gi * cig * rows;
          int go = gOut.offset() + (img * o + gi * og) * g.hw();
          Storage cs = gs;
          int cOff = go;
          if (!direct) {
            im2col(gs, go, og, g, col, 0);
            cs = col;
            cOff = 0;
          }
          if (needW) { // dW_g [cig, rows] (+)= x_g [cig, cols] x col^T [cols, rows]
            gemm(xs, xo, cig, cols, cols, false, cs, cOff, rows, cols, true, part[t], gi * cig * rows, rows, img != n0);
          }
          if (needX) { // dx_g [cig, cols] = W_g [cig, rows] x col [rows, cols]
            int dxo = (img * cin + gi * cig) * cols;
            gemm(ws, wo, cig, rows, rows, false, cs, cOff, cols, cols, false, dx.storage(), dxo, cols, false);
          }
        }
      }
    });
    if (needW) sumPartials(part, (int) dw.numel());
    return new Tensor[] {dx, dw};
  }

  // ================================================================== depthwise

  /**
   * Whether a float32 depthwise layer takes {@link RowKernels#convPlane} over zero-padded planes: stride 1,
   * no dilation, and padding of at most k - 1 (so that the input gradient is the same kernel over the
   * padded output gradient with the taps reversed). The per-tap row loops it replaces ran one call of 56
   * floats per tap and row, 3 vectors and a tail, and ran the depthwise layer's forward+backward at 0.34x
   * PyTorch (8 x 64 x 56 x 56, 3 x 3).
   */
  private static boolean depthwiseDirect(Tensor x, Geom g) {
    return x.dtype() == DType.F32 && g.stride1() && g.ph <= g.kh - 1 && g.pw <= g.kw - 1;
  }

  /** Row pitch of the padded planes the direct depthwise kernels read for output rows of {@code ow}. */
  private static int directPitch(int ow, int kw) {
    int d = ROWS.directWidth();
    return (ow + d - 1) / d * d + kw - 1;
  }

  /**
   * {@code planes} consecutive h x w planes of {@code s} from {@code src} copied into this thread's buffer,
   * each at (top, left) of a zeroed plane of {@code rows} x {@code pitch} floats, the planes back to back and
   * followed by {@code extra} zeros; what falls outside a plane is left out.
   */
  private static float[] paddedPlanes(float[] s, int src, int planes, int h, int w, int top, int left, int rows,
      int pitch, int extra) {
    int size = planes * rows * pitch + extra;
    float[] xp = F_PADDED.get();
    if (xp.length < size) F_PADDED.set(xp = new float[size]);
    java.util.Arrays.fill(xp, 0, size, 0f);
    int c0 = Math.max(0, -left);
    int c1 = Math.min(w, pitch - left);
    for (int q = 0; q < planes; q++) {
      for (int r = 0; r < h; r++) {
        int pr = r + top;
        if (pr < 0 || pr >= rows || c1 <= c0) continue;
        System.arraycopy(s, src + (q * h + r) * w + c0, xp, (q * rows + pr) * pitch + left + c0, c1 - c0);
      }
    }
    return xp;
  }

  private static final ThreadLocal<float[]> F_PITCHED = ThreadLocal.withInitial(() -> new float[0]);

  /** The rows x cols plane of {@code s} at {@code src} in this thread's second buffer, rows {@code pitch} apart, zeros between. */
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

  /** out[n, o] = bias[o] + sum over (i, j) of w[o, 0, i, j] * x[n, o / mult] shifted: a direct kernel per plane. */
  private static void depthwiseForward(Tensor x, Tensor w, double[] bias, Tensor out, int mult, Geom g) {
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int planes = x.shapeRef()[0] * o;
    int cols = g.cols();
    int kk = g.kk();
    Storage xs = x.storage();
    Storage os = out.storage();
    double[] wv = w.toDoubleArray();
    float[] wf = x.dtype() == DType.F32 ? w.toFloatArray() : null;
    int per = Math.max(1, GRAIN / Math.max(1, cols * kk));
    boolean direct = depthwiseDirect(x, g);
    int rows = g.oh + g.kh - 1;
    int pitch = directPitch(g.ow, g.kw);
    Parallel.forEach(Parallel.chunks(planes, per), t -> {
      for (int p = t * per, p1 = Math.min(planes, p + per); p < p1; p++) {
        int oc = p % o;
        int src = x.offset() + ((p / o) * c + oc / mult) * g.hw();
        int dst = p * cols;
        if (direct) {
          float[] xp = paddedPlanes(xs.floats(), src, 1, g.h, g.w, g.ph, g.pw, rows, pitch, 0);
          ROWS.convPlane(xp, 0, pitch, rows * pitch, 1, g.kh, g.kw, wf, oc * kk, bias == null ? 0f : (float) bias[oc],
              os.floats(), dst, g.oh, g.ow);
          continue;
        }
        if (wf != null) {
          ConvLoops.depthwisePlane(xs.floats(), src, wf, oc * kk, bias == null ? 0f : (float) bias[oc], g, os.floats(),
              dst);
          continue;
        }
        Rows.fill(os, dst, dst + cols, bias == null ? 0 : bias[oc]);
        for (int i = 0; i < g.kh; i++) {
          for (int j = 0; j < g.kw; j++) {
            double wij = wv[oc * kk + i * g.kw + j];
            int xl = g.xLo(j);
            int xh = g.xHi(j);
            int ix = src + j * g.dw - g.pw + xl * g.sw;
            for (int oy = 0; oy < g.oh; oy++) {
              int iy = oy * g.sh - g.ph + i * g.dh;
              if (iy >= 0 && iy < g.h) Rows.axpyGather(os, dst + oy * g.ow + xl, xs, ix + iy * g.w, g.sw, wij, xh - xl);
            }
          }
        }
      }
    });
  }

  private static void depthwiseBackward(Tensor x, Tensor w, Tensor gOut, Tensor dx, Tensor dw, int mult, Geom g) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cols = g.cols();
    int kk = g.kk();
    Storage xs = x.storage();
    Storage gs = gOut.storage();
    double[] wv = w.toDoubleArray();
    float[] wf = x.dtype() == DType.F32 ? w.toFloatArray() : null;
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
      int rows = g.h + g.kh - 1;
      int pitch = directPitch(g.w, g.kw);
      Parallel.forEach(Parallel.chunks(n * c, per), t -> {
        for (int p = t * per, p1 = Math.min(n * c, p + per); p < p1; p++) {
          int img = p / c;
          int ci = p % c;
          if (direct) {
            int go = gOut.offset() + (img * o + ci * mult) * cols;
            float[] gp = paddedPlanes(gs.floats(), go, mult, g.oh, g.ow, g.kh - 1 - g.ph, g.kw - 1 - g.pw, rows, pitch, 0);
            ROWS.convPlane(gp, 0, pitch, rows * pitch, mult, g.kh, g.kw, flipped, ci * mult * kk, 0f, ds.floats(),
                p * g.hw(), g.h, g.w);
            continue;
          }
          for (int m = 0; m < mult; m++) {
            int oc = ci * mult + m;
            int go = gOut.offset() + (img * o + oc) * cols;
            if (wf != null) {
              ConvLoops.depthwiseInputPlane(gs.floats(), go, wf, oc * kk, g, ds.floats(), p * g.hw());
              continue;
            }
            for (int i = 0; i < g.kh; i++) {
              for (int j = 0; j < g.kw; j++) {
                double wij = wv[oc * kk + i * g.kw + j];
                int xl = g.xLo(j);
                int xh = g.xHi(j);
                int ix = p * g.hw() + j * g.dw - g.pw + xl * g.sw;
                for (int oy = 0; oy < g.oh; oy++) {
                  int iy = oy * g.sh - g.ph + i * g.dh;
                  if (iy >= 0 && iy < g.h) {
                    Rows.axpyScatter(ds, ix + iy * g.w, g.sw, gs, go + oy * g.ow + xl, wij, xh - xl);
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
      int pitch = g.ow + g.kw - 1;
      Parallel.forEach(Parallel.chunks(o, per), t -> {
        double[] acc = new double[kk];
        for (int oc = t * per, o1 = Math.min(o, oc + per); oc < o1; oc++) {
          java.util.Arrays.fill(acc, 0);
          for (int img = 0; img < n; img++) {
            int go = gOut.offset() + (img * o + oc) * cols;
            int src = x.offset() + (img * c + oc / mult) * g.hw();
            if (directW) {
              // One float dot per tap over the whole plane: the output gradient laid out in the padded
              // input's pitch with zeros past its ow columns, against the padded input shifted by the tap.
              float[] xp = paddedPlanes(xs.floats(), src, 1, g.h, g.w, g.ph, g.pw, g.oh + g.kh, pitch, 0);
              float[] gp = pitched(gs.floats(), go, g.oh, g.ow, pitch);
              for (int i = 0; i < g.kh; i++) {
                for (int j = 0; j < g.kw; j++) acc[i * g.kw + j] += ROWS.dot(gp, 0, xp, i * pitch + j, g.oh * pitch);
              }
              continue;
            }
            if (wf != null) {
              ConvLoops.depthwiseWeightPlane(gs.floats(), go, xs.floats(), src, g, acc);
              continue;
            }
            for (int i = 0; i < g.kh; i++) {
              for (int j = 0; j < g.kw; j++) {
                int xl = g.xLo(j);
                int xh = g.xHi(j);
                int ix = src + j * g.dw - g.pw + xl * g.sw;
                double s = 0;
                for (int oy = 0; oy < g.oh; oy++) {
                  int iy = oy * g.sh - g.ph + i * g.dh;
                  if (iy >= 0 && iy < g.h) s += Rows.dot(gs, go + oy * g.ow + xl, xs, ix + iy * g.w, g.sw, xh - xl);
                }
                acc[i * g.kw + j] += s;
              }
            }
          }
          for (int e = 0; e < kk; e++) dws.setDouble(oc * kk + e, acc[e]);
        }
      });
    }
  }

  // ================================================================== shared

  /**
   * Per-channel sums of g [N, C, S] (the bias gradient): each plane in a fixed order (float32 planes in
   * float vector lanes), the planes in double.
   */
  static double[] channelSums(Tensor g, int n, int c, int s) {
    double[] out = new double[c];
    Storage gs = g.storage();
    int per = Math.max(1, GRAIN / Math.max(1, n * s));
    Parallel.forEach(Parallel.chunks(c, per), t -> {
      for (int ch = t * per, c1 = Math.min(c, ch + per); ch < c1; ch++) {
        double acc = 0;
        for (int img = 0; img < n; img++) {
          int o = g.offset() + (img * c + ch) * s;
          // float32: each plane summed in float vector lanes, the planes in double
          acc += gs.dtype() == DType.F32 ? ROWS.sum(gs.floats(), o, s) : Rows.sum(gs, o, s);
        }
        out[ch] = acc;
      }
    });
    return out;
  }

  /** Images per weight-gradient chunk: at most 8 chunks, fewer when the partials would be large. */
  private static int imagesPerChunk(int n, long weightNumel) {
    int chunks = (int) Math.max(1, Math.min(Math.min(n, MAX_WEIGHT_CHUNKS), PARTIAL_BUDGET / Math.max(1, weightNumel)));
    return Math.max(1, (n + chunks - 1) / chunks);
  }

  /** part[0] is dw's own storage; the others are fresh buffers of dw's size. */
  private static Storage[] partials(Tensor dw, int chunks) {
    if (dw == null) return null;
    Storage[] part = new Storage[chunks];
    part[0] = dw.storage();
    for (int t = 1; t < chunks; t++) part[t] = Storage.allocate(dw.dtype(), dw.numel());
    return part;
  }

  /** part[0] += part[1] + part[2] + ... element by element, in chunk order. */
  private static void sumPartials(Storage[] part, int size) {
    if (part.length == 1) return;
    int per = GRAIN * 4;
    Parallel.forEach(Parallel.chunks(size, per), t -> {
      int from = t * per;
      int n = Math.min(size, from + per) - from;
      for (int p = 1; p < part.length; p++) Rows.scatterAdd(part[p], from, part[0], from, 1, n);
    });
  }
}
