package dev.ember.metrics;

/** Mean absolute error {@code mean |output - target|}, as scikit-learn's {@code mean_absolute_error}; see {@link RegressionMetric} for shapes. */
public final class MeanAbsoluteError extends RegressionMetric {
  private double[] absSum;

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
  public MeanAbsoluteError emptyCopy() {
    return new MeanAbsoluteError();
  }
}
