package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** tanh(x). */
public class Tanh extends Module {
  public Tanh() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.tanh(x);
  }
}
