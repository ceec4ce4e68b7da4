package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** A split limit (PyTorch's max_split_size_mb): oversize blocks are whole, reused sparingly, released first. */
class SplitLimitTest {
  static final long MiB = 1L << 20;
  static final long LIMIT = 40 * MiB;
  static final long S = 9;

  private FakeRawMemory raw = new FakeRawMemory(1L << 40);
  private CachingAllocator alloc = new CachingAllocator(0, raw, new FakeStreamEvents(), LIMIT);

  private void device(long capacity) {
    raw = new FakeRawMemory(capacity);
    alloc = new CachingAllocator(0, raw, new FakeStreamEvents(), LIMIT);
  }

  @Test
  void oversizeBlocksAreNeverSplit() {
    Block a = alloc.allocate(50 * MiB, S);
    alloc.free(a);
    Block b = alloc.allocate(45 * MiB, S); // wastes 5 MiB of the 50: under 20 MiB, so it is taken whole
    assertEquals(a.ptr(), b.ptr());
    assertEquals(50 * MiB, b.size());
    MemoryStats s = alloc.stats();
    assertEquals(1, s.oversizeAllocations().current());
    assertEquals(1, s.oversizeSegments().current());
    assertEquals(0, s.all().inactiveSplit().current());
    alloc.free(b);
    assertEquals(0, alloc.stats().oversizeAllocations().current());
  }

  @Test
  void oversizeBlockThatWouldWasteTwentyMebibytesIsNotTaken() {
    alloc.free(alloc.allocate(80 * MiB, S));
    Block b = alloc.allocate(41 * MiB, S); // would waste 38 MiB of the 80
    assertEquals(42 * MiB, b.size());
    assertEquals(2, raw.mallocCalls);
  }

  @Test
  void smallerRequestsNeverTakeAnOversizeBlock() {
    Block a = alloc.allocate(50 * MiB, S);
    alloc.free(a);
    Block b = alloc.allocate(12 * MiB, S);
    assertNotEquals(a.ptr(), b.ptr());
    assertEquals(2, raw.mallocCalls);
    CachingAllocator unlimited = new CachingAllocator(0, new FakeRawMemory(1L << 40), new FakeStreamEvents());
    Block c = unlimited.allocate(50 * MiB, S);
    unlimited.free(c);
    assertEquals(c.ptr(), unlimited.allocate(12 * MiB, S).ptr(), "without a limit the 50 MiB block is split");
  }

  @Test
  void fullDeviceReleasesTheSmallestOversizeBlockThatFitsBeforeTheWholeCache() {
    device(100 * MiB);
    alloc.free(alloc.allocate(80 * MiB, S));
    alloc.free(alloc.allocate(4096, S)); // a cached small segment, which must survive
    Block b = alloc.allocate(45 * MiB, S); // a 46 MiB segment fits once the 80 MiB one is gone
    assertEquals(46 * MiB, b.size());
    assertEquals(1, raw.freeCalls);
    assertEquals(2, raw.liveSegments());
    assertEquals(0, alloc.stats().numAllocRetries(), "the full release and its retry were not needed");
    alloc.checkInvariants();
  }

  @Test
  void fullDeviceReleasesTheLargestOversizeBlocksUntilTheyAddUp() {
    device(110 * MiB);
    Block a = alloc.allocate(50 * MiB, S);
    Block b = alloc.allocate(50 * MiB, S);
    alloc.free(a);
    alloc.free(b);
    alloc.free(alloc.allocate(4096, S));
    Block c = alloc.allocate(60 * MiB, S);
    assertEquals(60 * MiB, c.size());
    assertEquals(2, raw.freeCalls, "both 50 MiB blocks went back; the small segment stayed");
    assertEquals(2, raw.liveSegments());
    assertEquals(1, alloc.stats().oversizeSegments().current(), "only the new 60 MiB segment");
    alloc.checkInvariants();
  }

  @Test
  void limitMustExceedTheLargeSegmentSize() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> new CachingAllocator(0, raw, new FakeStreamEvents(), 20 * MiB));
    assertEquals("CachingAllocator: maxSplitSize must be over 20 MiB (20971520 bytes), got 20971520", e.getMessage());
  }

  @Test
  void randomWorkloadOnATightDeviceKeepsTheBooksStraight() {
    device(400 * MiB);
    SplittableRandom rnd = new SplittableRandom(39);
    List<Block> live = new ArrayList<>();
    int ooms = 0;
    for (int step = 0; step < 3000; step++) {
      if (live.isEmpty() || rnd.nextInt(100) < 50) {
        long bytes = switch (rnd.nextInt(3)) {
          case 0 -> 1 + rnd.nextLong(2 * MiB);
          case 1 -> 1 + rnd.nextLong(30 * MiB);
          default -> 30 * MiB + rnd.nextLong(70 * MiB);
        };
        try {
          live.add(alloc.allocate(bytes, rnd.nextInt(2)));
        } catch (CudaOutOfMemoryError e) {
          ooms++;
        }
      } else {
        alloc.free(live.remove(rnd.nextInt(live.size())));
      }
      alloc.checkInvariants();
      assertEquals(raw.usedBytes(), alloc.stats().reservedBytes().current(), "step " + step);
    }
    MemoryStats s = alloc.stats();
    assertEquals(ooms, s.numOoms());
    assertTrue(ooms > 0 && s.numAllocRetries() > ooms, "the workload reaches both release paths: " + s.asMap());
    assertTrue(s.numDeviceFree() > 0);
    live.forEach(alloc::free);
    alloc.emptyCache();
    alloc.checkInvariants();
    assertEquals(0, raw.liveSegments());
  }
}
