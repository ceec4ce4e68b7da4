package dev.ember.testing;

import dev.ember.backend.Backend;
import dev.ember.backend.BackendProvider;
import dev.ember.tensor.Device;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Serves the device type {@code "fake"} ({@link FakeDevice}) to tests, registered in the test tree's
 * {@code META-INF/services}: two devices, {@code fake:0} and {@code fake:1}, each with its own {@link FakeBackend}.
 */
public final class FakeBackendProvider implements BackendProvider {
  private static final Map<Device, Backend> BACKENDS = new ConcurrentHashMap<>();

  public FakeBackendProvider() {}

  @Override
  public String deviceType() {
    return FakeDevice.TYPE;
  }

  @Override
  public int priority() {
    return 0;
  }

  @Override
  public int deviceCount() {
    return 2;
  }

  @Override
  public Backend backend(Device device) {
    if (!device.type().equals(FakeDevice.TYPE) || device.index() >= deviceCount()) {
      throw new IllegalStateException("FakeBackendProvider: no device " + device + " (there are fake:0 and fake:1)");
    }
    return BACKENDS.computeIfAbsent(device, d -> FakeBackend.create(d, Device.CPU.backend()));
  }

  @Override
  public Optional<Backend> variant(Device device, String name) {
    return Optional.empty();
  }
}
