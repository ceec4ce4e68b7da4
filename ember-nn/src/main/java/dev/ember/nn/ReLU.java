package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** max(x, 0); with {@code inplace}, written into the input (as {@code nn.ReLU(inplace=True)}). */
public class ReLU extends Module {
  private final boolean inplace;

  public ReLU() {
    this(false);
  }

  public ReLU(boolean inplace) {
    this.inplace = inplace;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.relu(x, inplace);
  }

  @Override
  protected String extraRepr() {
    return inplace ? "inplace=True" : "";
  }
}
