package dev.ember.backend;

import dev.ember.tensor.Device;
import java.util.Optional;

/**
 * A source of a {@link Backend} for one {@link Device}, found with {@link java.util.ServiceLoader} (listed in
 * {@code META-INF/services/dev.ember.backend.BackendProvider}). {@link Device#backend()} asks the providers once
 * per process and keeps, for each device, the backend of the provider with the highest {@link #priority()};
 * ember-core's CPU provider has priority 0, so a module on the class path can replace it by declaring a higher one.
 */
public interface BackendProvider {
  /** The device whose tensors this provider's backend computes on. */
  Device device();

  /** Which provider wins when several serve one device: the highest. */
  int priority();

  /** The backend, made once by the provider and returned on every call. */
  Backend backend();

  /**
   * A named alternative to {@link #backend()}, such as the CPU's {@code "scalar"} reference kernels (the
   * plain-Java set conformance tests and benchmarks compare against), or empty when this provider has no
   * variant of that name.
   */
  Optional<Backend> variant(String name);
}
