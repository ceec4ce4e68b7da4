package dev.ember.metrics;

/**
 * Area under the ROC curve, as scikit-learn's {@code roc_auc_score}. Binary ({@link #RocAuc()}):
 * {@code output} is [B] or [B, 1] scores of the positive class, {@code target} [B] labels 0/1.
 * Multiclass ({@link #RocAuc(int, Average)}): one-vs-rest, {@code multi_class='ovr'}; each column
 * of [B, C] scores is ranked against "target is this class" (the columns are used as given, so
 * pass probabilities to match scikit-learn, which requires rows summing to 1), and the per-class
 * areas are averaged unweighted ({@link Average#MACRO}) or by class support
 * ({@link Average#WEIGHTED}). The area is undefined when a class is missing from the targets (or,
 * binary, when only one class occurs); {@link #compute} then throws, as scikit-learn does.
 */
public final class RocAuc extends RankingMetric<Double> {
  private final Average average;

  /** Binary ROC AUC. */
  public RocAuc() {
    super(0);
    this.average = Average.BINARY;
  }

  /** One-vs-rest ROC AUC over {@code numClasses >= 2} classes, averaged MACRO or WEIGHTED. */
  public RocAuc(int numClasses, Average average) {
    super(checkClasses(numClasses));
    if (average != Average.MACRO && average != Average.WEIGHTED) {
      throw new IllegalArgumentException("RocAuc: one-vs-rest averaging must be MACRO or WEIGHTED, got " + average);
    }
    this.average = average;
  }

  private static int checkClasses(int numClasses) {
    if (numClasses < 2) throw new IllegalArgumentException("RocAuc: numClasses must be >= 2, got " + numClasses);
    return numClasses;
  }

  /** {@code roc_auc}, or {@code roc_auc_<average>} for one-vs-rest. */
  @Override
  public String name() {
    return numClasses == 0 ? "roc_auc" : "roc_auc_" + average.label();
  }

  @Override
  public Double compute() {
    String op = requireSamples();
    if (numClasses == 0) {
      long pos = seen.count(1);
      if (pos == 0 || pos == seen.size()) {
        throw new IllegalStateException(op + ": only one class present in the targets (" + (pos == 0 ? 0 : 1)
            + "); ROC AUC is undefined");
      }
      return area(0, 1);
    }
    double sum = 0;
    double weights = 0;
    for (int c = 0; c < numClasses; c++) {
      long support = seen.count(c);
      if (support == 0 || support == seen.size()) {
        throw new IllegalStateException(op + ": class " + c + (support == 0 ? " never occurs" : " is the only class")
            + " in the targets (" + seen.size() + " samples); its one-vs-rest ROC AUC is undefined");
      }
      double a = area(c, c);
      if (average == Average.WEIGHTED) {
        sum += a * support;
        weights += support;
      } else {
        sum += a;
        weights += 1;
      }
    }
    return sum / weights;
  }

  private double area(int column, int positive) {
    double[][] r = BinaryCurve.roc(seen.counts(column, positive));
    return BinaryCurve.trapz(r[0], r[1]);
  }

  @Override
  public void merge(Metric<Double> other) {
    if (other instanceof RocAuc o && o != this && o.average != average) {
      throw new IllegalArgumentException("RocAuc.merge: configurations differ (" + name() + " vs " + o.name() + ")");
    }
    super.merge(other);
  }

  @Override
  public RocAuc emptyCopy() {
    return numClasses == 0 ? new RocAuc() : new RocAuc(numClasses, average);
  }
}
