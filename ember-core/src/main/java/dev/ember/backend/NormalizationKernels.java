package dev.ember.backend;

/**
 * The fused kernels of batch, instance, layer, group and RMS normalization: statistics, the affine pass
 * and the backward, over inputs viewed as [rows, m] (a row per normalized group) or [n, c, s] (batch norm's
 * channels). Inputs are contiguous F32 or F64 views (the caller makes them so); statistics, weights and
 * biases travel as double arrays. Every result is bitwise the same on any number of threads.
 */
public interface NormalizationKernels {
  /**
   * Per-row statistics of {@code x} viewed as [rows, m]: returns {mean, rstd}, mean null when {@code rms},
   * rstd = 1 / sqrt(var + eps) with the biased variance, or 1 / sqrt(mean(x^2) + eps) when {@code rms}.
   */
  double[][] rowStats(View x, int rows, int m, double eps, boolean rms);

  /**
   * {@link #rowStats} then {@link #rowAffine} with those statistics: the statistics and the output of layer and RMS
   * norm in one call, which a backend may fuse (the CPU normalizes each row while it is still in cache).
   */
  default double[][] rowNormalize(View x, int rows, int m, double eps, boolean rms, double[] w, double[] b, View out) {
    double[][] st = rowStats(x, rows, m, eps, rms);
    rowAffine(x, st[0], st[1], w, b, out, rows, m);
    return st;
  }

  /**
   * Group norm's forward of {@code x} viewed as [n, c, s], its c channels in {@code groups} groups: {@link #rowStats}
   * of each (image, group) row of (c / groups) * s elements, then {@link #channelAffine} with scale = rstd * w[ch]
   * and shift = b[ch] - mean * scale (computed in double; w and b may be null). Returns the rows' {mean, rstd}.
   * A backend may fuse the two (the CPU writes each row's output while the row is still in cache).
   */
  default double[][] groupNormalize(View x, int n, int c, int s, int groups, double eps, double[] w, double[] b,
      View out) {
    int cpg = c / groups;
    double[][] st = rowStats(x, n * groups, cpg * s, eps, false);
    double[] scale = new double[n * c];
    double[] shift = new double[n * c];
    for (int bi = 0; bi < n; bi++) {
      for (int ch = 0; ch < c; ch++) {
        int r = bi * groups + ch / cpg;
        double sc = st[1][r] * (w == null ? 1 : w[ch]);
        scale[bi * c + ch] = sc;
        shift[bi * c + ch] = (b == null ? 0 : b[ch]) - st[0][r] * sc;
      }
    }
    channelAffine(x, scale, shift, out, n, c, s);
    return st;
  }

  /** Per-channel mean and biased variance of {@code x} viewed as [n, c, s]: returns {mean, var}. */
  double[][] channelStats(View x, int n, int c, int s);

  /**
   * out[r, i] = (x[r, i] - mean[r]) * rstd[r] * w[i] + b[i] for x viewed as [rows, m]; mean, w and b may be
   * null (0, 1, 0). {@code out} is contiguous, of x's dtype, and every element is written.
   */
  void rowAffine(View x, double[] mean, double[] rstd, double[] w, double[] b, View out, int rows, int m);

  /** out[b, ch, i] = x[b, ch, i] * scale[b * c + ch] + shift[b * c + ch] for x and out viewed as [n, c, s]. */
  void channelAffine(View x, double[] scale, double[] shift, View out, int n, int c, int s);

  /**
   * Batch norm's backward per channel of x and g viewed as [n, c, s]. With {@code train} the batch statistics
   * depended on x: gx = w rstd (g - mean(g) - xhat mean(g xhat)); else gx = w rstd g. Writes gw[c] = sum(g xhat)
   * and gb[c] = sum(g) (contiguous F64 views) when non-null; gx (contiguous, every element written) may be null.
   */
  void channelBackward(View x, View g, double[] mean, double[] rstd, double[] w, int n, int c, int s, boolean train,
      View gx, View gw, View gb);

  /**
   * The backward of a per-row normalization of x and g viewed as [rows, m] (layer, group and RMS norm; mean
   * null for RMS): with gh = g w, gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), the mean(gh) term absent for
   * RMS. Element i of row r uses weight (r % groups) * (m / sDiv) + i / sDiv. Adds into gw and gb (contiguous
   * F64 views) when non-null; gx (contiguous, every element written) may be null.
   */
  void rowBackward(View x, View g, double[] mean, double[] rstd, double[] w, int rows, int m, int groups, int sDiv,
      View gx, View gw, View gb);

  /**
   * running = (1 - momentum) * running + momentum * stat for the 1-d view {@code running}, in place (batch
   * norm's running statistics); the caller bumps the storage version.
   */
  void updateRunning(View running, double[] stat, double momentum);

  /**
   * Rescales each distinct row of the 2-d view {@code weight} listed in {@code rows} whose p-norm exceeds
   * {@code maxNorm} to maxNorm / (norm + 1e-7), in place (embedding's max_norm). Returns whether any row changed.
   */
  boolean renormRows(View weight, long[] rows, double maxNorm, double p);
}
