package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x tanh(softplus(x)). */
public class Mish extends Module {
  public Mish() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.mish(x);
  }
}
