package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x relu6(x + 3) / 6. */
public class Hardswish extends Module {
  public Hardswish() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.hardswish(x);
  }
}
