package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Blocks are cached per stream; one used on other streams waits for their events before reuse. */
class StreamReuseTest {
  static final long MiB = 1L << 20;
  static final long S1 = 0x100;
  static final long S2 = 0x200;
  static final long S3 = 0x300;

  private final FakeRawMemory raw = new FakeRawMemory(1L << 40);
  private final FakeStreamEvents events = new FakeStreamEvents();
  private final CachingAllocator alloc = new CachingAllocator(0, raw, events);

  @Test
  void aFreedBlockServesOnlyItsOwnStream() {
    Block a = alloc.allocate(12 * MiB, S1);
    alloc.free(a);
    Block b = alloc.allocate(12 * MiB, S2);
    assertNotEquals(a.ptr(), b.ptr());
    assertEquals(2, raw.mallocCalls);
    Block c = alloc.allocate(12 * MiB, S1);
    assertEquals(a.ptr(), c.ptr());
    assertEquals(2, raw.mallocCalls);
    assertEquals(0, events.recordedOn.size(), "no stream uses, no events");
  }

  @Test
  void aBlockOfAStreamOrderedAfterTheRequestsIsNotTaken() {
    // Free sets order by stream first: the best fit search lands on S2's block for an S1 request, and must refuse it.
    Block a = alloc.allocate(12 * MiB, S2);
    alloc.free(a);
    Block b = alloc.allocate(12 * MiB, S1);
    assertNotEquals(a.ptr(), b.ptr());
    assertEquals(2, raw.mallocCalls);
  }

  @Test
  void splitPiecesKeepTheirSegmentsStream() {
    Block a = alloc.allocate(4096, S1);
    Block b = alloc.allocate(4096, S2);
    assertEquals(2, raw.mallocCalls, "each stream gets its own small segment");
    assertEquals(S2, b.stream());
    alloc.free(a);
    alloc.free(b);
  }

  @Test
  void blockUsedOnAnotherStreamWaitsForItsEvent() {
    Block a = alloc.allocate(12 * MiB, S1); // a whole segment, so only a itself could serve a second request
    alloc.recordStream(a, S2);
    alloc.free(a);
    assertEquals(List.of(S2), events.recordedOn);
    MemoryStats s = alloc.stats();
    assertEquals(0, s.allocation().current());
    assertEquals(1, s.active().current(), "awaiting its event the block is still active");
    assertEquals(12 * MiB, s.all().activeBytes().current());

    Block b = alloc.allocate(12 * MiB, S1);
    assertNotEquals(a.ptr(), b.ptr(), "S2 may still be reading a: not reused yet");
    assertEquals(2, raw.mallocCalls);

    events.finish(S2);
    Block c = alloc.allocate(12 * MiB, S1);
    assertEquals(a.ptr(), c.ptr(), "S2's work is done: a is reused");
    assertEquals(2, raw.mallocCalls);
    assertEquals(0, events.liveEvents(), "the completed event was destroyed");
  }

  @Test
  void blockUsedOnTwoStreamsWaitsForBoth() {
    Block a = alloc.allocate(12 * MiB, S1);
    alloc.recordStream(a, S2);
    alloc.recordStream(a, S3);
    alloc.recordStream(a, S2); // recorded once per stream
    alloc.free(a);
    assertEquals(List.of(S2, S3), events.recordedOn);
    events.finish(S3);
    assertNotEquals(a.ptr(), alloc.allocate(12 * MiB, S1).ptr());
    events.finish(S2);
    assertEquals(a.ptr(), alloc.allocate(12 * MiB, S1).ptr());
    assertEquals(0, events.liveEvents());
  }

  @Test
  void useOnTheBlocksOwnStreamNeedsNoEvent() {
    Block a = alloc.allocate(12 * MiB, S1);
    alloc.recordStream(a, S1);
    alloc.free(a);
    assertEquals(List.of(), events.recordedOn);
    assertEquals(a.ptr(), alloc.allocate(12 * MiB, S1).ptr());
  }

  @Test
  void pendingBlockDoesNotMergeUntilItsEventCompletes() {
    Block a = alloc.allocate(4096, S1);
    Block b = alloc.allocate(4096, S1);
    alloc.recordStream(a, S2);
    alloc.free(a); // pending
    alloc.free(b); // merges with the free rest, but not with a
    MemoryStats s = alloc.stats();
    assertEquals(1, s.smallPool().inactiveSplit().current(), "b and the rest are one piece; a is not free yet");
    assertEquals(2 * MiB - 4096, s.smallPool().inactiveSplitBytes().current());
    events.finish(S2);
    alloc.allocate(512, S3); // any allocation checks events; S3 gets a segment of its own
    s = alloc.stats();
    assertEquals(1, s.smallPool().inactiveSplit().current(), "S1's segment is whole again; only S3's rest remains");
    assertEquals(2 * MiB - 512, s.smallPool().inactiveSplitBytes().current());
    alloc.emptyCache();
    assertEquals(1, raw.liveSegments(), "S1's segment was whole, so it went back");
  }

  @Test
  void emptyCacheWaitsForPendingEventsAndReleasesTheirSegments() {
    Block a = alloc.allocate(12 * MiB, S1);
    alloc.recordStream(a, S2);
    alloc.free(a);
    alloc.emptyCache();
    assertEquals(1, events.synchronizeCalls);
    assertEquals(0, events.liveEvents());
    assertEquals(0, raw.liveSegments());
    MemoryStats s = alloc.stats();
    assertEquals(0, s.active().current());
    assertEquals(0, s.reservedBytes().current());
  }

  @Test
  void outOfMemoryRetryWaitsForPendingEvents() {
    FakeRawMemory small = new FakeRawMemory(30 * MiB);
    CachingAllocator tight = new CachingAllocator(0, small, events);
    Block a = tight.allocate(16 * MiB, S1);
    tight.recordStream(a, S2);
    tight.free(a);
    Block b = tight.allocate(20 * MiB, S1); // fits only once a's segment, held back by S2, is released
    assertEquals(20 * MiB, b.size());
    assertEquals(1, events.synchronizeCalls);
    assertEquals(1, tight.stats().numAllocRetries());
  }

  @Test
  void pendingBlockShowsInTheSnapshot() {
    Block a = alloc.allocate(12 * MiB, S1);
    alloc.recordStream(a, S2);
    alloc.free(a);
    assertEquals(SegmentSnapshot.State.ACTIVE_PENDING_FREE, alloc.snapshot().get(0).blocks().get(0).state());
    alloc.checkInvariants();
  }

  @Test
  void randomCrossStreamWorkloadKeepsTheBooksStraight() {
    SplittableRandom rnd = new SplittableRandom(39);
    long[] streams = {S1, S2, S3};
    List<Block> live = new ArrayList<>();
    for (int step = 0; step < 3000; step++) {
      int action = rnd.nextInt(100);
      if (live.isEmpty() || action < 45) {
        long bytes = rnd.nextBoolean() ? 1 + rnd.nextLong(512 * 1024) : 1 + rnd.nextLong(16 * MiB);
        live.add(alloc.allocate(bytes, streams[rnd.nextInt(3)]));
      } else if (action < 60) {
        alloc.recordStream(live.get(rnd.nextInt(live.size())), streams[rnd.nextInt(3)]);
      } else if (action < 90) {
        alloc.free(live.remove(rnd.nextInt(live.size())));
      } else if (action < 99) {
        events.finish(streams[rnd.nextInt(3)]);
      } else {
        alloc.emptyCache();
      }
      alloc.checkInvariants();
      assertEquals(raw.usedBytes(), alloc.stats().reservedBytes().current(), "step " + step);
    }
    live.forEach(alloc::free);
    alloc.emptyCache();
    alloc.checkInvariants();
    assertEquals(0, raw.liveSegments());
    assertEquals(0, events.liveEvents());
    assertEquals(0, alloc.stats().active().current());
  }

  @Test
  void failedEventRecordLeavesTheBlockAllocated() {
    IllegalStateException broken = new IllegalStateException("cuEventRecord: CUDA_ERROR_LAUNCH_FAILED");
    FakeStreamEvents failing = new FakeStreamEvents() {
      @Override
      public long record(long stream) {
        if (stream == S3) {
          throw broken;
        }
        return super.record(stream);
      }
    };
    CachingAllocator strict = new CachingAllocator(0, raw, failing);
    Block a = strict.allocate(12 * MiB, S1);
    strict.recordStream(a, S2);
    strict.recordStream(a, S3);
    assertSame(broken, assertThrows(IllegalStateException.class, () -> strict.free(a)));
    assertEquals(1, strict.stats().allocation().current(), "the free did not happen");
    assertEquals(0, failing.liveEvents(), "the event recorded on S2 was destroyed");
    strict.checkInvariants();
    assertThrows(IllegalStateException.class, () -> strict.free(a), "still S3's use cannot be recorded");
  }

  @Test
  void recordStreamOnAFreedBlockIsRefused() {
    Block a = alloc.allocate(4096, S1);
    alloc.free(a);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> alloc.recordStream(a, S2));
    assertEquals(String.format("CachingAllocator.recordStream: block at 0x%x (4096 bytes) was already freed",
        a.ptr()), e.getMessage());
  }
}
