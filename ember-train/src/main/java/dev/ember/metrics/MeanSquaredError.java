package dev.ember.metrics;

/**
 * Mean squared error {@code mean (output - target)^2}, as scikit-learn's {@code mean_squared_error}.
 * {@code output} and {@code target} are [B] or [B, D] of the same shape ([B] against [B, 1] counts as
 * one output); D outputs are averaged uniformly, as {@code multioutput='uniform_average'}.
 */
public final class MeanSquaredError extends RegressionMetric {
  private double[] sqSum;

  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public MeanSquaredError() {}

  @Override
  public String name() {
    return "mse";
  }

  @Override
  void allocate(int d) {
    sqSum = zeros(d);
  }

  @Override
  void accumulate(double[] o, double[] t, int b, int d) {
    squaredErrors(sqSum, o, t, b, d);
  }

  static void squaredErrors(double[] into, double[] o, double[] t, int b, int d) {
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < d; j++) {
        double e = t[i * d + j] - o[i * d + j];
        into[j] += e * e;
      }
    }
  }

  @Override
  double value(int j) {
    return sqSum[j] / n;
  }

  @Override
  void mergeSums(RegressionMetric other) {
    add(sqSum, ((MeanSquaredError) other).sqSum);
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
  public MeanSquaredError emptyCopy() {
    return new MeanSquaredError();
  }
}
