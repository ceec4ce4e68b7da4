package dev.ember.backend.cpu.conv;

import static dev.ember.backend.cpu.conv.ConvSupport.col2im;
import static dev.ember.backend.cpu.conv.ConvSupport.gemm;
import static dev.ember.backend.cpu.conv.ConvSupport.im2col;
import static dev.ember.backend.cpu.conv.ConvSupport.imagesPerChunk;
import static dev.ember.backend.cpu.conv.ConvSupport.partials;
import static dev.ember.backend.cpu.conv.ConvSupport.scratch;
import static dev.ember.backend.cpu.conv.ConvSupport.sumPartials;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.SavedColumns;
import dev.ember.backend.View;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.Rows;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * Convolution lowered to GEMM over im2col column matrices. Per image and group (any dtype, any groups):
 * the forward is one GEMM {@code W_g [Og, Cg*kk] x col}, the backward {@code dW_g += g x col^T} and
 * {@code dcol = W_g^T x g} followed by col2im; a 1x1, stride-1, unpadded convolution uses the image itself
 * as its column matrix. F32 with one group takes blocks of images side by side instead, which gives GEMM a
 * wide N where one image's column matrix is as narrow as a small feature map.
 */
final class GemmConv {
  private GemmConv() {}

  /**
   * The column matrices of a blocked forward pass, one per block of images, kept for the weight
   * gradient so that the backward pass does not build them again (see {@link #KEEP_BUDGET}).
   */
  static final class KeptColumns implements SavedColumns {
    float[][] blocks;

    @Override
    public long elements() {
      long n = 0;
      if (blocks != null) for (float[] b : blocks) n += b == null ? 0 : b.length;
      return n;
    }
  }

  /**
   * out [N, O, oh, ow] of x with w and bias (as doubles, or null), one task per image: per group, the bias
   * rows, then {@code W_g [Og, Cg*kk] x col} added to them; with {@code relu} the group's rows are clamped at 0
   * as soon as its GEMM has written them.
   */
  static void perImageForward(View x, View w, double[] bias, int groups, ConvGeometry g, View out, boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    int og = o / groups;
    int rows = cg * g.kk();
    int cols = g.cols();
    boolean direct = g.identity();
    Storage xs = x.storage();
    Storage ws = w.storage();
    Storage os = out.storage();
    Parallel.forEach(n, img -> {
      Storage col = direct ? null : scratch(x.dtype(), rows * cols);
      for (int gi = 0; gi < groups; gi++) {
        int co = (img * o + gi * og) * cols;
        if (bias != null) {
          for (int r = 0; r < og; r++) Rows.fill(os, co + r * cols, co + (r + 1) * cols, bias[gi * og + r]);
        }
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
        if (relu) ConvSupport.relu(os, co, co + og * cols);
      }
    });
  }

  /**
   * dx and dw (either null) per image and group: {@code dW_g += g_g x col^T} into the partial of the image's
   * chunk, {@code dcol = W_g^T x g_g} then col2im.
   */
  static void perImageBackward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int cg = c / groups;
    int og = o / groups;
    boolean needX = dx != null;
    boolean needW = dw != null;
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
  }

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
  static boolean blocked(View x, int groups, ConvGeometry g) {
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
  private static void blockIm2col(float[] xs, int xOff, int c, ConvGeometry g, int i0, int nb, float[] col) {
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
   * thread count. With {@code relu} the copy clamps at 0 as it adds the bias: the fused epilogue costs no pass.
   */
  static void blockedForward(View x, View w, double[] bias, View out, ConvGeometry g, KeptColumns keep,
      boolean relu) {
    int n = x.shapeRef()[0];
    int c = x.shapeRef()[1];
    int o = w.shapeRef()[0];
    int rows = c * g.kk();
    int cols = g.cols();
    int per = imagesPerBlock(n, rows, cols);
    boolean fits = (long) rows * n * cols <= KEEP_BUDGET;
    float[][] kept = keep != null && fits ? new float[Parallel.chunks(n, per)][] : null;
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
          if (relu) {
            for (int p = 0; p < cols; p++) {
              float v = blk[src + p] + bv;
              ys[dst + p] = v <= 0 ? 0f : v;
            }
          } else {
            for (int p = 0; p < cols; p++) ys[dst + p] = blk[src + p] + bv;
          }
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
  static void blockedBackward(View x, View w, View gOut, View dx, View dw, ConvGeometry g,
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
}
