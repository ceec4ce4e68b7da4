package dev.ember.testing;

import dev.ember.backend.DeviceMemory;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;

/**
 * The memory of a fake-device buffer: a Java array the memory object holds and only {@link FakeBackend} reads, so
 * no {@link dev.ember.tensor.Storage} host accessor can reach it. Using it after {@link #release()} throws, as
 * using freed device memory would be a bug.
 */
final class FakeMemory implements DeviceMemory {
  private final Device device;
  private final DType dtype;
  private final int size;
  private Object array;

  /**
   * Per fake device: bytes allocated now and at most, synchronize() calls (what a GPU allocator reports) and
   * copyNonBlocking() calls.
   */
  record Counters(java.util.concurrent.atomic.AtomicLong current, java.util.concurrent.atomic.AtomicLong peak,
      java.util.concurrent.atomic.AtomicLong syncs, java.util.concurrent.atomic.AtomicLong nonBlockingCopies) {}

  private static final java.util.Map<Device, Counters> COUNTERS = new java.util.concurrent.ConcurrentHashMap<>();

  static Counters counters(Device device) {
    return COUNTERS.computeIfAbsent(device, d -> new Counters(new java.util.concurrent.atomic.AtomicLong(),
        new java.util.concurrent.atomic.AtomicLong(), new java.util.concurrent.atomic.AtomicLong(),
        new java.util.concurrent.atomic.AtomicLong()));
  }

  FakeMemory(Device device, DType dtype, int size, boolean zero) {
    this.device = device;
    this.dtype = dtype;
    this.size = size;
    Counters c = counters(device);
    long now = c.current().addAndGet((long) size * dtype.itemSize());
    c.peak().accumulateAndGet(now, Math::max);
    this.array = switch (dtype) {
      case F32 -> new float[size];
      case F64 -> new double[size];
      case I64 -> new long[size];
      case I32 -> new int[size];
      case BOOL, I8 -> new byte[size];
      case BF16, F16 -> new short[size];
    };
    if (!zero) poison();
  }

  /**
   * Fills an uninitialized buffer with values no correct op leaves behind (NaN, or a large sentinel for integers),
   * so code that reads before writing shows up in the results.
   */
  private void poison() {
    switch (array) {
      case float[] a -> java.util.Arrays.fill(a, Float.NaN);
      case double[] a -> java.util.Arrays.fill(a, Double.NaN);
      case long[] a -> java.util.Arrays.fill(a, 0x5A5A5A5A5A5AL);
      case int[] a -> java.util.Arrays.fill(a, 0x5A5A5A5A);
      case byte[] a -> java.util.Arrays.fill(a, (byte) 0x5A);
      case short[] a -> java.util.Arrays.fill(a, (short) 0x7E00); // a NaN in both BF16 and F16
      default -> throw new IllegalStateException("FakeMemory: unexpected array " + array.getClass());
    }
  }

  /** The array behind this memory, for the fake backend alone. */
  Object array() {
    if (array == null) throw new IllegalStateException("FakeMemory: use of released " + device + " memory ("
        + size + " " + dtype.torchName() + " elements)");
    return array;
  }

  DType dtype() {
    return dtype;
  }

  int size() {
    return size;
  }

  @Override
  public Device device() {
    return device;
  }

  @Override
  public long address() {
    return System.identityHashCode(this);
  }

  @Override
  public long byteSize() {
    return (long) size * dtype.itemSize();
  }

  @Override
  public synchronized void release() {
    if (array != null) counters(device).current().addAndGet(-(long) size * dtype.itemSize());
    array = null;
  }
}
