package dev.ember.cuda;

import dev.ember.backend.Backend;
import dev.ember.backend.BackendProvider;
import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.tensor.Device;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The provider of {@code cuda:N} backends, found by {@link java.util.ServiceLoader} when ember-cuda is on the class
 * path. It counts devices through the CUDA driver ({@link CudaDriver#tryGet()}): 0, never an exception, when the
 * driver library is absent or reports no device, so {@code Device.cuda().isAvailable()} is simply false on a
 * machine without a GPU. Each device's backend is made once, on first use.
 */
public final class CudaBackendProvider implements BackendProvider {
  private final ConcurrentMap<Integer, CudaBackend> backends = new ConcurrentHashMap<>();

  /** Made by {@link java.util.ServiceLoader}. */
  public CudaBackendProvider() {}

  @Override
  public String deviceType() {
    return "cuda";
  }

  @Override
  public int priority() {
    return 0;
  }

  @Override
  public int deviceCount() {
    try {
      return CudaDriver.tryGet().map(CudaDriver::deviceCount).orElse(0);
    } catch (RuntimeException e) { // a driver that loads but cannot initialise (no device node, bad install)
      return 0;
    }
  }

  /**
   * The backend of {@code device} ({@code cuda:N}).
   *
   * @throws IllegalStateException if no CUDA driver was found or the device does not exist, saying which
   */
  @Override
  public Backend backend(Device device) {
    if (!device.type().equals("cuda")) {
      throw new IllegalArgumentException("CudaBackendProvider: " + device + " is not a CUDA device");
    }
    return backends.computeIfAbsent(device.index(), CudaBackendProvider::create);
  }

  private static CudaBackend create(int ordinal) {
    CudaDriver driver;
    try {
      driver = CudaDriver.get();
    } catch (RuntimeException e) {
      throw new IllegalStateException("cuda:" + ordinal + " is not available: " + e.getMessage(), e);
    }
    int count;
    try {
      count = driver.deviceCount();
    } catch (RuntimeException e) {
      throw new IllegalStateException("cuda:" + ordinal + " is not available: the CUDA driver could not count "
          + "devices: " + e.getMessage(), e);
    }
    if (ordinal >= count) {
      throw new IllegalStateException("cuda:" + ordinal + " is not available: the CUDA driver reports " + count
          + (count == 1 ? " device" : " devices") + (count > 0 ? " (cuda:0.." + "cuda:" + (count - 1) + ")" : ""));
    }
    CudaContext ctx = CudaContext.of(ordinal);
    return new CudaBackend(ctx);
  }

  /** No variants: the CUDA backend has one set of kernels. */
  @Override
  public Optional<Backend> variant(Device device, String name) {
    return Optional.empty();
  }
}
