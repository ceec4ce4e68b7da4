package dev.ember.backend.cpu;

import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.util.Arrays;

/**
 * The fused kernels of the normalizations. Batch norm: statistics in one pass per statistic (mean, then the centred
 * sum of squares: the two-pass form keeps float32 variances accurate where E[x^2] - E[x]^2 would cancel), a plane
 * summed in float vector lanes by {@link RowKernels} and the planes in double, then one pass writing the output.
 * Layer, RMS and group norm on F32: one task per block of rows, each row read from memory once per direction (its
 * moments, then its output or input gradient from cache; {@link RowKernels#moments}, {@link RowKernels#affineRow},
 * {@link RowKernels#normBackwardSums}, {@link RowKernels#normBackwardRowW}; layer and RMS norm's forward reads the next
 * row in the loop that writes a row's output, {@link RowKernels#affineRowThenMoments}); F64 rows run double loops.
 * Every sum over rows is a partial per block fixed by the shape, added in block order. Inputs are contiguous (callers
 * make them so) in F32 or F64.
 */
final class CpuNormalization implements NormalizationKernels {
  /** Below this many elements a kernel stays on the calling thread. */
  private static final long PARALLEL_MIN = 1 << 15;
  /** Rows per task of the per-row kernels: fixed, so the work split (and rowBackward's partial sums) never depends on the thread count. */
  private static final int ROW_BLOCK = 16;
  private static final RowKernels ROWS = RowKernels.F32;
  /**
   * Rows of layer and RMS norm's backward whose sums run before their input gradients ({@link #rowBackwardF32}):
   * 32 rows of 1024 floats of x and g are 256 KB, in L2 for the second pass.
   */
  private static final int SUB_ROWS = 32;

  CpuNormalization() {}

  /** body(t) for t in [0, tasks): on the worker pool when the kernel touches {@code elements} or more, else inline. */
  private static void forTasks(int tasks, long elements, java.util.function.IntConsumer body) {
    if (elements < PARALLEL_MIN) {
      for (int t = 0; t < tasks; t++) body.accept(t);
    } else {
      Parallel.forEach(tasks, body);
    }
  }

  @Override
  public double[][] rowStats(View x, int rows, int m, double eps, boolean rms) {
    return rowNormalize(x, rows, m, eps, rms, null, null, null);
  }

  /**
   * F32 rows: each task takes a block of rows and, per row, its moments ({@link RowKernels#moments}: the row read
   * from memory once, the second pass from cache) and then, when {@code out} is given, its output from the same
   * cached row. The mean is the float mean the variance was centred on. F64 rows: double loops, two passes.
   */
  @Override
  public double[][] rowNormalize(View x, int rows, int m, double eps, boolean rms, double[] w, double[] b, View out) {
    double[] mean = rms ? null : new double[rows];
    double[] rstd = new double[rows];
    int base = x.offset();
    if (x.dtype() == DType.F32) {
      float[] f = x.storage().floats();
      float[] os = out == null ? null : out.storage().floats();
      int oo = out == null ? 0 : out.offset();
      float[] wf = os == null ? null : floats(w, m, 1f);
      float[] bf = os == null ? null : floats(b, m, 0f);
      forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
        float[] two = new float[2];
        int r0 = t * ROW_BLOCK;
        int rEnd = Math.min(rows, r0 + ROW_BLOCK);
        ROWS.moments(f, base + r0 * m, m, rms, two);
        for (int r = r0; r < rEnd; r++) {
          int o = r * m;
          float mu = two[0];
          if (!rms) mean[r] = mu;
          double rs = 1.0 / Math.sqrt((double) two[1] / m + eps);
          rstd[r] = rs;
          boolean next = r + 1 < rEnd; // the next row's moments (into two) in the same pass as this row's output
          if (os == null) {
            if (next) ROWS.moments(f, base + o + m, m, rms, two);
          } else if (next) {
            ROWS.affineRowThenMoments(f, base + o, os, oo + o, m, mu, (float) rs, wf, bf, base + o + m, rms, two);
          } else {
            ROWS.affineRow(f, base + o, os, oo + o, m, mu, (float) rs, wf, bf);
          }
        }
      });
      return new double[][] {mean, rstd};
    }
    double[] d = x.storage().doubles();
    forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
    for (int r = t * ROW_BLOCK, rEnd = Math.min(rows, r + ROW_BLOCK); r < rEnd; r++) {
      int o = base + r * m;
      double mu = 0;
      if (!rms) {
        double s = 0;
        for (int i = 0; i < m; i++) s += d[o + i];
        mu = s / m;
        mean[r] = mu;
      }
      double ss = 0;
      for (int i = 0; i < m; i++) {
        double c = d[o + i] - mu;
        ss += c * c;
      }
      rstd[r] = 1.0 / Math.sqrt(ss / m + eps);
    }
    });
    if (out != null) rowAffine(x, mean, rstd, w, b, out, rows, m);
    return new double[][] {mean, rstd};
  }

  /**
   * F32: per (image, group) row, its moments and then each channel plane's scale and shift pass while the row is in
   * cache (the default's scale and shift, the same bits), the next row's first moments pass in that output loop
   * ({@link RowKernels#scaleShiftPlanesThenMoments}); F64: the default, rowStats then channelAffine.
   */
  @Override
  public double[][] groupNormalize(View x, int n, int c, int s, int groups, double eps, double[] w, double[] b,
      View out) {
    if (x.dtype() != DType.F32) return NormalizationKernels.super.groupNormalize(x, n, c, s, groups, eps, w, b, out);
    int cpg = c / groups;
    int rows = n * groups;
    int m = cpg * s;
    double[] mean = new double[rows];
    double[] rstd = new double[rows];
    float[] f = x.storage().floats();
    float[] os = out.storage().floats();
    int base = x.offset();
    int oo = out.offset();
    forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
      float[] two = new float[2];
      float[] sc = new float[cpg];
      float[] sh = new float[cpg];
      int r0 = t * ROW_BLOCK;
      int rEnd = Math.min(rows, r0 + ROW_BLOCK);
      ROWS.moments(f, base + r0 * m, m, false, two);
      for (int r = r0; r < rEnd; r++) {
        mean[r] = two[0];
        double rs = 1.0 / Math.sqrt((double) two[1] / m + eps);
        rstd[r] = rs;
        int g = r % groups;
        for (int j = 0; j < cpg; j++) {
          int ch = g * cpg + j;
          double scj = rs * (w == null ? 1 : w[ch]);
          sc[j] = (float) scj;
          sh[j] = (float) ((b == null ? 0 : b[ch]) - mean[r] * scj);
        }
        int o = r * m;
        if (r + 1 < rEnd) { // the next row's moments (into two) in the same pass as this row's output
          ROWS.scaleShiftPlanesThenMoments(f, base + o, os, oo + o, m, s, sc, sh, base + o + m, two);
        } else {
          for (int j = 0; j < cpg; j++) ROWS.scaleShiftRow(f, base + o + j * s, os, oo + o + j * s, s, sc[j], sh[j]);
        }
      }
    });
    return new double[][] {mean, rstd};
  }

  /** {@code v} as floats, or n copies of {@code fill} when v is null (the identity weight or bias). */
  private static float[] floats(double[] v, int n, float fill) {
    float[] f = new float[n];
    if (v == null) {
      Arrays.fill(f, fill);
    } else {
      for (int i = 0; i < n; i++) f[i] = (float) v[i];
    }
    return f;
  }

  /** One plane of batch norm's [n, c, s] input: image b, channel ch, in block {@code blk} of images. */
  @FunctionalInterface
  private interface Plane {
    void run(int blk, int b, int ch, float[] scratch);
  }

  /**
   * Runs {@code body} over every plane of an [n, c, s] tensor, in tasks fixed by the shape alone: blocks of
   * whole images of about {@link #PARALLEL_MIN} elements, or, for images larger than that, one image's
   * channels in groups of about that size. The tasks split the batch, not the channels, as the
   * convolutions, the pooling and the element-wise ops around batch norm do: each core then reads the
   * images it wrote itself (split by channels, every core read half of each channel from the other core).
   * A task writes only its own image block's entries ({@link #imageBlocks}) for its own channels.
   * {@code scratch} is a float[2] of the task's.
   */
  private static void forPlanes(int n, int c, int s, Plane body) {
    int per = imagesPerBlock(c, s);
    int chPer = per > 1 ? c : (int) Math.min(c, Math.max(1, PARALLEL_MIN / Math.max(1, s)));
    int groups = (c + chPer - 1) / chPer;
    int blocks = (n + per - 1) / per;
    forTasks(blocks * groups, (long) n * c * s, t -> {
      int blk = t / groups;
      int ch0 = t % groups * chPer;
      int ch1 = Math.min(c, ch0 + chPer);
      float[] scratch = new float[2];
      for (int b = blk * per, bEnd = Math.min(n, b + per); b < bEnd; b++) {
        for (int ch = ch0; ch < ch1; ch++) body.run(blk, b, ch, scratch);
      }
    });
  }

  /** Image blocks of {@link #forPlanes} for an [n, c, s] tensor. */
  private static int imageBlocks(int n, int c, int s) {
    int per = imagesPerBlock(c, s);
    return (n + per - 1) / per;
  }

  /** Whole images of c x s elements in about {@link #PARALLEL_MIN} elements, at least one. */
  private static int imagesPerBlock(int c, int s) {
    return (int) Math.max(1, PARALLEL_MIN / Math.max(1L, (long) c * s));
  }

  /**
   * Each task sums its block of images per channel (a plane in float vector lanes, planes in double) into its
   * own partial, and the partials are added in block order: the same bits on any thread count.
   */
  @Override
  public double[][] channelStats(View x, int n, int c, int s) {
    double[] mean = new double[c];
    double[] var = new double[c];
    int base = x.offset();
    float[] f = x.dtype() == DType.F32 ? x.storage().floats() : null;
    double[] d = f == null ? x.storage().doubles() : null;
    double count = (double) n * s;
    double[][] part = new double[imageBlocks(n, c, s)][c];
    forPlanes(n, c, s, (blk, b, ch, scratch) -> {
      int o = base + (b * c + ch) * s;
      if (f != null) {
        part[blk][ch] += ROWS.sum(f, o, s);
      } else {
        for (int i = 0; i < s; i++) part[blk][ch] += d[o + i];
      }
    });
    for (int ch = 0; ch < c; ch++) {
      double sum = 0;
      for (double[] p : part) sum += p[ch];
      mean[ch] = sum / count;
    }
    for (double[] p : part) Arrays.fill(p, 0);
    forPlanes(n, c, s, (blk, b, ch, scratch) -> {
      int o = base + (b * c + ch) * s;
      double mu = mean[ch];
      if (f != null) {
        part[blk][ch] += ROWS.sumSquaredDeviations(f, o, s, (float) mu);
      } else {
        double ss = 0;
        for (int i = 0; i < s; i++) {
          double v = d[o + i] - mu;
          ss += v * v;
        }
        part[blk][ch] += ss;
      }
    });
    for (int ch = 0; ch < c; ch++) {
      double ss = 0;
      for (double[] p : part) ss += p[ch];
      var[ch] = ss / count;
    }
    return new double[][] {mean, var};
  }

  @Override
  public void rowAffine(View x, double[] mean, double[] rstd, double[] w, double[] b, View out, int rows, int m) {
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] os = out.storage().floats();
      int oo = out.offset();
      float[] wf = floats(w, m, 1f);
      float[] bf = floats(b, m, 0f);
      forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
        for (int r = t * ROW_BLOCK, rEnd = Math.min(rows, r + ROW_BLOCK); r < rEnd; r++) {
          float mu = mean == null ? 0f : (float) mean[r];
          ROWS.affineRow(xs, xo + r * m, os, oo + r * m, m, mu, (float) rstd[r], wf, bf);
        }
      });
    } else {
      double[] xs = x.storage().doubles();
      double[] os = out.storage().doubles();
      for (int r = 0; r < rows; r++) {
        double mu = mean == null ? 0 : mean[r];
        double rs = rstd[r];
        int o = r * m;
        for (int i = 0; i < m; i++) {
          double v = (xs[xo + o + i] - mu) * rs;
          if (w != null) v *= w[i];
          if (b != null) v += b[i];
          os[o + i] = v;
        }
      }
    }
  }

  @Override
  public void channelAffine(View x, double[] scale, double[] shift, View out, int n, int c, int s) {
    int xo = x.offset();
    if (x.dtype() == DType.F32) {
      float[] xs = x.storage().floats();
      float[] os = out.storage().floats();
      forTasks(n * c, (long) n * c * s, bc -> ROWS.scaleShiftRow(xs, xo + bc * s, os, bc * s, s, (float) scale[bc],
          (float) shift[bc]));
    } else {
      double[] xs = x.storage().doubles();
      double[] os = out.storage().doubles();
      for (int bc = 0; bc < n * c; bc++) {
        double sc = scale[bc];
        double sh = shift[bc];
        int o = bc * s;
        for (int i = 0; i < s; i++) os[o + i] = xs[xo + o + i] * sc + sh;
      }
    }
  }

  /**
   * Both passes split the batch as {@link #forPlanes} does (the sums: a partial per image block, added in block
   * order).
   */
  @Override
  public void channelBackward(View x, View g, double[] mean, double[] rstd, double[] w, int n, int c, int s,
      boolean train, View gx, View gwOut, View gbOut) {
    double[] gw = gwOut == null ? null : gwOut.storage().doubles();
    double[] gb = gbOut == null ? null : gbOut.storage().doubles();
    int gwo = gwOut == null ? 0 : gwOut.offset();
    int gbo = gbOut == null ? 0 : gbOut.offset();
    float[] xf = x.storage().floats();
    double[] xd = x.storage().doubles();
    float[] gf = g.storage().floats();
    double[] gd = g.storage().doubles();
    Storage os = gx == null ? null : gx.storage();
    float[] of = os == null ? null : os.floats();
    double[] od = os == null ? null : os.doubles();
    int xo = x.offset();
    int go = g.offset();
    double count = (double) n * s;
    boolean f32 = xf != null && gf != null && (os == null || of != null);
    // sumG and sumGX per channel, each image block's at [blk][ch] and [blk][c + ch]
    double[][] part = new double[imageBlocks(n, c, s)][2 * c];
    forPlanes(n, c, s, (blk, b, ch, two) -> {
      int o = (b * c + ch) * s;
      double[] acc = part[blk];
      if (f32) { // a plane in float (vector lanes), planes in double; g read once for both sums
        ROWS.sumAndDotCentred(gf, go + o, xf, xo + o, s, (float) mean[ch], two);
        acc[ch] += two[0];
        acc[c + ch] += two[1];
      } else {
        double mu = mean[ch];
        double rs = rstd[ch];
        for (int i = 0; i < s; i++) {
          double gv = at(gf, gd, go + o + i);
          acc[ch] += gv;
          acc[c + ch] += gv * (at(xf, xd, xo + o + i) - mu) * rs;
        }
      }
    });
    double[] sumG = new double[c];
    double[] sumGX = new double[c];
    for (int ch = 0; ch < c; ch++) {
      for (double[] p : part) {
        sumG[ch] += p[ch];
        sumGX[ch] += p[c + ch];
      }
      if (f32) sumGX[ch] *= rstd[ch];
      if (gw != null) gw[gwo + ch] = sumGX[ch];
      if (gb != null) gb[gbo + ch] = sumG[ch];
    }
    if (os == null) return;
    forPlanes(n, c, s, (blk, b, ch, scratch) -> {
      double mu = mean[ch];
      double rs = rstd[ch];
      double wr = (w == null ? 1 : w[ch]) * rs;
      double a = train ? sumG[ch] / count : 0;
      double bb = train ? sumGX[ch] / count : 0;
      int o = (b * c + ch) * s;
      if (f32) { // gx = wr (g - a - (x - mu) rs bb) = wr g + (-wr rs bb (x - mu) - wr a)
        ROWS.normBackwardRow(gf, go + o, xf, xo + o, of, o, s, (float) wr, (float) (-wr * rs * bb), (float) mu,
            (float) (-wr * a));
        return;
      }
      for (int i = 0; i < s; i++) {
        double xh = (at(xf, xd, xo + o + i) - mu) * rs;
        put(of, od, o + i, wr * (at(gf, gd, go + o + i) - a - xh * bb));
      }
    });
  }

  /**
   * Layer and RMS norm (groups = sDiv = 1, weight i): F32 rows go to {@link #rowBackwardF32}. Group norm (weight
   * of the channel, planes of sDiv elements): {@link #planeBackward}. Other cases (F64 layer norm): the double
   * loops below.
   */
  @Override
  public void rowBackward(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m, int groups,
      int sDiv, View gx, View gwOut, View gbOut) {
    boolean f32 = x.dtype() == DType.F32 && g.dtype() == DType.F32 && (gx == null || gx.dtype() == DType.F32);
    if (groups == 1 && sDiv == 1 && f32) {
      rowBackwardF32(x, g, mean, rstd, w, rows, m, gx, gwOut, gbOut);
      return;
    }
    if (sDiv > 1 || groups > 1) {
      planeBackward(x, g, mean, rstd, w, rows, m, groups, sDiv, f32, gx, gwOut, gbOut);
      return;
    }
    double[] gw = gwOut == null ? null : gwOut.storage().doubles();
    double[] gb = gbOut == null ? null : gbOut.storage().doubles();
    int gwo = gwOut == null ? 0 : gwOut.offset();
    int gbo = gbOut == null ? 0 : gbOut.offset();
    int gwn = gwOut == null ? 0 : (int) gwOut.numel();
    int gbn = gbOut == null ? 0 : (int) gbOut.numel();
    float[] xf = x.storage().floats();
    double[] xd = x.storage().doubles();
    float[] gf = g.storage().floats();
    double[] gd = g.storage().doubles();
    Storage os = gx == null ? null : gx.storage();
    float[] of = os == null ? null : os.floats();
    double[] od = os == null ? null : os.doubles();
    int xo = x.offset();
    int go = g.offset();
    int blocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
    // gw and gb sum over rows: each block of rows adds into its own partial, then the partials are
    // added in block order, so the sums do not depend on which thread ran which block
    double[][] gwPart = gw == null ? null : new double[blocks][];
    double[][] gbPart = gb == null ? null : new double[blocks][];
    forTasks(blocks, (long) rows * m, t -> {
      double[] gwT = gw == null ? null : (gwPart[t] = new double[gwn]);
      double[] gbT = gb == null ? null : (gbPart[t] = new double[gbn]);
      for (int r = t * ROW_BLOCK, rEnd = Math.min(rows, r + ROW_BLOCK); r < rEnd; r++) {
        double mu = mean == null ? 0 : mean[r];
        double rs = rstd[r];
        int wBase = (r % groups) * (m / sDiv);
        int o = r * m;
        double sumGh = 0;
        double sumGhX = 0;
        // wi = wBase + i / sDiv, stepped instead of divided: an integer division per element made
        // layer norm's backward 3% of a transformer step
        for (int i = 0, wi = wBase, k = 0; i < m; i++) {
          double gv = at(gf, gd, go + o + i);
          double xh = (at(xf, xd, xo + o + i) - mu) * rs;
          double gh = w == null ? gv : gv * w[wi];
          sumGh += gh;
          sumGhX += gh * xh;
          if (gwT != null) gwT[wi] += gv * xh;
          if (gbT != null) gbT[wi] += gv;
          if (++k == sDiv) { // next weight
            k = 0;
            wi++;
          }
        }
        if (os == null) continue;
        double a = mean == null ? 0 : sumGh / m;
        double bb = sumGhX / m;
        for (int i = 0, wi = wBase, k = 0; i < m; i++) {
          double gv = at(gf, gd, go + o + i);
          double gh = w == null ? gv : gv * w[wi];
          double xh = (at(xf, xd, xo + o + i) - mu) * rs;
          put(of, od, o + i, rs * (gh - a - xh * bb));
          if (++k == sDiv) {
            k = 0;
            wi++;
          }
        }
      }
    });
    for (int t = 0; t < blocks; t++) {
      if (gw != null) for (int i = 0; i < gwn; i++) gw[gwo + i] += gwPart[t][i];
      if (gb != null) for (int i = 0; i < gbn; i++) gb[gbo + i] += gbPart[t][i];
    }
  }

  /**
   * Blocks of rows fixed by the shape alone (at least {@link #ROW_BLOCK} rows, at most 64 blocks); each block's task
   * reads each row from memory once: {@link RowKernels#normBackwardSums} (the row's two sums, and its terms of gw
   * and gb added into the block's float partials), then {@link RowKernels#normBackwardRowW} (the input gradient, the
   * row still in cache), {@link #SUB_ROWS} rows' sums before their gradients: layer norm's backward [4096x1024] on
   * one thread took about 10% less time than with the two calls row by row (the reads, and the writes, in longer runs).
   * The partials are added in block order, in double: the same bits on any thread count.
   */
  private static void rowBackwardF32(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m,
      View gx, View gwOut, View gbOut) {
    float[] xf = x.storage().floats();
    float[] gf = g.storage().floats();
    float[] of = gx == null ? null : gx.storage().floats();
    int xo = x.offset();
    int go = g.offset();
    int oo = gx == null ? 0 : gx.offset();
    float[] wf = floats(w, m, 1f);
    int per = Math.max(ROW_BLOCK, (rows + 63) / 64);
    int blocks = (rows + per - 1) / per;
    float[][] gwPart = new float[blocks][];
    float[][] gbPart = new float[blocks][];
    boolean sums = gwOut != null || gbOut != null;
    forTasks(blocks, (long) rows * m, t -> {
      float[] gwT = new float[m];
      float[] gbT = new float[m];
      float[] two = new float[2];
      float[] sub = new float[2 * SUB_ROWS];
      // SUB_ROWS rows' sums (reading them from memory), then their input gradients (reading them from L2): long
      // runs of reads, then of writes, instead of one row's of each in turn
      for (int s0 = t * per, rEnd = Math.min(rows, s0 + per); s0 < rEnd; s0 += SUB_ROWS) {
        int sEnd = Math.min(rEnd, s0 + SUB_ROWS);
        for (int r = s0; r < sEnd; r++) {
          float mu = mean == null ? 0f : (float) mean[r];
          int o = r * m;
          ROWS.normBackwardSums(gf, go + o, xf, xo + o, wf, m, mu, (float) rstd[r], gwT, gbT, two);
          sub[2 * (r - s0)] = two[0];
          sub[2 * (r - s0) + 1] = two[1];
        }
        if (of == null) continue;
        for (int r = s0; r < sEnd; r++) {
          float mu = mean == null ? 0f : (float) mean[r];
          double rs = rstd[r];
          int o = r * m;
          double a = mean == null ? 0 : sub[2 * (r - s0)] / (double) m;
          double bb = sub[2 * (r - s0) + 1] / (double) m;
          // gx = rs (gh - a - xh bb) = rs gh + (-rs rs bb) (x - mu) + (-rs a)
          ROWS.normBackwardRowW(gf, go + o, xf, xo + o, wf, of, oo + o, m, (float) rs, (float) (-rs * rs * bb), mu,
              (float) (-rs * a));
        }
      }
      if (sums) {
        gwPart[t] = gwT;
        gbPart[t] = gbT;
      }
    });
    if (!sums) return;
    double[] gw = gwOut == null ? null : gwOut.storage().doubles();
    double[] gb = gbOut == null ? null : gbOut.storage().doubles();
    int gwo = gwOut == null ? 0 : gwOut.offset();
    int gbo = gbOut == null ? 0 : gbOut.offset();
    for (int t = 0; t < blocks; t++) {
      if (gw != null) for (int i = 0; i < m; i++) gw[gwo + i] += gwPart[t][i];
      if (gb != null) for (int i = 0; i < m; i++) gb[gbo + i] += gbPart[t][i];
    }
  }

  /**
   * Group norm's backward, a row being one (image, group) of {@code m / s} channel planes of s = sDiv elements
   * (weight (r % groups) * (m / s) + plane). Per row: each plane's sum(g) and sum(g xhat) (F32: one pass,
   * {@link RowKernels#sumAndDotCentred}), which give the row's sum(gh) and sum(gh xhat) with gh = g w; then each
   * plane's input gradient rs (w g - a - xhat bb) as one scale-and-shift pass ({@link RowKernels#normBackwardRow}).
   * The planes' sums go to gw and gb in row order: the same bits on any thread count. Each thread takes the blocks of
   * rows its forward share held ({@link #groupNormalize}, the same tasks) last to first, rows within a block first to
   * last ({@link Parallel#mirroredInShare}): it starts on the rows likeliest still in its caches, and a following
   * forward starts where the backward ended. GroupNorm [8, 64, 56, 56] forward + backward on one thread (25 MB of
   * tensors against a 32 MB L3 shared with other work): 3-8% less CPU time than with both passes first to last. A
   * reversal of the whole range gave each of 2 threads the other core's rows: 0.46-0.61 -> 0.63-0.77 ms.
   */
  private static void planeBackward(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m,
      int groups, int s, boolean f32, View gx, View gwOut, View gbOut) {
    int cpg = m / s;
    float[] xf = x.storage().floats();
    double[] xd = x.storage().doubles();
    float[] gf = g.storage().floats();
    double[] gd = g.storage().doubles();
    Storage os = gx == null ? null : gx.storage();
    float[] of = os == null ? null : os.floats();
    double[] od = os == null ? null : os.doubles();
    int xo = x.offset();
    int go = g.offset();
    int oo = gx == null ? 0 : gx.offset();
    double[] pg = new double[rows * cpg];
    double[] pgx = new double[rows * cpg];
    // F32 with an input gradient: each row's plane sums come from the loop writing the previous row's gradient
    // (normBackwardRowThenSums), the block's first row's alone
    boolean ahead = f32 && os != null;
    int blocks = (rows + ROW_BLOCK - 1) / ROW_BLOCK;
    forTasks(blocks, (long) rows * m, t -> {
      float[] two = new float[2];
      int r0 = Parallel.mirroredInShare(t, blocks) * ROW_BLOCK; // each thread's forward share, last block first
      int rEnd = Math.min(rows, r0 + ROW_BLOCK);
      for (int r = r0; r < rEnd; r++) {
        double mu = mean == null ? 0 : mean[r];
        double rs = rstd[r];
        int wBase = (r % groups) * cpg;
        double sumGh = 0;
        double sumGhX = 0;
        for (int j = 0; j < cpg; j++) {
          int o = r * m + j * s;
          if (f32 && (!ahead || r == r0)) {
            ROWS.sumAndDotCentred(gf, go + o, xf, xo + o, s, (float) mu, two);
            pg[r * cpg + j] = two[0];
            pgx[r * cpg + j] = two[1] * rs;
          } else if (!f32) {
            double sg = 0;
            double sgx = 0;
            for (int i = 0; i < s; i++) {
              double gv = at(gf, gd, go + o + i);
              sg += gv;
              sgx += gv * (at(xf, xd, xo + o + i) - mu) * rs;
            }
            pg[r * cpg + j] = sg;
            pgx[r * cpg + j] = sgx;
          }
          double wj = w == null ? 1 : w[wBase + j];
          sumGh += wj * pg[r * cpg + j];
          sumGhX += wj * pgx[r * cpg + j];
        }
        if (os == null) continue;
        double a = mean == null ? 0 : sumGh / m;
        double bb = sumGhX / m;
        boolean next = ahead && r + 1 < rEnd;
        float nmu = next && mean != null ? (float) mean[r + 1] : 0f;
        for (int j = 0; j < cpg; j++) {
          int o = r * m + j * s;
          double p = rs * (w == null ? 1 : w[wBase + j]);
          double q = -rs * rs * bb;
          double c = -rs * a;
          if (next) { // this plane's gradient as below, and the next row's plane j's sums
            ROWS.normBackwardRowThenSums(gf, go + o, xf, xo + o, of, oo + o, s, (float) p, (float) q, (float) mu,
                (float) c, go + o + m, xo + o + m, nmu, two);
            pg[(r + 1) * cpg + j] = two[0];
            pgx[(r + 1) * cpg + j] = two[1] * rstd[r + 1];
          } else if (f32) { // rs (w g - a - (x - mu) rs bb) = p g + (q (x - mu) + c)
            ROWS.normBackwardRow(gf, go + o, xf, xo + o, of, oo + o, s, (float) p, (float) q, (float) mu, (float) c);
          } else {
            for (int i = 0; i < s; i++) {
              put(of, od, oo + o + i, p * at(gf, gd, go + o + i) + (q * (at(xf, xd, xo + o + i) - mu) + c));
            }
          }
        }
      }
    });
    double[] gw = gwOut == null ? null : gwOut.storage().doubles();
    double[] gb = gbOut == null ? null : gbOut.storage().doubles();
    int gwo = gwOut == null ? 0 : gwOut.offset();
    int gbo = gbOut == null ? 0 : gbOut.offset();
    for (int r = 0; r < rows; r++) {
      int wBase = (r % groups) * cpg;
      for (int j = 0; j < cpg; j++) {
        if (gw != null) gw[gwo + wBase + j] += pgx[r * cpg + j];
        if (gb != null) gb[gbo + wBase + j] += pg[r * cpg + j];
      }
    }
  }

  /** Element i of whichever of the two arrays exists (F32 or F64 storage): one predictable branch, no switch. */
  private static double at(float[] f, double[] d, int i) {
    return f != null ? f[i] : d[i];
  }

  private static void put(float[] f, double[] d, int i, double v) {
    if (f != null) f[i] = (float) v;
    else d[i] = v;
  }

  @Override
  public void updateRunning(View running, double[] stat, double momentum) {
    Storage st = running.storage();
    int stride = running.stridesRef()[0];
    for (int i = 0; i < stat.length; i++) {
      int o = running.offset() + i * stride;
      st.setDouble(o, (1 - momentum) * st.getDouble(o) + momentum * stat[i]);
    }
  }

  @Override
  public boolean renormRows(View weight, long[] idx, double maxNorm, double p) {
    Storage s = weight.storage();
    int[] st = weight.stridesRef();
    int dim = weight.shapeRef()[1];
    long[] distinct = Arrays.stream(idx).distinct().toArray();
    boolean changed = false;
    for (long row : distinct) {
      int base = weight.offset() + (int) row * st[0];
      double norm = 0;
      for (int j = 0; j < dim; j++) {
        double v = Math.abs(s.getDouble(base + j * st[1]));
        norm = p == Double.POSITIVE_INFINITY ? Math.max(norm, v) : norm + Math.pow(v, p);
      }
      if (p != Double.POSITIVE_INFINITY) norm = Math.pow(norm, 1 / p);
      if (norm > maxNorm) {
        double scale = maxNorm / (norm + 1e-7);
        for (int j = 0; j < dim; j++) s.setDouble(base + j * st[1], s.getDouble(base + j * st[1]) * scale);
        changed = true;
      }
    }
    return changed;
  }
}
