package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x relu6(x + 3) / 6; {@code inplace} writes into the input (PyTorch prints it as {@code Hardswish()} either way). */
public class Hardswish extends Module {
  private final boolean inplace;

  public Hardswish() {
    this(false);
  }

  public Hardswish(boolean inplace) {
    this.inplace = inplace;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.hardswish(x, inplace);
  }
}
