package dev.ember.data;

import dev.ember.tensor.Tensor;

/**
 * One mini-batch: the stacked inputs (first dimension = batch) and the matching targets (class
 * indices as I64 [B], or regression targets of any shape with the same first dimension).
 */
public record Batch(Tensor input, Tensor target) {
  public Batch {
    if (input == null || target == null) throw new IllegalArgumentException("Batch: input and target must not be null");
    if (input.dim() == 0 || target.dim() == 0 || input.size(0) != target.size(0)) {
      throw new IllegalArgumentException("Batch: input and target must share their first (batch) dimension: input="
          + java.util.Arrays.toString(input.shape()) + ", target=" + java.util.Arrays.toString(target.shape()));
    }
  }

  /** Number of samples in the batch. */
  public int size() {
    return input.size(0);
  }
}
