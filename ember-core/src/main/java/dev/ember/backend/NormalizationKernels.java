package dev.ember.backend;

/**
 * The fused kernels of batch, instance, layer, group and RMS normalization: statistics, the affine pass
 * and the backward, over inputs viewed as [rows, m] (a row per normalized group) or [n, c, s] (batch norm's
 * channels). Inputs are contiguous F32 or F64 views (the caller makes them so); statistics, weights and
 * biases travel as double arrays. Every result is bitwise the same on any number of threads.
 *
 * <p>The {@code ...Into} and {@code ...From} methods are the same passes with everything in views: the statistics
 * (contiguous F64 views the forward fills and the backward reads), the weights and biases (contiguous views of x's
 * dtype, the parameters themselves) and the running statistics. A device backend overrides them with kernels that
 * keep all of it on the device, so a normalization never waits for a copy to the host; their defaults call the
 * double-array methods on views the host can read (the CPU backend, and a device's host fallback, which hands its
 * families host copies), with the arithmetic the double-array caller does, so they give its bits.
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
  // ================================================================== statistics in views

  /**
   * {@link #rowNormalize} with the weight and bias in views ({@code w}, {@code b}: m elements of x's dtype, may be
   * null) and the statistics written into {@code mean} and {@code rstd} (contiguous F64, {@code rows} elements;
   * mean null when {@code rms}).
   */
  default void rowNormalizeInto(View x, int rows, int m, double eps, boolean rms, View w, View b, View out, View mean,
      View rstd) {
    double[][] st = rowNormalize(x, rows, m, eps, rms, hostDoubles(w), hostDoubles(b), out);
    if (mean != null && st[0] != null) setHostDoubles(mean, st[0]);
    setHostDoubles(rstd, st[1]);
  }

  /**
   * {@link #groupNormalize} with the weight and bias in views (c elements of x's dtype, may be null) and the rows'
   * statistics written into {@code mean} and {@code rstd} (contiguous F64, n * groups elements).
   */
  default void groupNormalizeInto(View x, int n, int c, int s, int groups, double eps, View w, View b, View out,
      View mean, View rstd) {
    double[][] st = groupNormalize(x, n, c, s, groups, eps, hostDoubles(w), hostDoubles(b), out);
    setHostDoubles(mean, st[0]);
    setHostDoubles(rstd, st[1]);
  }

  /**
   * Batch norm's forward of x viewed as [n, c, s] into {@code out}, the per-channel statistics it normalized with
   * written into {@code mean} and {@code rstd} (contiguous F64, c elements) for the backward. With {@code train}:
   * the batch's mean and biased variance var ({@link #channelStats}), rstd = 1 / sqrt(var + eps), and, when
   * {@code runningMean} is given, {@link #updateRunning} of runningMean with the mean and of {@code runningVar} with
   * the unbiased variance var * count / (count - 1), count = n * s. Else mean = runningMean and rstd = 1 /
   * sqrt(runningVar + eps). Then {@link #channelAffine} with scale = rstd * w and shift = b - mean * scale (in
   * double; w and b, c elements of x's dtype, may be null). The running statistics are 1-d views of x's dtype; the
   * caller bumps their storage versions.
   */
  default void batchNormalizeInto(View x, int n, int c, int s, boolean train, double eps, double momentum,
      View runningMean, View runningVar, View w, View b, View out, View mean, View rstd) {
    double[] mu;
    double[] var;
    if (train) {
      double[][] st = channelStats(x, n, c, s);
      mu = st[0];
      var = st[1];
    } else {
      mu = hostDoubles(runningMean);
      var = hostDoubles(runningVar);
    }
    double[] rs = new double[c];
    for (int ch = 0; ch < c; ch++) rs[ch] = 1 / Math.sqrt(var[ch] + eps);
    double[][] ss = channelScaleShift(mu, rs, hostDoubles(w), hostDoubles(b), n);
    channelAffine(x, ss[0], ss[1], out, n, c, s);
    if (train && runningMean != null) {
      long count = (long) n * s;
      double[] unbiased = new double[c];
      for (int ch = 0; ch < c; ch++) unbiased[ch] = var[ch] * count / (count - 1);
      updateRunning(runningMean, mu, momentum);
      updateRunning(runningVar, unbiased, momentum);
    }
    setHostDoubles(mean, mu);
    setHostDoubles(rstd, rs);
  }

  /** {@link #channelBackward} with the statistics (F64) and the weight (x's dtype, may be null) in views. */
  default void channelBackwardFrom(View x, View g, View mean, View rstd, View w, int n, int c, int s, boolean train,
      View gx, View gw, View gb) {
    channelBackward(x, g, hostDoubles(mean), hostDoubles(rstd), hostDoubles(w), n, c, s, train, gx, gw, gb);
  }

  /**
   * {@link #rowBackward} with the statistics (F64; mean null for RMS) and the weight (x's dtype, may be null) in
   * views.
   */
  default void rowBackwardFrom(View x, View g, View mean, View rstd, View w, int rows, int m, int groups, int sDiv,
      View gx, View gw, View gb) {
    rowBackward(x, g, hostDoubles(mean), hostDoubles(rstd), hostDoubles(w), rows, m, groups, sDiv, gx, gw, gb);
  }

  /** The elements of a host-readable view (contiguous, or 1-d with any stride) as doubles; null for null. */
  /**
   * Batch norm's per-(image, channel) affine for {@link #channelAffine} from the c channels' mean and rstd and the
   * weight and bias (c values each, may be null): scale = rstd * w and shift = b - mean * scale, in double, the same
   * for each of the n images.
   */
  static double[][] channelScaleShift(double[] mean, double[] rstd, double[] w, double[] b, int n) {
    int c = mean.length;
    double[] scale = new double[n * c];
    double[] shift = new double[n * c];
    for (int ch = 0; ch < c; ch++) {
      double sc = rstd[ch] * (w == null ? 1 : w[ch]);
      double sh = (b == null ? 0 : b[ch]) - mean[ch] * sc;
      for (int bi = 0; bi < n; bi++) {
        scale[bi * c + ch] = sc;
        shift[bi * c + ch] = sh;
      }
    }
    return new double[][] {scale, shift};
  }

  private static double[] hostDoubles(View v) {
    if (v == null) return null;
    int count = (int) v.numel();
    int step = v.isContiguous() ? 1 : v.rank() == 1 ? v.stridesRef()[0] : 0;
    if (step == 0) {
      throw new IllegalArgumentException("NormalizationKernels: a statistic, weight or bias view must be contiguous"
          + " or 1-d, got shape " + java.util.Arrays.toString(v.shapeRef()));
    }
    double[] a = new double[count];
    for (int i = 0; i < count; i++) a[i] = v.storage().getDouble(v.offset() + i * step);
    return a;
  }

  /** Writes {@code values} into the contiguous host-writable view {@code v}. */
  private static void setHostDoubles(View v, double[] values) {
    if (v.numel() != values.length || !v.isContiguous()) {
      throw new IllegalArgumentException("NormalizationKernels: a statistics view must be contiguous with "
          + values.length + " elements, got shape " + java.util.Arrays.toString(v.shapeRef()));
    }
    for (int i = 0; i < values.length; i++) v.storage().setDouble(v.offset() + i, values[i]);
  }
}
