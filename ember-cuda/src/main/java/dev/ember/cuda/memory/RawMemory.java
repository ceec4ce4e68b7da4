package dev.ember.cuda.memory;

/**
 * The device memory a {@link CachingAllocator} carves up: whole segments, obtained and given back one call each.
 * The CUDA backend passes one over {@code cuMemAlloc}/{@code cuMemFree}/{@code cuMemGetInfo}; tests pass a fake
 * that counts calls. Calls are made with the allocator's lock held, one at a time.
 */
public interface RawMemory {
  /**
   * Allocates {@code bytes} bytes of device memory.
   *
   * @return the device address of the first byte, or 0 when the device has no room for them
   * @throws OutOfDeviceMemory when the device has no room for them (the same answer as returning 0)
   */
  long malloc(long bytes);

  /** Gives back memory {@link #malloc} returned, whole. */
  void free(long ptr);

  /** The device's memory as {@code {free, total}} bytes, as {@code cuMemGetInfo} reports it. */
  long[] memInfo();
}
