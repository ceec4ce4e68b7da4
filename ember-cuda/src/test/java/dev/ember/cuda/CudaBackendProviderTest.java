package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.Device;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The provider as ServiceLoader finds it: counted devices, one backend per device, and clear errors. */
class CudaBackendProviderTest {
  private final CudaBackendProvider provider = new CudaBackendProvider();

  @Test
  void describesItself() {
    assertEquals("cuda", provider.deviceType());
    assertEquals(0, provider.priority());
    assertEquals(Optional.empty(), provider.variant(Device.cuda(0), "scalar"));
  }

  @Test
  void withoutADriverThereAreNoDevicesAndBackendSaysWhy() {
    Optional<String> why = CudaDriver.unavailableReason();
    Assumptions.assumeTrue(why.isPresent(), "this machine has a CUDA driver");
    assertEquals(0, provider.deviceCount());
    assertEquals(0, Device.count("cuda"), "ServiceLoader finds this provider and it counts no device");
    assertFalse(Device.cuda().isAvailable());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> provider.backend(Device.cuda(0)));
    assertTrue(e.getMessage().startsWith("cuda:0 is not available: "), e.getMessage());
    assertTrue(e.getMessage().contains(why.get()), e.getMessage() + " should say why: " + why.get());
    IllegalStateException viaDevice = assertThrows(IllegalStateException.class, () -> Device.cuda(1).backend());
    assertTrue(viaDevice.getMessage().startsWith("cuda:1 is not available: "), viaDevice.getMessage());
  }

  @Test
  void withAGpuEachDeviceHasOneBackendAndAbsentOnesAreNamed() {
    Gpu.assumeDevice();
    int n = provider.deviceCount();
    assertTrue(n > 0);
    assertEquals(n, Device.count("cuda"));
    Backend b = provider.backend(Device.cuda(0));
    assertSame(b, provider.backend(Device.cuda(0)));
    assertEquals(Device.cuda(0), b.device());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> provider.backend(Device.cuda(n)));
    assertTrue(e.getMessage().startsWith("cuda:" + n + " is not available: the CUDA driver reports " + n + " device"),
        e.getMessage());
  }

  /** What the run report shows beside cuda:0: the GPU, its memory, the driver and the convolutions' engine. */
  @Test
  void theDescriptionNamesTheGpuAndWhatRunsItsConvolutions() {
    Gpu.assumeDevice();
    String d = provider.backend(Device.cuda(0)).description();
    System.out.println("CudaBackendProviderTest: cuda:0 is " + d);
    assertTrue(d.startsWith(dev.ember.cuda.lib.CudaDriver.get().deviceName(0) + ", sm_"), d);
    assertTrue(d.contains(" GiB, CUDA "), d);
    assertTrue(d.contains("convolutions on " + (dev.ember.cuda.lib.Cudnn.tryGet().isPresent()
        && dev.ember.cuda.runtime.CudaSettings.cudnn() ? "cuDNN " : "im2col + cuBLASLt")), d);
  }

  @Test
  void threadsAreRecordedAndValidated() {
    Gpu.assumeDevice();
    Backend b = provider.backend(Device.cuda(0));
    int before = b.threads();
    assertEquals(1, before);
    b.setThreads(4);
    assertEquals(4, b.threads());
    b.setThreads(before);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> b.setThreads(0));
    assertEquals("setThreads: n must be >= 1, got 0", e.getMessage());
  }
}
