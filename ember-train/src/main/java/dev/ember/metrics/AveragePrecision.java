package dev.ember.metrics;

/**
 * Average precision of binary scores, as scikit-learn's {@code average_precision_score}: the
 * precision at each threshold weighted by the recall gained there,
 * {@code sum_n (R_n - R_{n-1}) P_n}, without interpolation. {@code output} is [B] or [B, 1]
 * scores of the positive class, {@code target} [B] labels 0/1.
 */
public final class AveragePrecision extends RankingMetric<Double> {
  /** Binary average precision. */
  public AveragePrecision() {
    super(0);
  }

  @Override
  public String name() {
    return "average_precision";
  }

  @Override
  public Double compute() {
    requireSamples();
    return BinaryCurve.averagePrecision(seen.counts(0, 1));
  }

  @Override
  public AveragePrecision emptyCopy() {
    return new AveragePrecision();
  }
}
