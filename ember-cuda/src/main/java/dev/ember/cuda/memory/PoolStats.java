package dev.ember.cuda.memory;

/**
 * The counters of a {@link CachingAllocator} over one pool (small, large) or over both; each names its
 * {@code torch.cuda.memory_stats()} key.
 *
 * @param allocation live blocks ({@code allocation})
 * @param segment segments obtained from the device and not given back ({@code segment})
 * @param active blocks allocated or waiting for stream events before reuse ({@code active})
 * @param inactiveSplit free pieces of segments that are split, which {@code emptyCache} cannot release
 *     ({@code inactive_split})
 * @param allocatedBytes bytes in live blocks ({@code allocated_bytes})
 * @param reservedBytes bytes in segments ({@code reserved_bytes})
 * @param activeBytes bytes in active blocks ({@code active_bytes})
 * @param inactiveSplitBytes bytes in inactive split pieces ({@code inactive_split_bytes})
 * @param requestedBytes bytes the callers of live blocks asked for, before rounding ({@code requested_bytes})
 */
public record PoolStats(
    Stat allocation,
    Stat segment,
    Stat active,
    Stat inactiveSplit,
    Stat allocatedBytes,
    Stat reservedBytes,
    Stat activeBytes,
    Stat inactiveSplitBytes,
    Stat requestedBytes) {}
