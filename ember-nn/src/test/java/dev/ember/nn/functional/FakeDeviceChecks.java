package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;

/** What the on-device tests of the nn ops share: their inputs as fresh leaves on a device, and exact comparison. */
final class FakeDeviceChecks {
  private FakeDeviceChecks() {}

  /** t on {@code d} as a new tensor (a copy when already there), requiring grad when {@code grad}; null for null. */
  static Tensor leaf(Tensor t, Device d, boolean grad) {
    if (t == null) return null;
    Tensor m = t.to(d);
    if (m == t) m = t.clone();
    return grad ? m.requiresGrad(true) : m;
  }

  /**
   * dev is on the fake device with cpu's shape and exactly its values (the same bits for F32 and F64: the same
   * double; NaN matching NaN).
   */
  static void same(Tensor cpu, Tensor dev, String what) {
    assertEquals(FakeDevice.DEVICE, dev.device(), what + " device");
    assertArrayEquals(cpu.shape(), dev.shape(), what + " shape");
    assertArrayEquals(cpu.toDoubleArray(), dev.cpu().toDoubleArray(), 0.0, what);
  }
}
