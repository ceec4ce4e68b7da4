package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The counters of {@link CachingAllocator#stats}: current, peak, totals, per pool, resets. */
class MemoryStatsTest {
  static final long KiB = 1L << 10;
  static final long MiB = 1L << 20;
  static final long S = 7;

  private final FakeRawMemory raw = new FakeRawMemory(1L << 40);
  private final CachingAllocator alloc = new CachingAllocator(0, raw, new FakeStreamEvents());

  @Test
  void countsFollowAllocationsAndFrees() {
    Block a = alloc.allocate(1000, S);
    Block b = alloc.allocate(5 * MiB, S);
    MemoryStats s = alloc.stats();
    assertEquals(new Stat(1024 + 5 * MiB, 1024 + 5 * MiB, 1024 + 5 * MiB, 0), s.allocatedBytes());
    assertEquals(new Stat(22 * MiB, 22 * MiB, 22 * MiB, 0), s.reservedBytes());
    assertEquals(new Stat(2, 2, 2, 0), s.allocation());
    assertEquals(new Stat(2, 2, 2, 0), s.active());
    assertEquals(new Stat(2, 2, 2, 0), s.segment());
    assertEquals(1000 + 5 * MiB, s.all().requestedBytes().current());
    assertEquals(1024, s.smallPool().allocatedBytes().current());
    assertEquals(5 * MiB, s.largePool().allocatedBytes().current());
    assertEquals(2 * MiB, s.smallPool().reservedBytes().current());
    assertEquals(20 * MiB, s.largePool().reservedBytes().current());
    assertEquals(2, s.numDeviceAlloc());
    // Both segments are split: the free rest of each is an inactive split piece.
    assertEquals(new Stat(2, 2, 2, 0), s.all().inactiveSplit());
    assertEquals(2 * MiB - 1024 + 15 * MiB, s.all().inactiveSplitBytes().current());

    alloc.free(b);
    s = alloc.stats();
    assertEquals(new Stat(1024, 1024 + 5 * MiB, 1024 + 5 * MiB, 5 * MiB), s.allocatedBytes());
    assertEquals(22 * MiB, s.reservedBytes().current(), "a free caches the memory, it is still reserved");
    assertEquals(new Stat(1, 2, 2, 1), s.allocation());
    assertEquals(1000, s.all().requestedBytes().current());
    // The large segment is whole again: its pieces merged, nothing of it is an inactive split piece.
    assertEquals(0, s.largePool().inactiveSplit().current());
    assertEquals(1, s.smallPool().inactiveSplit().current());
    assertEquals(2 * MiB - 1024, s.smallPool().inactiveSplitBytes().current());
  }

  @Test
  void asMapUsesTorchsKeys() {
    Block a = alloc.allocate(1000, S);
    alloc.allocate(5 * MiB, S);
    alloc.free(a);
    Map<String, Long> m = alloc.stats().asMap();
    assertEquals(9 * 3 * 4 + 2 * 4 + 4, m.size());
    assertEquals(5 * MiB, m.get("allocated_bytes.all.current"));
    assertEquals(5 * MiB + 1024, m.get("allocated_bytes.all.peak"));
    assertEquals(1024, m.get("allocated_bytes.small_pool.freed"));
    assertEquals(20 * MiB, m.get("reserved_bytes.large_pool.current"));
    assertEquals(1, m.get("allocation.all.current"));
    assertEquals(1, m.get("inactive_split.large_pool.current"));
    assertEquals(2, m.get("num_device_alloc"));
    assertEquals(0, m.get("num_ooms"));
    assertEquals("allocation.all.current", m.keySet().iterator().next());
  }

  @Test
  void resetPeakStatsSetsPeaksToTheCurrentValues() {
    Block a = alloc.allocate(8 * MiB, S);
    alloc.free(a);
    alloc.resetPeakStats();
    MemoryStats s = alloc.stats();
    assertEquals(new Stat(0, 0, 8 * MiB, 8 * MiB), s.allocatedBytes());
    assertEquals(20 * MiB, s.reservedBytes().peak());
    Block b = alloc.allocate(3 * MiB, S);
    assertEquals(3 * MiB, alloc.stats().allocatedBytes().peak());
    alloc.free(b);
    alloc.emptyCache();
    alloc.resetPeakStats();
    assertEquals(0, alloc.stats().reservedBytes().peak());
  }

  @Test
  void resetAccumulatedStatsZeroesTotalsAndCounts() {
    Block a = alloc.allocate(4 * KiB, S);
    alloc.free(a);
    alloc.emptyCache();
    alloc.resetAccumulatedStats();
    MemoryStats s = alloc.stats();
    assertEquals(new Stat(0, 4 * KiB, 0, 0), s.allocatedBytes());
    assertEquals(0, s.numDeviceAlloc());
    assertEquals(0, s.numDeviceFree());
  }

  @Test
  void countersAgreeWithTheDeviceThroughARandomWorkload() {
    SplittableRandom rnd = new SplittableRandom(39);
    List<Block> live = new ArrayList<>();
    for (int step = 0; step < 3000; step++) {
      if (live.isEmpty() || rnd.nextInt(100) < 55) {
        long bytes = switch (rnd.nextInt(3)) {
          case 0 -> 1 + rnd.nextLong(64 * KiB);
          case 1 -> 1 + rnd.nextLong(4 * MiB);
          default -> 1 + rnd.nextLong(24 * MiB);
        };
        live.add(alloc.allocate(bytes, rnd.nextInt(3)));
      } else {
        alloc.free(live.remove(rnd.nextInt(live.size())));
      }
      if (step % 500 == 0) {
        alloc.emptyCache();
      }
      alloc.checkInvariants();
      MemoryStats s = alloc.stats();
      assertEquals(raw.usedBytes(), s.reservedBytes().current(), "reserved at step " + step);
      assertEquals(raw.liveSegments(), s.segment().current(), "segments at step " + step);
      assertEquals(live.stream().mapToLong(Block::size).sum(), s.allocatedBytes().current(), "step " + step);
      assertEquals(live.stream().mapToLong(Block::requestedSize).sum(), s.all().requestedBytes().current());
      assertEquals(live.size(), s.allocation().current());
      assertEquals(s.allocation(), s.active(), "no stream uses: active is allocated");
      assertEquals(s.largePool().allocatedBytes().current() + s.smallPool().allocatedBytes().current(),
          s.allocatedBytes().current());
    }
    live.forEach(alloc::free);
    MemoryStats s = alloc.stats();
    assertEquals(0, s.all().inactiveSplit().current(), "with nothing live every segment is whole again");
    assertEquals(0, s.all().inactiveSplitBytes().current());
    alloc.emptyCache();
    assertEquals(0, raw.liveSegments());
    assertEquals(0, alloc.stats().reservedBytes().current());
  }
}
