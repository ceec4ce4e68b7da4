package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x for x > 0, alpha (exp(x) - 1) otherwise. */
public class ELU extends Module {
  private final double alpha;

  public ELU() {
    this(1.0);
  }

  public ELU(double alpha) {
    this.alpha = alpha;
  }

  public double alpha() {
    return alpha;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.elu(x, alpha);
  }

  @Override
  protected String extraRepr() {
    return "alpha=" + fmt(alpha);
  }
}
