package dev.ember.data;

import java.util.Objects;
import java.util.function.Function;

/** The items of another data set passed through a function on each access ({@link Dataset#map}). */
public final class MappedDataset<T, R> implements Dataset<R> {
  private final Dataset<T> source;
  private final Function<? super T, ? extends R> fn;

  /** Item {@code i} is {@code fn.apply(source.get(i))}. */
  public MappedDataset(Dataset<T> source, Function<? super T, ? extends R> fn) {
    this.source = Objects.requireNonNull(source, "MappedDataset: source is null");
    this.fn = Objects.requireNonNull(fn, "MappedDataset: function is null");
  }

  @Override
  public int size() {
    return source.size();
  }

  @Override
  public R get(int index) {
    return fn.apply(source.get(index));
  }
}
