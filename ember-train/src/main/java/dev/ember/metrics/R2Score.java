package dev.ember.metrics;

/**
 * Coefficient of determination {@code 1 - sum (t - o)^2 / sum (t - mean t)^2}, as scikit-learn's
 * {@code r2_score} (with {@code force_finite=True}): an output whose targets are constant scores
 * 1 when predicted exactly and 0 otherwise, and fewer than two samples give NaN.
 * {@code output} and {@code target} are [B] or [B, D] of the same shape; D outputs are averaged
 * uniformly, as {@code multioutput='uniform_average'}.
 *
 * <p>The spread of the targets is accumulated per batch (two passes) and combined with Chan et
 * al.'s pairwise update ({@code M2 = M2a + M2b + delta^2 na nb / n}), not as
 * {@code sum t^2 - n mean^2}, which cancels catastrophically when the mean is large against the
 * spread. Targets are shifted by the first one seen, so that the running mean, whose rounding
 * enters the update linearly, is held at the scale of the spread rather than of the targets.
 */
public final class R2Score extends RegressionMetric {
  private double[] sqErr;
  private double[] shift;  // the first target of each output; means are of (target - shift)
  private double[] mean;
  private double[] m2;

  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public R2Score() {}

  @Override
  public String name() {
    return "r2";
  }

  @Override
  void allocate(int d) {
    sqErr = zeros(d);
    shift = zeros(d);
    mean = zeros(d);
    m2 = zeros(d);
  }

  @Override
  void accumulate(double[] o, double[] t, int b, int d) {
    SquaredErrorMetric.squaredErrors(sqErr, o, t, b, d);
    if (n == 0) System.arraycopy(t, 0, shift, 0, d);
    double[] bm = zeros(d);
    for (int i = 0; i < b; i++) for (int j = 0; j < d; j++) bm[j] += t[i * d + j] - shift[j];
    for (int j = 0; j < d; j++) bm[j] /= b;
    double[] bm2 = zeros(d);
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < d; j++) {
        double e = (t[i * d + j] - shift[j]) - bm[j];
        bm2[j] += e * e;
      }
    }
    combine(bm, bm2, b);
  }

  private void combine(double[] bMean, double[] bM2, long nb) {
    long na = n;
    double total = na + nb;
    for (int j = 0; j < mean.length; j++) {
      double delta = bMean[j] - mean[j];
      mean[j] += delta * (nb / total);
      m2[j] += bM2[j] + delta * delta * (na * (nb / total));
    }
  }

  @Override
  double value(int j) {
    if (n < 2) return Double.NaN;
    if (sqErr[j] == 0) return 1.0;
    if (m2[j] == 0) return 0.0;
    return 1 - sqErr[j] / m2[j];
  }

  @Override
  void mergeSums(RegressionMetric other) {
    R2Score o = (R2Score) other;
    add(sqErr, o.sqErr);
    if (n == 0) System.arraycopy(o.shift, 0, shift, 0, shift.length);
    double[] otherMean = zeros(mean.length);  // other's mean in this one's shifted coordinates
    for (int j = 0; j < mean.length; j++) otherMean[j] = o.mean[j] + (o.shift[j] - shift[j]);
    combine(otherMean, o.m2, o.n);
  }

  @Override
  String[] sumKeys() {
    return new String[] {"sq_err", "shift", "mean", "m2"};
  }

  @Override
  double[][] sums() {
    return new double[][] {sqErr, shift, mean, m2};
  }

  @Override
  public R2Score emptyCopy() {
    return new R2Score();
  }
}
