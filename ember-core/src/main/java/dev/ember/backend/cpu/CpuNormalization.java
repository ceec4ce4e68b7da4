package dev.ember.backend.cpu;

import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.util.Arrays;

/**
 * The fused kernels of the normalizations. Forward: statistics in one pass per statistic (mean,
 * then the centred sum of squares: the two-pass form keeps float32 variances accurate where
 * E[x^2] - E[x]^2 would cancel), accumulated in double (batch norm's float32 planes are summed in
 * float vector lanes by {@link RowKernels}, a plane at a time, and the planes in double), then one
 * pass writing the normalized and affine-transformed output. Backward: two passes from the saved
 * statistics. Inputs are contiguous (callers make them so) in F32 or F64.
 */
final class CpuNormalization implements NormalizationKernels {
  /** Below this many elements a kernel stays on the calling thread. */
  private static final long PARALLEL_MIN = 1 << 15;
  /** Rows per task of the per-row kernels: fixed, so the work split (and rowBackward's partial sums) never depends on the thread count. */
  private static final int ROW_BLOCK = 16;
  private static final RowKernels ROWS = RowKernels.F32;

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
    double[] mean = rms ? null : new double[rows];
    double[] rstd = new double[rows];
    int base = x.offset();
    float[] f = x.dtype() == DType.F32 ? x.storage().floats() : null;
    double[] d = f == null ? x.storage().doubles() : null;
    forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
    for (int r = t * ROW_BLOCK, rEnd = Math.min(rows, r + ROW_BLOCK); r < rEnd; r++) {
      int o = base + r * m;
      double mu = 0;
      if (!rms) {
        double s = 0;
        if (f != null) for (int i = 0; i < m; i++) s += f[o + i];
        else for (int i = 0; i < m; i++) s += d[o + i];
        mu = s / m;
        mean[r] = mu;
      }
      double ss = 0;
      if (f != null) {
        for (int i = 0; i < m; i++) {
          double c = f[o + i] - mu;
          ss += c * c;
        }
      } else {
        for (int i = 0; i < m; i++) {
          double c = d[o + i] - mu;
          ss += c * c;
        }
      }
      rstd[r] = 1.0 / Math.sqrt(ss / m + eps);
    }
    });
    return new double[][] {mean, rstd};
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
      forTasks((rows + ROW_BLOCK - 1) / ROW_BLOCK, (long) rows * m, t -> {
      for (int r = t * ROW_BLOCK, rEnd = Math.min(rows, r + ROW_BLOCK); r < rEnd; r++) {
        double mu = mean == null ? 0 : mean[r];
        double rs = rstd[r];
        int o = r * m;
        for (int i = 0; i < m; i++) {
          double v = (xs[xo + o + i] - mu) * rs;
          if (w != null) v *= w[i];
          if (b != null) v += b[i];
          os[o + i] = (float) v;
        }
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
      forTasks(n * c, (long) n * c * s, bc -> {
        float sc = (float) scale[bc];
        float sh = (float) shift[bc];
        int o = bc * s;
        for (int i = 0; i < s; i++) os[o + i] = xs[xo + o + i] * sc + sh;
      });
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

  /** Layer norm: groups = sDiv = 1, weight i; group norm: the channel. */
  @Override
  public void rowBackward(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m, int groups,
      int sDiv, View gx, View gwOut, View gbOut) {
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
