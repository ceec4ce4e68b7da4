package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x sigmoid(x) (swish). */
public class SiLU extends Module {
  public SiLU() {
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.silu(x);
  }
}
