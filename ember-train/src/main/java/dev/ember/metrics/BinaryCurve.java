package dev.ember.metrics;

/**
 * The arithmetic of scikit-learn 1.2's binary ranking metrics ({@code roc_curve},
 * {@code precision_recall_curve}, {@code auc}, {@code average_precision_score}) on cumulative
 * counts, in the same order of operations so that results agree to rounding.
 */
final class BinaryCurve {
  private BinaryCurve() {}

  /**
   * At each distinct threshold (decreasing), how many negatives ({@code fps}) and positives
   * ({@code tps}) score at or above it.
   */
  record Counts(long[] fps, long[] tps, double[] thresholds) {
    int length() {
      return thresholds.length;
    }
  }

  /** Merges ascending-sorted positive and negative scores from the top into {@link Counts}. */
  static Counts counts(double[] pos, double[] neg) {
    int n = pos.length + neg.length;
    long[] fps = new long[n];
    long[] tps = new long[n];
    double[] thr = new double[n];
    int i = pos.length - 1;
    int j = neg.length - 1;
    long tp = 0;
    long fp = 0;
    int m = 0;
    while (i >= 0 || j >= 0) {
      double v = i < 0 ? neg[j] : j < 0 ? pos[i] : Math.max(pos[i], neg[j]);
      while (i >= 0 && pos[i] == v) {
        tp++;
        i--;
      }
      while (j >= 0 && neg[j] == v) {
        fp++;
        j--;
      }
      fps[m] = fp;
      tps[m] = tp;
      thr[m] = v;
      m++;
    }
    return new Counts(java.util.Arrays.copyOf(fps, m), java.util.Arrays.copyOf(tps, m),
        java.util.Arrays.copyOf(thr, m));
  }

  /**
   * {@code roc_curve(drop_intermediate=True)}: {fpr, tpr, thresholds}, starting at (0, 0) with
   * threshold {@code max + 1}; a rate with no samples of its class is NaN throughout.
   */
  static double[][] roc(Counts c) {
    int m = c.length();
    boolean[] keep = new boolean[m];
    int kept = 0;
    for (int k = 0; k < m; k++) {
      // keep the ends and every corner (nonzero second difference of fps or tps)
      keep[k] = m <= 2 || k == 0 || k == m - 1
          || c.fps[k + 1] - 2 * c.fps[k] + c.fps[k - 1] != 0
          || c.tps[k + 1] - 2 * c.tps[k] + c.tps[k - 1] != 0;
      if (keep[k]) kept++;
    }
    long[] fps = new long[kept + 1];
    long[] tps = new long[kept + 1];
    double[] thr = new double[kept + 1];
    int o = 1;
    for (int k = 0; k < m; k++) {
      if (!keep[k]) continue;
      fps[o] = c.fps[k];
      tps[o] = c.tps[k];
      thr[o] = c.thresholds[k];
      o++;
    }
    thr[0] = thr[1] + 1;
    return new double[][] {rates(fps), rates(tps), thr};
  }

  private static double[] rates(long[] cum) {
    long last = cum[cum.length - 1];
    double[] r = new double[cum.length];
    for (int k = 0; k < r.length; k++) r[k] = last <= 0 ? Double.NaN : (double) cum[k] / last;
    return r;
  }

  /** Trapezoidal area under y(x), x increasing ({@code np.trapz}). */
  static double trapz(double[] x, double[] y) {
    double s = 0;
    for (int k = 0; k + 1 < x.length; k++) s += (x[k + 1] - x[k]) * (y[k + 1] + y[k]) / 2.0;
    return s;
  }

  /**
   * {@code precision_recall_curve}: {precision, recall, thresholds} with thresholds increasing,
   * precision ending in 1 and recall in 0; with no positives, recall is 1 at every threshold.
   */
  static double[][] precisionRecall(Counts c) {
    int m = c.length();
    double[] precision = new double[m + 1];
    double[] recall = new double[m + 1];
    double[] thr = new double[m];
    long lastTp = c.tps[m - 1];
    for (int k = 0; k < m; k++) {
      int r = m - 1 - k;  // reversed: lowest threshold first
      long ps = c.tps[k] + c.fps[k];
      precision[r] = ps == 0 ? 0.0 : (double) c.tps[k] / ps;
      recall[r] = lastTp == 0 ? 1.0 : (double) c.tps[k] / lastTp;
      thr[r] = c.thresholds[k];
    }
    precision[m] = 1;
    recall[m] = 0;
    return new double[][] {precision, recall, thr};
  }

  /** {@code average_precision_score}: {@code -sum(diff(recall) * precision[:-1])}. */
  static double averagePrecision(Counts c) {
    double[][] pr = precisionRecall(c);
    double[] p = pr[0];
    double[] r = pr[1];
    double s = 0;
    for (int k = 0; k + 1 < r.length; k++) s += (r[k + 1] - r[k]) * p[k];
    return 0.0 - s;  // -s, but +0.0 rather than -0.0 when nothing was gained
  }
}
