package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x Phi(x); {@code tanhApproximation} gives PyTorch's approximate='tanh'. */
public class GELU extends Module {
  private final boolean tanhApproximation;

  public GELU() {
    this(false);
  }

  public GELU(boolean tanhApproximation) {
    this.tanhApproximation = tanhApproximation;
  }

  public boolean tanhApproximation() {
    return tanhApproximation;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.gelu(x, tanhApproximation);
  }

  @Override
  protected String extraRepr() {
    return "approximate='" + (tanhApproximation ? "tanh" : "none") + "'";
  }
}
