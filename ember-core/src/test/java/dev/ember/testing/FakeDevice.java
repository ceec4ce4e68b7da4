package dev.ember.testing;

import dev.ember.tensor.Device;

/**
 * A device for tests that need no hardware: {@code fake:0} and {@code fake:1}, whose buffers the host cannot read
 * (every {@link dev.ember.tensor.Storage} host accessor throws on them, as on a GPU's) and whose backend computes
 * with the CPU kernels through copies ({@link FakeBackend}). An op, module or optimizer that allocates on the
 * wrong device, reads device data on the host, or drops a device along the way fails on it, so running a model on
 * {@link #DEVICE} and comparing with the CPU proves the code above the backend device-correct.
 */
public final class FakeDevice {
  /** The device type the fake provider serves. */
  public static final String TYPE = "fake";
  /** {@code fake:0}. */
  public static final Device DEVICE = Device.of(TYPE, 0);
  /** {@code fake:1}, a second device to mix with the first. */
  public static final Device OTHER = Device.of(TYPE, 1);

  private FakeDevice() {}

  /** How many times {@link Device#synchronize()} reached {@code device}'s backend so far. */
  public static long synchronizations(Device device) {
    return FakeMemory.counters(device).syncs().get();
  }

  /** How many {@code copyNonBlocking} calls reached {@code device}'s backend so far. */
  public static long nonBlockingCopies(Device device) {
    return FakeMemory.counters(device).nonBlockingCopies().get();
  }
}
