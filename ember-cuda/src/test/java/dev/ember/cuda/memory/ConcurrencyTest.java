package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Two threads allocating and freeing at once never get overlapping blocks, and the books balance afterwards. */
class ConcurrencyTest {
  static final long KiB = 1L << 10;
  static final long MiB = 1L << 20;

  @Test
  void twoThreadsNeverShareMemoryAndCountersBalance() throws Exception {
    FakeRawMemory raw = new FakeRawMemory(1L << 40);
    FakeStreamEvents events = new FakeStreamEvents();
    // The fakes are not thread-safe; the allocator calls them under its lock, which this test relies on.
    CachingAllocator alloc = new CachingAllocator(0, raw, events);
    TreeMap<Long, Long> liveRanges = new TreeMap<>(); // start -> end of every block some thread holds
    CyclicBarrier start = new CyclicBarrier(2);
    // Daemon threads and a bounded wait: a broken lock can corrupt the free sets into an endless loop, which
    // should fail this test, not hang the build.
    ExecutorService pool = Executors.newFixedThreadPool(2, r -> {
      Thread t = new Thread(r, "allocator-smoke");
      t.setDaemon(true);
      return t;
    });
    try {
      List<Future<?>> done = new ArrayList<>();
      for (int t = 0; t < 2; t++) {
        long seed = 100 + t;
        done.add(pool.submit(() -> {
          start.await();
          work(alloc, liveRanges, new SplittableRandom(seed));
          return null;
        }));
      }
      for (Future<?> f : done) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    alloc.checkInvariants();
    MemoryStats s = alloc.stats();
    assertEquals(0, s.allocation().current());
    assertEquals(0, s.allocatedBytes().current());
    assertEquals(0, s.all().inactiveSplit().current());
    assertEquals(raw.usedBytes(), s.reservedBytes().current());
    assertEquals(8000, s.allocation().allocated());
    alloc.emptyCache();
    assertEquals(0, raw.liveSegments());
  }

  /** 4000 allocations and frees on one shared stream, a few blocks held at a time. */
  private static void work(CachingAllocator alloc, TreeMap<Long, Long> liveRanges, SplittableRandom rnd) {
    List<Block> held = new ArrayList<>();
    for (int i = 0; i < 4000; i++) {
      long bytes = rnd.nextBoolean() ? 1 + rnd.nextLong(256 * KiB) : 1 + rnd.nextLong(12 * MiB);
      Block b = alloc.allocate(bytes, 1);
      synchronized (liveRanges) {
        Map.Entry<Long, Long> before = liveRanges.floorEntry(b.ptr() + b.size() - 1);
        if (before != null && before.getValue() > b.ptr()) {
          throw new AssertionError(String.format("block [0x%x, 0x%x) overlaps live [0x%x, 0x%x)", b.ptr(),
              b.ptr() + b.size(), before.getKey(), before.getValue()));
        }
        liveRanges.put(b.ptr(), b.ptr() + b.size());
      }
      held.add(b);
      if (i % 100 == 0) {
        alloc.checkInvariants();
      }
      if (held.size() > 6 || rnd.nextInt(3) == 0) {
        Block f = held.remove(rnd.nextInt(held.size()));
        synchronized (liveRanges) {
          liveRanges.remove(f.ptr());
        }
        alloc.free(f);
      }
    }
    for (Block f : held) {
      synchronized (liveRanges) {
        liveRanges.remove(f.ptr());
      }
      alloc.free(f);
    }
  }
}
