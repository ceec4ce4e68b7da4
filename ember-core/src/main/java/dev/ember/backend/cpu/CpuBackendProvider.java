package dev.ember.backend.cpu;

import dev.ember.backend.Backend;
import dev.ember.backend.BackendProvider;
import dev.ember.tensor.Device;
import java.util.Optional;

/**
 * The default provider of {@link Device#CPU}'s backend: {@link CpuBackends#instance()} (the Vector API kernels
 * when the module is readable), with the variants {@code "scalar"} (the plain-Java reference kernels) and
 * {@code "vector"} (the Vector API kernels, when readable).
 */
public final class CpuBackendProvider implements BackendProvider {
  /** Made by {@link java.util.ServiceLoader}. */
  public CpuBackendProvider() {}

  @Override
  public String deviceType() {
    return "cpu";
  }

  @Override
  public int deviceCount() {
    return 1;
  }

  @Override
  public int priority() {
    return 0;
  }

  @Override
  public Backend backend(Device device) {
    return CpuBackends.instance();
  }

  @Override
  public Optional<Backend> variant(Device device, String name) {
    return switch (name) {
      case "scalar" -> Optional.of(CpuBackends.scalar());
      case "vector" -> Optional.ofNullable(CpuBackends.vectorKernelsOrNull()).map(CpuBackend::new);
      default -> Optional.empty();
    };
  }
}
