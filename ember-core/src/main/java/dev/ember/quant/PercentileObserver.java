package dev.ember.quant;

/**
 * Clips the observed range at a percentile: the values are counted into {@link HistogramObserver}'s running histogram
 * (same bins, same re-binning when the range grows), and {@link #calculateQParams} takes the {@code (100 - p)}-th
 * and {@code p}-th percentiles of that histogram as the range instead of torch's L2 search, then
 * {@link Observer}'s formulas. The outliers beyond the percentiles saturate, and the values between them get a finer
 * scale. torch has no such observer; TensorRT's percentile calibration is the same idea.
 *
 * <p>The percentile of the histogram: with {@code c(k)} the count of bins {@code 0..k} (float64) and {@code N} the
 * total, the quantile {@code q} falls in the first bin {@code k} with {@code c(k) >= q N}, at
 * {@code min + width * (k + (q N - c(k - 1)) / count(k))}, the bin's values taken as spread evenly over it. While the
 * range has not grown (no re-binning), that bin holds the nearest-rank percentile (the {@code ceil(q N)}-th smallest
 * value), so the two are within one bin width ({@code (max - min) / bins}) of each other; {@code p = 100} gives the
 * histogram's own range.
 */
public class PercentileObserver extends HistogramObserver {
  private final double percentile;

  /** Clips at {@code percentile} (in (50, 100], e.g. 99.99) with 2048 bins, per-tensor affine quint8. */
  public PercentileObserver(double percentile) {
    this(percentile, DEFAULT_BINS, QScheme.perTensorAffine(QDType.QUINT8), false);
  }

  public PercentileObserver(double percentile, int bins, QScheme scheme, boolean reduceRange) {
    super(bins, DEFAULT_UPSAMPLE_RATE, scheme, reduceRange);
    this.percentile = checkPercentile(percentile);
  }

  public PercentileObserver(double percentile, int bins, QScheme scheme, int quantMin, int quantMax) {
    super(bins, DEFAULT_UPSAMPLE_RATE, scheme, quantMin, quantMax);
    this.percentile = checkPercentile(percentile);
  }

  private static double checkPercentile(double p) {
    if (!(p > 50 && p <= 100)) {
      throw new IllegalArgumentException("PercentileObserver: percentile must be in (50, 100], got " + p
          + "; the range is clipped at the (100 - p)-th and p-th percentiles");
    }
    return p;
  }

  public double percentile() {
    return percentile;
  }

  /** The {@code (100 - p)}-th and {@code p}-th percentiles of the histogram: the range the parameters come from. */
  @Override
  public float[] searchRange() {
    requireObserved();
    if (minVal == maxVal) return new float[] {minVal, maxVal};
    return new float[] {quantile(1 - percentile / 100), quantile(percentile / 100)};
  }

  /** The {@code q}-quantile (q in [0, 1]) of the histogram, interpolated within its bin. */
  public float quantile(double q) {
    requireObserved();
    if (!(q >= 0 && q <= 1)) throw new IllegalArgumentException("PercentileObserver: quantile must be in [0, 1], got " + q);
    int bins = histogram.length;
    double total = 0;
    for (float c : histogram) total += c;
    double width = ((double) maxVal - minVal) / bins;
    double target = q * total;
    double before = 0;
    for (int k = 0; k < bins; k++) {
      double count = histogram[k];
      if (count > 0 && before + count >= target) {
        double frac = Math.min(1, Math.max(0, (target - before) / count));
        return (float) (minVal + width * (k + frac));
      }
      before += count;
    }
    return maxVal;
  }

  @Override
  public QParams calculateQParams() {
    if (minVal == Float.POSITIVE_INFINITY && maxVal == Float.NEGATIVE_INFINITY) return super.calculateQParams();
    float[] r = searchRange();
    return qparams(new float[] {r[0]}, new float[] {r[1]}, -1);
  }
}
