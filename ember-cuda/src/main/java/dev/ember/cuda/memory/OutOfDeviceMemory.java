package dev.ember.cuda.memory;

/**
 * Thrown by a {@link RawMemory} whose device has no room for a segment ({@code CUDA_ERROR_OUT_OF_MEMORY}). The
 * {@link CachingAllocator} catches it, frees its cache and retries, and only then reports a
 * {@link CudaOutOfMemoryError} to its caller.
 */
public class OutOfDeviceMemory extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final long bytes;

  /** A failed request for {@code bytes} bytes; {@code message} says what the device answered. */
  public OutOfDeviceMemory(long bytes, String message) {
    super(message);
    this.bytes = bytes;
  }

  /** The size of the segment that did not fit. */
  public long bytes() {
    return bytes;
  }
}
