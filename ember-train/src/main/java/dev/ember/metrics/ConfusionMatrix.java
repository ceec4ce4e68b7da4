package dev.ember.metrics;

import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Counts of (true class, predicted class) pairs, as scikit-learn's {@code confusion_matrix} with
 * {@code labels=range(numClasses)}: row {@code i} is the true class, column {@code j} the
 * prediction. {@code output} is read as in {@link Accuracy}: [B, C] scores (arg-max), [B] binary
 * scores (thresholded, two classes only) or [B] predicted labels; {@code target} is [B] labels.
 */
public final class ConfusionMatrix implements Metric<long[][]> {
  /** What {@link #normalized} divides each count by, as scikit-learn's {@code normalize}. */
  public enum Normalize {
    /** The row sum: each row gives the distribution of predictions for one true class. */
    TRUE,
    /** The column sum: each column gives the distribution of true classes for one prediction. */
    PRED,
    /** The total count. */
    ALL
  }

  private final int numClasses;
  private final double threshold;
  private final long[] counts;  // [true * numClasses + predicted]
  private long total;

  /** A {@code numClasses x numClasses} matrix; binary scores are thresholded at 0.5. */
  public ConfusionMatrix(int numClasses) {
    this(numClasses, 0.5);
  }

  /** A {@code numClasses x numClasses} matrix; [B] binary scores count as class 1 when {@code >= threshold}. */
  public ConfusionMatrix(int numClasses, double threshold) {
    if (numClasses < 2) {
      throw new IllegalArgumentException("ConfusionMatrix: numClasses must be >= 2, got " + numClasses);
    }
    if (Double.isNaN(threshold)) throw new IllegalArgumentException("ConfusionMatrix: threshold must not be NaN");
    this.numClasses = numClasses;
    this.threshold = threshold;
    this.counts = new long[numClasses * numClasses];
  }

  @Override
  public String name() {
    return "confusion_matrix";
  }

  /** The number of classes (rows and columns). */
  public int numClasses() {
    return numClasses;
  }

  /** The threshold applied to [B] binary scores. */
  public double threshold() {
    return threshold;
  }

  @Override
  public void update(Tensor output, Tensor target) {
    add("ConfusionMatrix.update", output, target);
  }

  /** {@link #update} reporting errors under {@code op} (the metric built on this matrix). */
  void add(String op, Tensor output, Tensor target) {
    if (output.dim() == 0 || output.dim() > 2) throw Inputs.shapeError(op, output, target);
    int[] p = Inputs.predictedLabels(op, output, target, numClasses, threshold);
    int[] y = Inputs.targetLabels(op, output, target, numClasses);
    for (int i = 0; i < p.length; i++) counts[y[i] * numClasses + p[i]]++;
    total += p.length;
  }

  /** The counts, a fresh {@code long[numClasses][numClasses]} (rows: true class). */
  @Override
  public long[][] compute() {
    long[][] m = new long[numClasses][numClasses];
    for (int i = 0; i < numClasses; i++) System.arraycopy(counts, i * numClasses, m[i], 0, numClasses);
    return m;
  }

  /** The counts divided by row, column or total sums; a zero sum gives zeros (as scikit-learn). */
  public double[][] normalized(Normalize by) {
    int c = numClasses;
    double[][] m = new double[c][c];
    for (int i = 0; i < c; i++) {
      for (int j = 0; j < c; j++) {
        long denom = switch (by) {
          case TRUE -> rowSum(i);
          case PRED -> colSum(j);
          case ALL -> total;
        };
        m[i][j] = denom == 0 ? 0.0 : (double) counts[i * c + j] / denom;
      }
    }
    return m;
  }

  /** Samples seen since the last reset. */
  public long total() {
    return total;
  }

  long count(int trueClass, int predicted) {
    return counts[trueClass * numClasses + predicted];
  }

  /** Samples whose true class is {@code c} (its support). */
  long rowSum(int c) {
    long s = 0;
    for (int j = 0; j < numClasses; j++) s += counts[c * numClasses + j];
    return s;
  }

  /** Samples predicted as {@code c}. */
  long colSum(int c) {
    long s = 0;
    for (int i = 0; i < numClasses; i++) s += counts[i * numClasses + c];
    return s;
  }

  @Override
  public void reset() {
    java.util.Arrays.fill(counts, 0);
    total = 0;
  }

  @Override
  public void merge(Metric<long[][]> other) {
    ConfusionMatrix o = Merges.sameKind(this, other, ConfusionMatrix.class);
    mergeCounts("ConfusionMatrix.merge", o);
  }

  void mergeCounts(String op, ConfusionMatrix o) {
    if (o.numClasses != numClasses || Double.compare(o.threshold, threshold) != 0) {
      throw new IllegalArgumentException(op + ": configurations differ (numClasses " + numClasses + " vs "
          + o.numClasses + ", threshold " + threshold + " vs " + o.threshold + ")");
    }
    for (int i = 0; i < counts.length; i++) counts[i] += o.counts[i];
    total += o.total;
  }

  @Override
  public ConfusionMatrix emptyCopy() {
    return new ConfusionMatrix(numClasses, threshold);
  }

  /** {@code counts}: the matrix row-major as a long[numClasses * numClasses] (rows: true class). */
  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("counts", counts.clone());
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    loadCounts(new StateReader(this, state, "counts"));
  }

  /** Loads {@code counts} through {@code r} (which names the metric built on this matrix). */
  void loadCounts(StateReader r) {
    long[] c = r.longs("counts", counts.length, "for " + numClasses + " x " + numClasses + " classes");
    r.requireNonNegative("counts", c);
    long t = 0;
    for (long v : c) {
      t += v;
      if (t < 0) throw r.fail("'counts' sum to more than " + Long.MAX_VALUE);
    }
    System.arraycopy(c, 0, counts, 0, c.length);
    total = t;
  }
}
