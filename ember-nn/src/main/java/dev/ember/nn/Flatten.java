package dev.ember.nn;

import dev.ember.tensor.Tensor;

/** Flattens dims startDim..endDim into one (PyTorch's defaults: 1 and -1, keeping the batch dim). */
public class Flatten extends Module {
  private final int startDim;
  private final int endDim;

  public Flatten() {
    this(1, -1);
  }

  public Flatten(int startDim, int endDim) {
    this.startDim = startDim;
    this.endDim = endDim;
  }

  @Override
  public Tensor forward(Tensor x) {
    return x.flatten(startDim, endDim);
  }

  /** The first flattened dimension (negative counts from the end). */
  public int startDim() {
    return startDim;
  }

  /** The last flattened dimension (negative counts from the end). */
  public int endDim() {
    return endDim;
  }

  @Override
  protected String extraRepr() {
    return "start_dim=" + startDim + ", end_dim=" + endDim;
  }
}
