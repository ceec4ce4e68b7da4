package dev.ember.metrics;

import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * Shared body of {@link Precision}, {@link Recall}, {@link F1Score} and {@link FBetaScore}: a
 * streaming {@link ConfusionMatrix} and scikit-learn's {@code precision_recall_fscore_support}
 * with {@code labels=range(numClasses)} and {@code zero_division='warn'} (an undefined ratio is 0).
 */
abstract sealed class ClassificationScore implements Metric<Double>
    permits Precision, Recall, FBetaScore, F1Score {
  final int numClasses;
  final Average average;
  final double threshold;
  final ConfusionMatrix counts;

  ClassificationScore(String type, int numClasses, Average average, double threshold) {
    if (average == null) throw new IllegalArgumentException(type + ": average must not be null");
    if (numClasses < 2) throw new IllegalArgumentException(type + ": numClasses must be >= 2, got " + numClasses);
    if (Double.isNaN(threshold)) throw new IllegalArgumentException(type + ": threshold must not be NaN");
    if (average == Average.BINARY && numClasses != 2) {
      throw new IllegalArgumentException(type + ": average BINARY needs numClasses 2, got " + numClasses
          + "; hint: use MICRO, MACRO or WEIGHTED for more classes");
    }
    this.numClasses = numClasses;
    this.average = average;
    this.threshold = threshold;
    this.counts = new ConfusionMatrix(numClasses, threshold);
  }

  /** The per-class (or micro-summed) score from its precision and recall. */
  abstract double combine(double precision, double recall);

  /** The metric name without the average suffix ({@code precision}, {@code f1}, ...). */
  abstract String baseName();

  /** {@code <base>} for BINARY, {@code <base>_<average>} otherwise ({@code f1_macro}). */
  @Override
  public String name() {
    return average == Average.BINARY ? baseName() : baseName() + "_" + average.label();
  }

  /** The number of classes. */
  public int numClasses() {
    return numClasses;
  }

  /** How per-class scores are combined. */
  public Average average() {
    return average;
  }

  @Override
  public void update(Tensor output, Tensor target) {
    counts.add(getClass().getSimpleName() + ".update", output, target);
  }

  @Override
  public Double compute() {
    if (counts.total() == 0) {
      throw new IllegalStateException(name() + ".compute: no samples seen since the last reset");
    }
    int c = numClasses;
    return switch (average) {
      case BINARY -> classScore(1);
      case MICRO -> {
        long tp = 0;
        for (int i = 0; i < c; i++) tp += counts.count(i, i);
        long all = counts.total();  // every sample is one prediction and one target
        yield combine(divide(tp, all), divide(tp, all));
      }
      case MACRO -> {
        double sum = 0;
        for (int i = 0; i < c; i++) sum += classScore(i);
        yield sum / c;
      }
      case WEIGHTED -> {
        double sum = 0;
        long weights = 0;
        for (int i = 0; i < c; i++) {
          long support = counts.rowSum(i);
          sum += classScore(i) * support;
          weights += support;
        }
        yield sum / weights;
      }
    };
  }

  private double classScore(int i) {
    long tp = counts.count(i, i);
    return combine(divide(tp, counts.colSum(i)), divide(tp, counts.rowSum(i)));
  }

  private static double divide(long num, long den) {
    return den == 0 ? 0.0 : (double) num / den;
  }

  @Override
  public void reset() {
    counts.reset();
  }

  @Override
  public void merge(Metric<Double> other) {
    ClassificationScore o = Merges.sameKind(this, other, getClass());
    String op = getClass().getSimpleName() + ".merge";
    if (o.average != average || !sameExtra(o)) {
      throw new IllegalArgumentException(op + ": configurations differ (" + name() + " vs " + o.name() + ")");
    }
    counts.mergeCounts(op, o.counts);
  }

  /** The confusion matrix: {@code counts}, as {@link ConfusionMatrix#stateDict}. */
  @Override
  public Map<String, Object> stateDict() {
    return counts.stateDict();
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    counts.loadCounts(new StateReader(this, state, "counts"));
  }

  /** Whether subclass-specific settings (beta) match. */
  boolean sameExtra(ClassificationScore o) {
    return true;
  }
}
