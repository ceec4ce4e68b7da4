package dev.ember.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.cpu.CpuBackendProvider;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.tensor.Device;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

class BackendProviderTest {
  @Test
  void theCpuBackendIsFoundThroughTheServiceLoaderAndKeptOnce() {
    var providers = ServiceLoader.load(BackendProvider.class).stream().map(ServiceLoader.Provider::get)
        .filter(p -> p.deviceType().equals("cpu")).toList(); // the test tree adds the fake device's
    assertEquals(1, providers.size());
    assertEquals("cpu", providers.get(0).deviceType());
    assertInstanceOf(CpuBackendProvider.class, providers.get(0));
    assertSame(CpuBackends.instance(), Device.CPU.backend());
    assertSame(Device.CPU.backend(), Device.CPU.backend());
  }

  @Test
  void namedVariants() {
    assertEquals("cpu-scalar", Device.CPU.backend("scalar").name());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Device.CPU.backend("gpu"));
    assertEquals("Device cpu: backend provider dev.ember.backend.cpu.CpuBackendProvider has no variant 'gpu'",
        e.getMessage());
  }
}
