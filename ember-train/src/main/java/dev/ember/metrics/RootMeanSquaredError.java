package dev.ember.metrics;

/**
 * Root mean squared error, as scikit-learn 1.2's {@code mean_squared_error(squared=False)}: the
 * square root is taken per output, then the outputs are averaged uniformly. {@code output} and
 * {@code target} are [B] or [B, D] of the same shape ([B] against [B, 1] counts as one output).
 */
public final class RootMeanSquaredError extends RegressionMetric {
  private double[] sqSum;

  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public RootMeanSquaredError() {}

  @Override
  public String name() {
    return "rmse";
  }

  @Override
  void allocate(int d) {
    sqSum = zeros(d);
  }

  @Override
  void accumulate(double[] o, double[] t, int b, int d) {
    MeanSquaredError.squaredErrors(sqSum, o, t, b, d);
  }

  @Override
  double value(int j) {
    return Math.sqrt(sqSum[j] / n);
  }

  @Override
  void mergeSums(RegressionMetric other) {
    add(sqSum, ((RootMeanSquaredError) other).sqSum);
  }

  @Override
  String[] sumKeys() {
    return new String[] {"sq_sum"};
  }

  @Override
  double[][] sums() {
    return new double[][] {sqSum};
  }

  @Override
  public RootMeanSquaredError emptyCopy() {
    return new RootMeanSquaredError();
  }
}
