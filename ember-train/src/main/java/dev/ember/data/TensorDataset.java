package dev.ember.data;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.Arrays;

/**
 * Samples held as two stacked tensors: inputs {@code [N, ...]} and targets {@code [N, ...]}; sample
 * {@code i} is row {@code i} of each (as PyTorch's {@code TensorDataset}). Rows are views sharing
 * the stacked storage; {@link #getBatch} gathers a whole batch as one {@code index_select} along
 * the first dimension per tensor, without building a tensor per sample.
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
    int n = size();
    for (int i : indices) Dataset.checkIndex("TensorDataset.getBatch", i, n);
    return new Batch(gatherRows(inputs, indices), gatherRows(targets, indices));
  }

  /**
   * {@code index_select(t, 0, indices)} for a contiguous {@code t}: one array copy per row. Measured
   * on Fashion-MNIST batches of 128 this is about 3x faster than the general strided
   * {@code Tensor.indexSelect}, which builds a view and a strided copy per row.
   */
  static Tensor gatherRows(Tensor t, int[] indices) {
    int[] shape = t.shape();
    int row = shape[0] == 0 ? 0 : (int) (t.numel() / shape[0]);
    shape[0] = indices.length;
    Tensor out = Tensor.empty(t.dtype(), shape);
    TensorData.gatherRows(t, indices, out);
    return out;
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
