package dev.ember.data;

import java.util.function.Function;

/**
 * A map-style data set: {@link #size()} items addressed by index, as PyTorch's
 * {@code torch.utils.data.Dataset}. Implementations must be safe to read from several threads at
 * once (a {@link DataLoader} with workers calls {@link #get} concurrently).
 *
 * @param <T> the item type, usually {@link Sample}
 */
public interface Dataset<T> {
  /** Number of items. */
  int size();

  /** The item at {@code index}, in {@code [0, size())}. */
  T get(int index);

  /** A view whose item {@code i} is {@code fn.apply(get(i))}, computed on each access. */
  default <R> Dataset<R> map(Function<? super T, ? extends R> fn) {
    return new MappedDataset<>(this, fn);
  }

  /** Fails with a message naming {@code op}, the index and the size when {@code index} is out of range. */
  static void checkIndex(String op, int index, int size) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException(op + ": index " + index + " out of range for a data set of size " + size
          + " (valid: 0.." + (size - 1) + ")");
    }
  }
}
