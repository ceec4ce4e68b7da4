package dev.ember.cuda.memory;

/** The mutable counters behind {@link MemoryStats}, each kept over both pools and per pool; guarded by the allocator's lock. */
final class StatCounters {
  enum Metric {
    ALLOCATION, SEGMENT, ACTIVE, INACTIVE_SPLIT, ALLOCATED_BYTES, RESERVED_BYTES, ACTIVE_BYTES,
    INACTIVE_SPLIT_BYTES, REQUESTED_BYTES, OVERSIZE_ALLOCATION, OVERSIZE_SEGMENT
  }

  private static final int ALL = 0;
  private static final int LARGE = 1;
  private static final int SMALL = 2;

  /** [metric][all, large, small][current, peak, allocated, freed]. */
  private final long[][][] values = new long[Metric.values().length][3][4];
  long numAllocRetries;
  long numOoms;
  long numDeviceAlloc;
  long numDeviceFree;

  void increase(Metric metric, boolean small, long amount) {
    change(metric, ALL, amount);
    change(metric, small ? SMALL : LARGE, amount);
  }

  void decrease(Metric metric, boolean small, long amount) {
    increase(metric, small, -amount);
  }

  /** Adds {@code delta} (either sign), as PyTorch's Stat.increase/decrease do: peaks follow rises only. */
  private void change(Metric metric, int pool, long delta) {
    long[] v = values[metric.ordinal()][pool];
    v[0] += delta;
    if (delta > 0) {
      v[2] += delta;
    } else {
      v[3] -= delta;
    }
    assert v[0] >= 0 : metric + " went negative: " + v[0];
    v[1] = Math.max(v[1], v[0]);
  }

  long current(Metric metric) {
    return values[metric.ordinal()][ALL][0];
  }

  long current(Metric metric, boolean small) {
    return values[metric.ordinal()][small ? SMALL : LARGE][0];
  }

  void resetPeaks() {
    for (long[][] metric : values) {
      for (long[] v : metric) {
        v[1] = v[0];
      }
    }
  }

  void resetAccumulated() {
    for (long[][] metric : values) {
      for (long[] v : metric) {
        v[2] = 0;
        v[3] = 0;
      }
    }
    numAllocRetries = 0;
    numOoms = 0;
    numDeviceAlloc = 0;
    numDeviceFree = 0;
  }

  MemoryStats snapshot() {
    return new MemoryStats(pool(ALL), pool(LARGE), pool(SMALL), stat(Metric.OVERSIZE_ALLOCATION, ALL),
        stat(Metric.OVERSIZE_SEGMENT, ALL), numAllocRetries, numOoms, numDeviceAlloc, numDeviceFree);
  }

  private PoolStats pool(int pool) {
    return new PoolStats(stat(Metric.ALLOCATION, pool), stat(Metric.SEGMENT, pool), stat(Metric.ACTIVE, pool),
        stat(Metric.INACTIVE_SPLIT, pool), stat(Metric.ALLOCATED_BYTES, pool), stat(Metric.RESERVED_BYTES, pool),
        stat(Metric.ACTIVE_BYTES, pool), stat(Metric.INACTIVE_SPLIT_BYTES, pool), stat(Metric.REQUESTED_BYTES, pool));
  }

  private Stat stat(Metric metric, int pool) {
    long[] v = values[metric.ordinal()][pool];
    return new Stat(v[0], v[1], v[2], v[3]);
  }
}
