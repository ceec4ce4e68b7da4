package dev.ember.cuda.memory;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * A snapshot of a {@link CachingAllocator}'s counters ({@code torch.cuda.memory_stats()}): per pool and over both,
 * with shortcuts for the totals most callers want.
 *
 * @param all the counters over both pools
 * @param largePool the counters of the large pool (blocks over 1 MiB)
 * @param smallPool the counters of the small pool (blocks up to 1 MiB)
 * @param oversizeAllocations live blocks of the split limit's size or more ({@code oversize_allocations}; 0
 *     without a limit)
 * @param oversizeSegments segments of the split limit's size or more ({@code oversize_segments})
 * @param numAllocRetries device allocations that failed and were retried after releasing the cache
 * @param numOoms allocations that failed even after the retry ({@link CudaOutOfMemoryError}s thrown)
 * @param numDeviceAlloc segments obtained from the device
 * @param numDeviceFree segments given back to the device
 */
public record MemoryStats(
    PoolStats all,
    PoolStats largePool,
    PoolStats smallPool,
    Stat oversizeAllocations,
    Stat oversizeSegments,
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

  /**
   * The counters under {@code torch.cuda.memory_stats()}'s keys, in a stable order, for logs and metrics:
   * {@code "allocated_bytes.all.current"}, {@code "reserved_bytes.large_pool.peak"}, ...,
   * {@code "num_alloc_retries"}, {@code "num_ooms"}, {@code "num_device_alloc"}, {@code "num_device_free"}.
   */
  public Map<String, Long> asMap() {
    Map<String, Long> out = new LinkedHashMap<>();
    put(out, "allocation", PoolStats::allocation);
    put(out, "segment", PoolStats::segment);
    put(out, "active", PoolStats::active);
    put(out, "inactive_split", PoolStats::inactiveSplit);
    put(out, "allocated_bytes", PoolStats::allocatedBytes);
    put(out, "reserved_bytes", PoolStats::reservedBytes);
    put(out, "active_bytes", PoolStats::activeBytes);
    put(out, "inactive_split_bytes", PoolStats::inactiveSplitBytes);
    put(out, "requested_bytes", PoolStats::requestedBytes);
    put(out, "oversize_allocations", oversizeAllocations);
    put(out, "oversize_segments", oversizeSegments);
    out.put("num_alloc_retries", numAllocRetries);
    out.put("num_ooms", numOoms);
    out.put("num_device_alloc", numDeviceAlloc);
    out.put("num_device_free", numDeviceFree);
    return out;
  }

  private void put(Map<String, Long> out, String name, Function<PoolStats, Stat> stat) {
    for (Map.Entry<String, PoolStats> pool : List.of(Map.entry("all", all), Map.entry("large_pool", largePool),
        Map.entry("small_pool", smallPool))) {
      put(out, name + "." + pool.getKey(), stat.apply(pool.getValue()));
    }
  }

  private static void put(Map<String, Long> out, String name, Stat s) {
    out.put(name + ".current", s.current());
    out.put(name + ".peak", s.peak());
    out.put(name + ".allocated", s.allocated());
    out.put(name + ".freed", s.freed());
  }
}
