package dev.ember.data;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Samples held as two stacked tensors: inputs {@code [N, ...]} and targets {@code [N, ...]}; sample
 * {@code i} is row {@code i} of each (as PyTorch's {@code TensorDataset}). Rows are views sharing
 * the stacked storage; {@link #getBatch} gathers a whole batch with one {@code index_select} per
 * tensor.
 */
public final class TensorDataset implements BatchDataset {
  private final Tensor inputs;
  private final Tensor targets;

  /** Both tensors must have at least one dimension and the same first dimension. */
  public TensorDataset(Tensor inputs, Tensor targets) {
    if (inputs == null || targets == null) {
      throw new IllegalArgumentException("TensorDataset: inputs and targets must not be null");
    }
    if (inputs.dim() == 0 || targets.dim() == 0 || inputs.size(0) != targets.size(0)) {
      throw new IllegalArgumentException("TensorDataset: inputs and targets must share their first dimension ("
          + (inputs.dim() == 0 ? "none" : inputs.size(0)) + " vs " + (targets.dim() == 0 ? "none" : targets.size(0))
          + "): inputs=" + Arrays.toString(inputs.shape()) + ", targets=" + Arrays.toString(targets.shape()));
    }
    try (var ignored = Grad.off()) { // data is never part of a graph; contiguous rows make batching a row copy
      this.inputs = inputs.detach().contiguous();
      this.targets = targets.detach().contiguous();
    }
  }

  /** All inputs, {@code [N, ...]}. */
  public Tensor inputs() {
    return inputs;
  }

  /** All targets, {@code [N, ...]}. */
  public Tensor targets() {
    return targets;
  }

  @Override
  public int size() {
    return inputs.size(0);
  }

  @Override
  public Sample get(int index) {
    Dataset.checkIndex("TensorDataset.get", index, size());
    return new Sample(inputs.select(0, index), targets.select(0, index));
  }

  @Override
  public Batch getBatch(int[] indices) {
    if (indices == null || indices.length == 0) {
      throw new IllegalArgumentException("TensorDataset.getBatch: expected at least one index, got "
          + (indices == null ? "null" : "none"));
    }
    long[] idx = new long[indices.length];
    int n = size();
    for (int i = 0; i < indices.length; i++) {
      Dataset.checkIndex("TensorDataset.getBatch", indices[i], n);
      idx[i] = indices[i];
    }
    Tensor index = Tensor.of(idx);
    try (var ignored = Grad.off()) {
      return new Batch(inputs.indexSelect(0, index), targets.indexSelect(0, index));
    }
  }

  @Override
  public String toString() {
    return "TensorDataset(inputs=" + DTypeShape.of(inputs) + ", targets=" + DTypeShape.of(targets) + ")";
  }

  /** {@code float32[N, 1, 28, 28]}: how data sets name their tensors in messages. */
  static final class DTypeShape {
    private DTypeShape() {}

    static String of(Tensor t) {
      return of(t.dtype(), t.shape());
    }

    static String of(DType dtype, int[] shape) {
      return dtype.torchName() + Arrays.toString(shape);
    }
  }
}
