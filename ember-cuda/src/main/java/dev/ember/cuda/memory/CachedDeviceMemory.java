package dev.ember.cuda.memory;

import dev.ember.backend.DeviceMemory;
import dev.ember.tensor.Device;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A storage's {@link DeviceMemory} as a block of a {@link CachingAllocator}: its release gives the block back to
 * the cache (not to the device), once, whichever of the storage's scope or its {@link java.lang.ref.Cleaner} comes
 * first. It holds no reference to the storage, so it can be the Cleaner's action itself:
 * {@code cleaner.register(storage, memory::release)}.
 */
public final class CachedDeviceMemory implements DeviceMemory {
  private final Device device;
  private final CachingAllocator allocator;
  private final Block block;
  private final AtomicBoolean released = new AtomicBoolean();

  private CachedDeviceMemory(Device device, CachingAllocator allocator, Block block) {
    this.device = device;
    this.allocator = allocator;
    this.block = block;
  }

  /**
   * {@code bytes} bytes of {@code allocator}'s device for use on {@code stream}.
   *
   * @throws IllegalArgumentException when {@code device} is not the CUDA device the allocator serves
   * @throws CudaOutOfMemoryError when the device is full even after the allocator released its cache
   */
  public static CachedDeviceMemory allocate(Device device, CachingAllocator allocator, long bytes, long stream) {
    Objects.requireNonNull(device, "device");
    Objects.requireNonNull(allocator, "allocator");
    if (!device.type().equals("cuda") || device.index() != allocator.device()) {
      throw new IllegalArgumentException("CachedDeviceMemory.allocate: the allocator serves cuda:"
          + allocator.device() + ", not " + device);
    }
    return new CachedDeviceMemory(device, allocator, allocator.allocate(bytes, stream));
  }

  @Override
  public Device device() {
    return device;
  }

  @Override
  public long address() {
    return block.ptr();
  }

  /** The bytes asked for (the block behind may be larger: sizes round up to 512 bytes). */
  @Override
  public long byteSize() {
    return block.requestedSize();
  }

  /** The allocator's block, for {@link CachingAllocator#recordStream} when another stream uses the memory. */
  public Block block() {
    return block;
  }

  /** Whether {@link #release} ran. */
  public boolean isReleased() {
    return released.get();
  }

  @Override
  public void release() {
    if (released.compareAndSet(false, true)) {
      allocator.free(block);
    }
  }

  @Override
  public String toString() {
    return String.format("CachedDeviceMemory[%s, 0x%x, %d bytes%s]", device, block.ptr(), block.requestedSize(),
        released.get() ? ", released" : "");
  }
}
