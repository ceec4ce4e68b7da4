package dev.ember.metrics;

import java.util.Arrays;

/**
 * Every score and label a ranking metric has seen, kept exactly (curves need all points): scores
 * row-major with {@code columns} per sample, one label per sample. Grows by doubling.
 */
final class ScoreBuffer {
  final int columns;
  private double[] scores = new double[0];
  private int[] labels = new int[0];
  private int size;

  ScoreBuffer(int columns) {
    this.columns = columns;
  }

  int size() {
    return size;
  }

  void append(double[] s, int[] y) {
    assert s.length == (long) y.length * columns;
    ensure(size + y.length);
    System.arraycopy(s, 0, scores, size * columns, s.length);
    System.arraycopy(y, 0, labels, size, y.length);
    size += y.length;
  }

  void appendAll(ScoreBuffer o) {
    append(Arrays.copyOf(o.scores, o.size * o.columns), Arrays.copyOf(o.labels, o.size));
  }

  private void ensure(int n) {
    if (n <= labels.length) return;
    if ((long) n * columns > Integer.MAX_VALUE - 8) {
      throw new IllegalStateException("ScoreBuffer: more than " + (Integer.MAX_VALUE - 8) / columns
          + " samples of " + columns + " scores do not fit in one array");
    }
    int cap = (int) Math.min(Math.max(n, 2L * labels.length), (Integer.MAX_VALUE - 8) / columns);
    scores = Arrays.copyOf(scores, cap * columns);
    labels = Arrays.copyOf(labels, cap);
  }

  /** A copy of the scores seen, row-major [size, columns]. */
  double[] scores() {
    return Arrays.copyOf(scores, size * columns);
  }

  /** A copy of the labels seen, widened to long. */
  long[] labels() {
    long[] out = new long[size];
    for (int i = 0; i < size; i++) out[i] = labels[i];
    return out;
  }

  /** Replaces the contents with {@code s} (row-major [y.length, columns]) and {@code y}, taken over as they are. */
  void replace(double[] s, int[] y) {
    assert s.length == (long) y.length * columns;
    scores = s;
    labels = y;
    size = y.length;
  }

  void clear() {
    scores = new double[0];
    labels = new int[0];
    size = 0;
  }

  /** Count of samples with label {@code c}. */
  long count(int c) {
    long n = 0;
    for (int i = 0; i < size; i++) if (labels[i] == c) n++;
    return n;
  }

  /**
   * The distinct thresholds of column {@code column}, in decreasing order, with the cumulative
   * counts of samples scoring {@code >=} each that are positive (label {@code positive}) or not:
   * scikit-learn's {@code _binary_clf_curve}. Positives and negatives are sorted separately with
   * the primitive sort and merged from the top.
   */
  BinaryCurve.Counts counts(int column, int positive) {
    int np = (int) count(positive);
    double[] pos = new double[np];
    double[] neg = new double[size - np];
    int a = 0;
    int b = 0;
    for (int i = 0; i < size; i++) {
      double s = scores[i * columns + column];
      if (labels[i] == positive) pos[a++] = s;
      else neg[b++] = s;
    }
    Arrays.sort(pos);
    Arrays.sort(neg);
    return BinaryCurve.counts(pos, neg);
  }
}
