package dev.ember.data;

/**
 * A data set that can gather many samples into one {@link Batch} in a single pass (e.g. an
 * {@code index_select} over stacked tensors), so a loader need not build and stack one tensor per
 * sample. The batch must equal stacking {@code get(i)} for each index, in order.
 */
public interface BatchDataset extends Dataset<Sample> {
  /** The samples at {@code indices}, stacked along a new first dimension. */
  Batch getBatch(int[] indices);
}
