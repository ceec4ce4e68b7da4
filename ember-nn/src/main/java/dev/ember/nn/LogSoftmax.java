package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** log(softmax(x)) over {@code dim}, computed stably. */
public class LogSoftmax extends Module {
  private final int dim;

  public LogSoftmax(int dim) {
    this.dim = dim;
  }

  public int dim() {
    return dim;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.logSoftmax(x, dim);
  }

  @Override
  protected String extraRepr() {
    return "dim=" + dim;
  }
}
