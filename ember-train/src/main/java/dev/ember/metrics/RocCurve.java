package dev.ember.metrics;

/**
 * The receiver operating characteristic of binary scores, as scikit-learn 1.2's
 * {@code roc_curve(drop_intermediate=True)}: false- and true-positive rates at each distinct
 * threshold (decreasing), collinear points dropped, starting at (0, 0) with threshold
 * {@code max score + 1}. A rate whose class never occurred is NaN throughout (scikit-learn warns).
 * {@code output} is [B] or [B, 1] scores of the positive class, {@code target} [B] labels 0/1.
 */
public final class RocCurve extends RankingMetric<RocCurve.Result> {
  /** The curve: {@code fpr[i]}, {@code tpr[i]} are the rates for scores {@code >= thresholds[i]}. */
  public record Result(double[] fpr, double[] tpr, double[] thresholds) {}

  /** An empty binary ROC curve. */
  public RocCurve() {
    super(0);
  }

  @Override
  public String name() {
    return "roc_curve";
  }

  @Override
  public Result compute() {
    requireSamples();
    double[][] r = BinaryCurve.roc(seen.counts(0, 1));
    return new Result(r[0], r[1], r[2]);
  }

  @Override
  public RocCurve emptyCopy() {
    return new RocCurve();
  }
}
