package dev.ember.cuda.memory;

import java.util.Locale;

/**
 * A device allocation failed even after the {@link CachingAllocator} released its cache and retried
 * ({@code torch.cuda.OutOfMemoryError}). The message says what was asked for, what the device has and what Ember
 * holds, e.g. "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which
 * 1.20 GiB is free. Ember has 70.30 GiB allocated and 75.00 GiB reserved ...".
 */
public class CudaOutOfMemoryError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final int device;
  private final long triedBytes;
  private final long deviceFree;
  private final long deviceTotal;
  private final long allocatedBytes;
  private final long reservedBytes;
  private final long allowedBytes;

  /**
   * @param device the device ordinal
   * @param triedBytes the size of the segment that could not be obtained
   * @param deviceFree the device's free bytes after the retry (-1 when it could not say)
   * @param deviceTotal the device's capacity (-1 when it could not say)
   * @param allocatedBytes bytes in blocks Ember's allocator has handed out
   * @param reservedBytes bytes in segments Ember's allocator holds
   */
  public CudaOutOfMemoryError(int device, long triedBytes, long deviceFree, long deviceTotal, long allocatedBytes,
      long reservedBytes) {
    this(device, triedBytes, deviceFree, deviceTotal, allocatedBytes, reservedBytes, -1, 0);
  }

  /**
   * The error of an allocator limited to a fraction of the device ({@link CachingAllocator#setMemoryFraction}).
   *
   * @param allowedBytes the most the allocator may reserve, or -1 when it has no limit
   * @param fraction the fraction of the device's capacity that {@code allowedBytes} is
   */
  public CudaOutOfMemoryError(int device, long triedBytes, long deviceFree, long deviceTotal, long allocatedBytes,
      long reservedBytes, long allowedBytes, double fraction) {
    super(message(device, triedBytes, deviceFree, deviceTotal, allocatedBytes, reservedBytes, allowedBytes, fraction));
    this.allowedBytes = allowedBytes;
    this.device = device;
    this.triedBytes = triedBytes;
    this.deviceFree = deviceFree;
    this.deviceTotal = deviceTotal;
    this.allocatedBytes = allocatedBytes;
    this.reservedBytes = reservedBytes;
  }

  private static String message(int device, long tried, long free, long total, long allocated, long reserved,
      long allowed, double fraction) {
    String capacity = total < 0 ? " could not report its free memory"
        : " has a total capacity of " + formatSize(total) + " of which " + formatSize(free) + " is free";
    if (allowed >= 0) {
      capacity += String.format(Locale.ROOT, "; Ember may reserve at most %s of it (memory fraction %.2f)",
          formatSize(allowed), fraction);
    }
    return "CUDA out of memory. Tried to allocate " + formatSize(tried) + ". GPU " + device + capacity + ". Ember has "
        + formatSize(allocated) + " allocated and " + formatSize(reserved) + " reserved; "
        + formatSize(reserved - allocated) + " of the reserved memory is free but split into pieces too small"
        + " for this request (cached memory was already released and the allocation retried). Free tensors that"
        + " are no longer needed, use smaller batches, or allocate large buffers early to reduce fragmentation.";
  }

  /**
   * A byte count as PyTorch's allocator writes it: "512 bytes", "1.50 KiB", "20.00 MiB", "2.00 GiB" (each unit
   * up to and including 1024 of it).
   */
  public static String formatSize(long bytes) {
    if (bytes <= 1024) {
      return bytes + " bytes";
    } else if (bytes <= 1L << 20) {
      return String.format(Locale.ROOT, "%.2f KiB", bytes / 1024.0);
    } else if (bytes <= 1L << 30) {
      return String.format(Locale.ROOT, "%.2f MiB", bytes / (double) (1L << 20));
    }
    return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
  }

  /** The device ordinal. */
  public int device() {
    return device;
  }

  /** The size of the segment that could not be obtained (the request rounded up to its pool's segment size). */
  public long triedBytes() {
    return triedBytes;
  }

  /** The device's free bytes when the allocation failed, or -1 when the device could not say. */
  public long deviceFree() {
    return deviceFree;
  }

  /** The device's capacity in bytes, or -1 when the device could not say. */
  public long deviceTotal() {
    return deviceTotal;
  }

  /** Bytes in blocks the allocator had handed out. */
  public long allocatedBytes() {
    return allocatedBytes;
  }

  /** The most the allocator may reserve ({@link CachingAllocator#setMemoryFraction}), or -1 without a limit. */
  public long allowedBytes() {
    return allowedBytes;
  }

  /** Bytes in segments the allocator held. */
  public long reservedBytes() {
    return reservedBytes;
  }
}
