package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x tanh(softplus(x)); {@code inplace} writes into the input (its backward keeps a copy of the input). */
public class Mish extends Module {
  private final boolean inplace;

  public Mish() {
    this(false);
  }

  public Mish(boolean inplace) {
    this.inplace = inplace;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.mish(x, inplace);
  }

  @Override
  protected String extraRepr() {
    return inplace ? "inplace=True" : "";
  }
}
