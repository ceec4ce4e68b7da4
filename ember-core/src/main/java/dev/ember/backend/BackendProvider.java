package dev.ember.backend;

import dev.ember.tensor.Device;
import java.util.Optional;

/**
 * A source of {@link Backend}s for one device type ({@code "cpu"}, {@code "cuda"}), found with
 * {@link java.util.ServiceLoader} (listed in {@code META-INF/services/dev.ember.backend.BackendProvider}).
 * {@link Device#backend()} asks the providers once per process and keeps, for each type, the provider with the
 * highest {@link #priority()}; ember-core's CPU provider has priority 0, so a module on the class path can replace
 * it by declaring a higher one.
 */
public interface BackendProvider {
  /** The device type whose tensors this provider's backends compute on, e.g. {@code "cuda"}. */
  String deviceType();

  /** Which provider wins when several serve one device type: the highest. */
  int priority();

  /**
   * How many devices of this type are present (1 for the CPU; for CUDA the driver's device count, 0 when no
   * driver or GPU is found). Never throws.
   */
  int deviceCount();

  /**
   * The backend of {@code device} (of this provider's type), made once by the provider and returned on every call.
   *
   * @throws IllegalStateException if the device is absent, saying why
   */
  Backend backend(Device device);

  /**
   * A named alternative to {@link #backend(Device)}, such as the CPU's {@code "scalar"} reference kernels (the
   * plain-Java set conformance tests and benchmarks compare against), or empty when this provider has no variant
   * of that name.
   */
  Optional<Backend> variant(Device device, String name);
}
