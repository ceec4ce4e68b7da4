package dev.ember.data;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/** Several data sets one after another (as PyTorch's {@code ConcatDataset}). */
public final class ConcatDataset<T> implements Dataset<T> {
  private final List<Dataset<? extends T>> parts;
  private final int[] starts; // starts[k] = index of part k's first item; starts[parts] = size

  /** The parts in order; their total size must fit in an int. */
  @SafeVarargs
  public ConcatDataset(Dataset<? extends T>... parts) {
    this(Arrays.asList(Objects.requireNonNull(parts, "ConcatDataset: parts are null")));
  }

  /** The parts in order; their total size must fit in an int. */
  public ConcatDataset(List<? extends Dataset<? extends T>> parts) {
    Objects.requireNonNull(parts, "ConcatDataset: parts are null");
    if (parts.isEmpty()) throw new IllegalArgumentException("ConcatDataset: expected at least one data set");
    this.parts = List.copyOf(parts);
    this.starts = new int[parts.size() + 1];
    long total = 0;
    for (int k = 0; k < parts.size(); k++) {
      starts[k] = (int) total;
      total += this.parts.get(k).size();
      if (total > Integer.MAX_VALUE) {
        throw new IllegalArgumentException("ConcatDataset: total size " + total + " exceeds " + Integer.MAX_VALUE
            + " items (after part " + k + ")");
      }
    }
    starts[parts.size()] = (int) total;
  }

  @Override
  public int size() {
    return starts[parts.size()];
  }

  @Override
  public T get(int index) {
    Dataset.checkIndex("ConcatDataset.get", index, size());
    int k = Arrays.binarySearch(starts, 0, parts.size(), index);
    if (k < 0) {
      k = -k - 2; // insertion point - 1: the last part starting before index
    } else {
      while (k + 1 < parts.size() && starts[k + 1] == index) k++; // skip empty parts
    }
    return parts.get(k).get(index - starts[k]);
  }
}
