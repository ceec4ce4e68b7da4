package dev.ember.nn;

import dev.ember.tensor.Tensor;

/** Returns its input unchanged (a placeholder in architectures that switch layers off). */
public class Identity extends Module {
  @Override
  public Tensor forward(Tensor x) {
    return x;
  }
}
