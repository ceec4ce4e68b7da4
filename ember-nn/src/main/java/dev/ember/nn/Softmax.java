package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** Softmax over {@code dim} (PyTorch's implicit dim is not supported: name it). */
public class Softmax extends Module {
  private final int dim;

  public Softmax(int dim) {
    this.dim = dim;
  }

  public int dim() {
    return dim;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.softmax(x, dim);
  }

  @Override
  protected String extraRepr() {
    return "dim=" + dim;
  }
}
