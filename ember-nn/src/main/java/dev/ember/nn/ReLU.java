package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** max(x, 0). */
public class ReLU extends Module {
  public ReLU() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.relu(x);
  }
}
