package dev.ember.metrics;

/**
 * Mean absolute error {@code mean |output - target|}, as scikit-learn's {@code mean_absolute_error}.
 * {@code output} and {@code target} are [B] or [B, D] of the same shape ([B] against [B, 1] counts as
 * one output); D outputs are averaged uniformly, as {@code multioutput='uniform_average'}.
 */
public final class MeanAbsoluteError extends RegressionMetric {
  private double[] absSum;

  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public MeanAbsoluteError() {}

  @Override
  public String name() {
    return "mae";
  }

  @Override
  void allocate(int d) {
    absSum = zeros(d);
  }

  @Override
  void accumulate(double[] o, double[] t, int b, int d) {
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < d; j++) absSum[j] += Math.abs(o[i * d + j] - t[i * d + j]);
    }
  }

  @Override
  double value(int j) {
    return absSum[j] / n;
  }

  @Override
  void mergeSums(RegressionMetric other) {
    add(absSum, ((MeanAbsoluteError) other).absSum);
  }

  @Override
  String[] sumKeys() {
    return new String[] {"abs_sum"};
  }

  @Override
  double[][] sums() {
    return new double[][] {absSum};
  }

  @Override
  public MeanAbsoluteError emptyCopy() {
    return new MeanAbsoluteError();
  }
}
