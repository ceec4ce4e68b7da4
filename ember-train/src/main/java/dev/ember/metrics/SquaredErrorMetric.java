package dev.ember.metrics;

/**
 * The running per-output sums of squared errors behind {@link MeanSquaredError} and
 * {@link RootMeanSquaredError}, which differ only in how they turn a sum into a value.
 */
abstract sealed class SquaredErrorMetric extends RegressionMetric permits MeanSquaredError, RootMeanSquaredError {
  double[] sqSum;

  @Override
  void allocate(int d) {
    sqSum = zeros(d);
  }

  @Override
  void accumulate(double[] o, double[] t, int b, int d) {
    squaredErrors(sqSum, o, t, b, d);
  }

  /** Adds each output's sum of squared errors over the batch of {@code b} rows of {@code d} outputs to {@code into}. */
  static void squaredErrors(double[] into, double[] o, double[] t, int b, int d) {
    for (int i = 0; i < b; i++) {
      for (int j = 0; j < d; j++) {
        double e = t[i * d + j] - o[i * d + j];
        into[j] += e * e;
      }
    }
  }

  @Override
  void mergeSums(RegressionMetric other) {
    add(sqSum, ((SquaredErrorMetric) other).sqSum);
  }

  @Override
  String[] sumKeys() {
    return new String[] {"sq_sum"};
  }

  @Override
  double[][] sums() {
    return new double[][] {sqSum};
  }
}
