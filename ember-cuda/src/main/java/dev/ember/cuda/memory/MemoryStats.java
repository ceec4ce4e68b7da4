package dev.ember.cuda.memory;

/**
 * A snapshot of a {@link CachingAllocator}'s counters ({@code torch.cuda.memory_stats()}): per pool and over both,
 * with shortcuts for the totals most callers want.
 *
 * @param all the counters over both pools
 * @param largePool the counters of the large pool (blocks over 1 MiB)
 * @param smallPool the counters of the small pool (blocks up to 1 MiB)
 * @param numAllocRetries device allocations that failed and were retried after releasing the cache
 * @param numOoms allocations that failed even after the retry ({@link CudaOutOfMemoryError}s thrown)
 * @param numDeviceAlloc segments obtained from the device
 * @param numDeviceFree segments given back to the device
 */
public record MemoryStats(
    PoolStats all,
    PoolStats largePool,
    PoolStats smallPool,
    long numAllocRetries,
    long numOoms,
    long numDeviceAlloc,
    long numDeviceFree) {

  /** Bytes in live blocks, over both pools ({@code torch.cuda.memory_allocated}, its peak, totals). */
  public Stat allocatedBytes() {
    return all.allocatedBytes();
  }

  /** Bytes in segments held from the device, over both pools ({@code torch.cuda.memory_reserved}). */
  public Stat reservedBytes() {
    return all.reservedBytes();
  }

  /** Live blocks over both pools. */
  public Stat allocation() {
    return all.allocation();
  }

  /** Blocks allocated or waiting for stream events, over both pools. */
  public Stat active() {
    return all.active();
  }

  /** Segments held from the device, over both pools. */
  public Stat segment() {
    return all.segment();
  }
}
