package dev.ember.data;

import java.util.Objects;

/** The items of another data set at the given indices, in that order (as PyTorch's {@code Subset}). */
public final class Subset<T> implements Dataset<T> {
  private final Dataset<T> dataset;
  private final int[] indices;

  /** Item {@code i} is {@code dataset.get(indices[i])}; every index must be in range (repeats are allowed). */
  public Subset(Dataset<T> dataset, int[] indices) {
    this.dataset = Objects.requireNonNull(dataset, "Subset: dataset is null");
    Objects.requireNonNull(indices, "Subset: indices are null");
    int n = dataset.size();
    for (int i = 0; i < indices.length; i++) {
      if (indices[i] < 0 || indices[i] >= n) {
        throw new IndexOutOfBoundsException("Subset: indices[" + i + "] = " + indices[i]
            + " out of range for a data set of size " + n + " (valid: 0.." + (n - 1) + ")");
      }
    }
    this.indices = indices.clone();
  }

  /** The underlying data set. */
  public Dataset<T> dataset() {
    return dataset;
  }

  /** A copy of the indices into {@link #dataset()}. */
  public int[] indices() {
    return indices.clone();
  }

  /** The index into {@link #dataset()} of this subset's item {@code i}. */
  public int sourceIndex(int i) {
    Dataset.checkIndex("Subset", i, indices.length);
    return indices[i];
  }

  @Override
  public int size() {
    return indices.length;
  }

  @Override
  public T get(int index) {
    return dataset.get(sourceIndex(index));
  }
}
