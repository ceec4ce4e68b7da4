package dev.ember.metrics;

/**
 * Mean squared error {@code mean (output - target)^2}, as scikit-learn's {@code mean_squared_error}.
 * {@code output} and {@code target} are [B] or [B, D] of the same shape ([B] against [B, 1] counts as
 * one output); D outputs are averaged uniformly, as {@code multioutput='uniform_average'}.
 */
public final class MeanSquaredError extends SquaredErrorMetric {
  /** A metric that has seen nothing; the number of outputs is fixed by the first batch. */
  public MeanSquaredError() {}

  @Override
  public String name() {
    return "mse";
  }

  @Override
  double value(int j) {
    return sqSum[j] / n;
  }

  @Override
  public MeanSquaredError emptyCopy() {
    return new MeanSquaredError();
  }
}
