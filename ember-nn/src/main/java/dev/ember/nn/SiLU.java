package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x sigmoid(x) (swish); {@code inplace} writes into the input (its backward keeps a copy of the input). */
public class SiLU extends Module {
  private final boolean inplace;

  public SiLU() {
    this(false);
  }

  public SiLU(boolean inplace) {
    this.inplace = inplace;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.silu(x, inplace);
  }

  @Override
  protected String extraRepr() {
    return inplace ? "inplace=True" : "";
  }
}
