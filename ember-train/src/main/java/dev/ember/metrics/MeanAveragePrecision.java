package dev.ember.metrics;

/**
 * Mean average precision over classes, one-vs-rest: for each class its column of scores ranked
 * against "target is this class", then the unweighted mean, as scikit-learn's
 * {@code average_precision_score(label_binarize(target, classes=range(C)), output, average='macro')}.
 * A class that never occurs in the targets scores 0 and still counts in the mean.
 * {@code output} is [B, numClasses] scores, {@code target} [B] labels.
 */
public final class MeanAveragePrecision extends RankingMetric<Double> {
  /** Mean average precision over {@code numClasses >= 2} classes. */
  public MeanAveragePrecision(int numClasses) {
    super(check(numClasses));
  }

  private static int check(int numClasses) {
    if (numClasses < 2) {
      throw new IllegalArgumentException("MeanAveragePrecision: numClasses must be >= 2, got " + numClasses);
    }
    return numClasses;
  }

  /** The number of classes. */
  public int numClasses() {
    return numClasses;
  }

  @Override
  public String name() {
    return "map";
  }

  /** The per-class average precisions. */
  public double[] perClass() {
    requireSamples();
    double[] ap = new double[numClasses];
    for (int c = 0; c < numClasses; c++) ap[c] = BinaryCurve.averagePrecision(seen.counts(c, c));
    return ap;
  }

  @Override
  public Double compute() {
    double s = 0;
    for (double v : perClass()) s += v;
    return s / numClasses;
  }

  @Override
  public MeanAveragePrecision emptyCopy() {
    return new MeanAveragePrecision(numClasses);
  }
}
