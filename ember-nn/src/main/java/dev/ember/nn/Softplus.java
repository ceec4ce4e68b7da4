package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** log(1 + exp(beta x)) / beta, linear above the threshold. */
public class Softplus extends Module {
  private final double beta;
  private final double threshold;

  public Softplus() {
    this(1.0, 20.0);
  }

  public Softplus(double beta, double threshold) {
    this.beta = beta;
    this.threshold = threshold;
  }

  public double beta() {
    return beta;
  }

  public double threshold() {
    return threshold;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.softplus(x, beta, threshold);
  }

  @Override
  protected String extraRepr() {
    return "beta=" + fmt(beta) + ", threshold=" + fmt(threshold);
  }
}
