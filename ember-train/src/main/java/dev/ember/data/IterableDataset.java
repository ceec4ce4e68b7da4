package dev.ember.data;

import java.util.Iterator;
import java.util.Objects;
import java.util.function.Function;

/**
 * A streaming data set read front to back, as PyTorch's {@code IterableDataset}: for sources
 * whose length is unknown or too large to index (a CSV read line by line, a generator). Each call
 * to {@link #iterator()} starts a fresh pass.
 *
 * @param <T> the item type
 */
public interface IterableDataset<T> extends Iterable<T> {
  /** A view whose items are passed through {@code fn} as they stream by. */
  default <R> IterableDataset<R> map(Function<? super T, ? extends R> fn) {
    Objects.requireNonNull(fn, "IterableDataset.map: function is null");
    IterableDataset<T> self = this;
    return () -> {
      Iterator<T> it = self.iterator();
      return new Iterator<>() {
        @Override
        public boolean hasNext() {
          return it.hasNext();
        }

        @Override
        public R next() {
          return fn.apply(it.next());
        }
      };
    };
  }

  /** Streams the items of a map-style data set in index order. */
  static <T> IterableDataset<T> of(Dataset<T> dataset) {
    Objects.requireNonNull(dataset, "IterableDataset.of: dataset is null");
    return () -> new Iterator<>() {
      private int next;

      @Override
      public boolean hasNext() {
        return next < dataset.size();
      }

      @Override
      public T next() {
        if (!hasNext()) throw new java.util.NoSuchElementException("IterableDataset: no item after " + next);
        return dataset.get(next++);
      }
    };
  }
}
