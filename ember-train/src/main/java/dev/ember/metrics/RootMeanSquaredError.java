package dev.ember.metrics;

/**
 * Root mean squared error, as scikit-learn 1.2's {@code mean_squared_error(squared=False)}: the
 * square root is taken per output, then the outputs are averaged uniformly. {@code output} and
 * {@code target} are [B] or [B, D] of the same shape ([B] against [B, 1] counts as one output).
 */
public final class RootMeanSquaredError extends SquaredErrorMetric {
  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public RootMeanSquaredError() {}

  @Override
  public String name() {
    return "rmse";
  }

  @Override
  double value(int j) {
    return Math.sqrt(sqSum[j] / n);
  }

  @Override
  public RootMeanSquaredError emptyCopy() {
    return new RootMeanSquaredError();
  }
}
