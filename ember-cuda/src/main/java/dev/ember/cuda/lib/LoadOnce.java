package dev.ember.cuda.lib;

import java.util.Optional;
import java.util.function.Supplier;

/**
 * A library loaded on first use, once: what the loader returned, or the {@link CudaUnavailableException} it threw,
 * kept for every later call (a missing library is not searched for again). Other failures are not kept: the next
 * call loads again.
 */
final class LoadOnce<T> {
  private final Supplier<T> load;
  private volatile Object value;

  LoadOnce(Supplier<T> load) {
    this.load = load;
  }

  /**
   * The library.
   *
   * @throws CudaUnavailableException a new one each call, with the message of the one met loading it
   */
  T get() {
    Object v = value;
    if (v == null) {
      synchronized (this) {
        v = value;
        if (v == null) {
          try {
            v = load.get();
          } catch (CudaUnavailableException e) {
            v = e;
          }
          value = v;
        }
      }
    }
    if (v instanceof CudaUnavailableException e) throw new CudaUnavailableException(e.getMessage());
    @SuppressWarnings("unchecked")
    T t = (T) v;
    return t;
  }

  /** The library, or empty when it cannot be loaded. */
  Optional<T> tryGet() {
    try {
      return Optional.of(get());
    } catch (CudaUnavailableException e) {
      return Optional.empty();
    }
  }
}
