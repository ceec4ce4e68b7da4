package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The pinned staging pool's bookkeeping with fake events and native memory standing in for pinned memory: a buffer
 * comes back only after the event of the copy that read it completes, the soft limit makes a request wait for the
 * oldest copy instead of allocating, and emptying or closing frees every buffer after waiting for its copy.
 */
class PinnedStagingPoolTest {
  static final long COPY = 0x700; // the copy stream

  /** Native memory that counts allocations and frees and refuses a double free. */
  static final class FakePinned implements PinnedHostMemory {
    final Set<Long> live = new HashSet<>();
    int allocations;
    int frees;

    @Override
    public MemorySegment allocate(long bytes) {
      MemorySegment s = Arena.ofAuto().allocate(bytes, 64);
      live.add(s.address());
      allocations++;
      return s;
    }

    @Override
    public void free(MemorySegment segment) {
      if (!live.remove(segment.address())) throw new AssertionError("free of a segment not live: " + segment);
      frees++;
    }
  }

  private final FakePinned host = new FakePinned();
  private final FakeStreamEvents events = new FakeStreamEvents();
  private final PinnedStagingPool pool = new PinnedStagingPool(host, events);

  @Test
  void binsAreThePowerOfTwoAboveTheRequestAndAtLeast64KiB() {
    assertEquals(PinnedStagingPool.MIN_SIZE, PinnedStagingPool.binSize(0));
    assertEquals(64L << 10, PinnedStagingPool.binSize(1));
    assertEquals(64L << 10, PinnedStagingPool.binSize(64L << 10));
    assertEquals(128L << 10, PinnedStagingPool.binSize((64L << 10) + 1));
    assertEquals(256L << 20, PinnedStagingPool.binSize(256L << 20));
    assertEquals(512L << 20, PinnedStagingPool.binSize((256L << 20) + 1));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> PinnedStagingPool.binSize(-1));
    assertTrue(e.getMessage().contains("PinnedStagingPool") && e.getMessage().contains("-1"), e.getMessage());
  }

  @Test
  void aBufferIsReusedOnlyOnceTheCopyThatReadItHasCompleted() {
    PinnedStagingPool.Staging a = pool.acquire(100_000);
    assertEquals(100_000, a.segment().byteSize());
    assertEquals(128L << 10, a.capacity());
    long event = events.record(COPY);
    pool.release(a, event);
    assertEquals(1, pool.cachedBuffers());
    // the copy is still running: a request of the same bin gets a new buffer
    PinnedStagingPool.Staging b = pool.acquire(120_000);
    assertNotEquals(a.segment().address(), b.segment().address());
    assertEquals(2, host.allocations);
    assertEquals(0, pool.reuses());
    pool.release(b, events.record(COPY));
    events.finish(COPY);
    PinnedStagingPool.Staging c = pool.acquire(70_000);
    assertEquals(a.segment().address(), c.segment().address(), "the oldest completed buffer first");
    assertEquals(70_000, c.segment().byteSize());
    assertEquals(2, host.allocations);
    assertEquals(1, pool.reuses());
    assertTrue(events.destroyed.contains(event), "the pool destroys the event of a buffer it hands out again");
    assertEquals(0, events.synchronizeCalls, "reuse never blocks");
    // another bin never takes this one's buffers
    PinnedStagingPool.Staging d = pool.acquire(1 << 20);
    assertEquals(3, host.allocations);
    pool.releaseUnused(c);
    pool.releaseUnused(d);
    assertEquals(0, pool.inUse());
  }

  @Test
  void pastTheSoftLimitARequestWaitsForTheOldestCopyInsteadOfAllocating() {
    PinnedStagingPool small = new PinnedStagingPool(host, events, 3 * PinnedStagingPool.MIN_SIZE);
    long[] recorded = new long[3];
    PinnedStagingPool.Staging[] s = new PinnedStagingPool.Staging[3];
    for (int i = 0; i < 3; i++) s[i] = small.acquire(1000);
    for (int i = 0; i < 3; i++) small.release(s[i], recorded[i] = events.record(COPY));
    assertEquals(3, host.allocations);
    PinnedStagingPool.Staging next = small.acquire(1000);
    assertEquals(3, host.allocations, "no allocation past the limit");
    assertEquals(1, events.synchronizeCalls);
    assertEquals(1, small.waits());
    assertEquals(s[0].segment().address(), next.segment().address(), "the oldest copy is the one waited for");
    assertTrue(events.destroyed.contains(recorded[0]));
    // a bin with no buffer at all still allocates, limit or not
    PinnedStagingPool.Staging big = small.acquire(1 << 20);
    assertEquals(4, host.allocations);
    small.releaseUnused(next);
    small.releaseUnused(big);
  }

  @Test
  void emptyCacheWaitsForPendingCopiesAndFreesEveryIdleBuffer() {
    PinnedStagingPool.Staging a = pool.acquire(10);
    PinnedStagingPool.Staging b = pool.acquire(1 << 20);
    PinnedStagingPool.Staging held = pool.acquire(10);
    pool.release(a, events.record(COPY));
    pool.release(b, events.record(COPY));
    assertEquals((64L << 10) * 2 + (1L << 20), pool.reservedBytes());
    pool.emptyCache();
    assertEquals(2, events.synchronizeCalls);
    assertEquals(0, events.liveEvents(), "every event destroyed");
    assertEquals(2, host.frees);
    assertEquals(0, pool.cachedBuffers());
    assertEquals(64L << 10, pool.reservedBytes(), "the buffer handed out stays");
    pool.releaseUnused(held);
    assertEquals(1, pool.cachedBuffers());
  }

  @Test
  void afterCloseABufferGivenBackIsFreedOnceItsCopyEndsAndAcquireFails() {
    PinnedStagingPool.Staging a = pool.acquire(10);
    PinnedStagingPool.Staging idle = pool.acquire(10);
    pool.releaseUnused(idle);
    pool.close();
    assertEquals(1, host.frees);
    long event = events.record(COPY);
    pool.release(a, event);
    assertEquals(1, events.synchronizeCalls);
    assertTrue(events.destroyed.contains(event));
    assertEquals(2, host.frees);
    assertTrue(host.live.isEmpty(), "no pinned memory left");
    assertEquals(0, pool.reservedBytes());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.acquire(10));
    assertTrue(e.getMessage().contains("closed"), e.getMessage());
  }

  @Test
  void aSecondReleaseIsRefused() {
    PinnedStagingPool.Staging a = pool.acquire(10);
    pool.releaseUnused(a);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> pool.release(a, events.record(COPY)));
    assertTrue(e.getMessage().contains("given back already"), e.getMessage());
    assertEquals(1, pool.cachedBuffers());
  }
}
