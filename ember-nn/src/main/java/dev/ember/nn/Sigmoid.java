package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** 1 / (1 + exp(-x)). */
public class Sigmoid extends Module {
  public Sigmoid() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.sigmoid(x);
  }
}
