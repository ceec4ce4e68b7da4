package dev.ember.metrics;

/**
 * Precision and recall of binary scores at each distinct threshold, as scikit-learn 1.2's
 * {@code precision_recall_curve}: thresholds increasing, and one last point (precision 1,
 * recall 0) with no threshold. With no positive targets recall is 1 everywhere (scikit-learn
 * warns). {@code output} is [B] or [B, 1] scores of the positive class, {@code target} [B] 0/1.
 */
public final class PrecisionRecallCurve extends RankingMetric<PrecisionRecallCurve.Result> {
  /** The curve: {@code precision[i]}, {@code recall[i]} hold for scores {@code >= thresholds[i]}. */
  public record Result(double[] precision, double[] recall, double[] thresholds) {}

  /** An empty binary precision-recall curve. */
  public PrecisionRecallCurve() {
    super(0);
  }

  @Override
  public String name() {
    return "pr_curve";
  }

  @Override
  public Result compute() {
    requireSamples();
    double[][] r = BinaryCurve.precisionRecall(seen.counts(0, 1));
    return new Result(r[0], r[1], r[2]);
  }

  @Override
  public PrecisionRecallCurve emptyCopy() {
    return new PrecisionRecallCurve();
  }
}
