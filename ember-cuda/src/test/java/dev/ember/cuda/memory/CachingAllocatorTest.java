package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Rounding, pools, reuse, splitting, coalescing, best fit and misuse, over a fake device that counts calls. */
class CachingAllocatorTest {
  static final long KiB = 1L << 10;
  static final long MiB = 1L << 20;
  static final long S = 0x5000; // a stream handle

  private final FakeRawMemory raw = new FakeRawMemory(1L << 40);
  private final FakeStreamEvents events = new FakeStreamEvents();
  private final CachingAllocator alloc = new CachingAllocator(0, raw, events);

  @Test
  void sizesRoundUpTo512Bytes() {
    assertEquals(512, CachingAllocator.roundSize(1));
    assertEquals(512, CachingAllocator.roundSize(512));
    assertEquals(1024, CachingAllocator.roundSize(513));
    assertEquals(3 * MiB, CachingAllocator.roundSize(3 * MiB));
    Block b = alloc.allocate(1000, S);
    assertEquals(1024, b.size());
    assertEquals(1000, b.requestedSize());
    assertEquals(S, b.stream());
  }

  @Test
  void segmentSizesFollowThePools() {
    assertEquals(2 * MiB, CachingAllocator.segmentSize(512));
    assertEquals(2 * MiB, CachingAllocator.segmentSize(MiB));
    assertEquals(20 * MiB, CachingAllocator.segmentSize(MiB + 512));
    assertEquals(20 * MiB, CachingAllocator.segmentSize(10 * MiB - 512));
    assertEquals(10 * MiB, CachingAllocator.segmentSize(10 * MiB));
    assertEquals(12 * MiB, CachingAllocator.segmentSize(10 * MiB + 512));
    assertEquals(12 * MiB, CachingAllocator.segmentSize(12 * MiB));
  }

  @Test
  void smallRequestsShareOneTwoMebibyteSegment() {
    Block a = alloc.allocate(1000, S);
    Block b = alloc.allocate(MiB - 1024, S); // small pool up to 1 MiB, rounds to exactly 1 MiB - 512
    assertEquals(1, raw.mallocCalls);
    assertEquals(2 * MiB, raw.usedBytes());
    assertEquals(a.ptr() + 1024, b.ptr());
    assertEquals(2 * MiB, alloc.stats().smallPool().reservedBytes().current());
    assertEquals(0, alloc.stats().largePool().reservedBytes().current());
  }

  @Test
  void largeRequestsBelowTenMebibytesShareTwentyMebibyteSegments() {
    Block a = alloc.allocate(MiB + 1, S); // just over the small pool: large
    Block b = alloc.allocate(5 * MiB, S);
    assertEquals(1, raw.mallocCalls);
    assertEquals(20 * MiB, raw.usedBytes());
    assertEquals(MiB + 512, a.size());
    assertEquals(a.ptr() + a.size(), b.ptr());
    assertEquals(20 * MiB, alloc.stats().largePool().reservedBytes().current());
  }

  @Test
  void requestsFromTenMebibytesGetTheirOwnSegmentRoundedToTwoMebibytes() {
    Block a = alloc.allocate(11 * MiB, S);
    assertEquals(1, raw.mallocCalls);
    assertEquals(12 * MiB, raw.usedBytes());
    // The 1 MiB rest is not worth a split in the large pool: the block takes the whole segment.
    assertEquals(12 * MiB, a.size());
    alloc.allocate(MiB + 512, S);
    assertEquals(2, raw.mallocCalls);
  }

  @Test
  void freedBlockIsReusedWithoutADeviceCall() {
    Block a = alloc.allocate(3 * MiB, S);
    alloc.free(a);
    Block b = alloc.allocate(3 * MiB, S);
    assertEquals(a.ptr(), b.ptr());
    assertEquals(1, raw.mallocCalls);
    assertEquals(0, raw.freeCalls);
  }

  @Test
  void smallPoolSplitsAnyRestOf512BytesOrMore() {
    Block a = alloc.allocate(2 * MiB - 512, S); // not small: large pool
    assertEquals(20 * MiB, raw.usedBytes());
    alloc.free(a);
    Block s1 = alloc.allocate(MiB, S);
    Block s2 = alloc.allocate(MiB - 512, S);
    Block s3 = alloc.allocate(512, S); // the last 512 bytes of the 2 MiB small segment
    assertEquals(s1.ptr() + MiB, s2.ptr());
    assertEquals(s2.ptr() + MiB - 512, s3.ptr());
    assertEquals(512, s3.size());
    assertEquals(2, raw.mallocCalls);
  }

  @Test
  void largePoolKeepsTheRestOnlyWhenOverOneMebibyte() {
    Block whole = alloc.allocate(19 * MiB, S); // rest 1 MiB: not split
    assertEquals(20 * MiB, whole.size());
    assertEquals(19 * MiB, whole.requestedSize());
    alloc.free(whole);
    Block part = alloc.allocate(18 * MiB + 512, S); // rest 2 MiB - 512: split
    assertEquals(18 * MiB + 512, part.size());
    Block rest = alloc.allocate(2 * MiB - 1024, S);
    assertEquals(part.ptr() + part.size(), rest.ptr());
    assertEquals(1, raw.mallocCalls);
  }

  @Test
  void freedNeighboursCoalesceIntoTheWholeSegment() {
    Block a = alloc.allocate(4 * KiB, S);
    Block b = alloc.allocate(4 * KiB, S);
    Block c = alloc.allocate(4 * KiB, S);
    alloc.free(a);
    alloc.free(c); // merges with the free rest of the segment
    assertEquals(2, alloc.stats().all().inactiveSplit().current());
    alloc.free(b); // merges with both sides: one free piece, the whole segment
    MemoryStats stats = alloc.stats();
    assertEquals(0, stats.all().inactiveSplit().current());
    assertEquals(0, stats.all().inactiveSplitBytes().current());
    Block whole = alloc.allocate(2 * MiB - 512, S); // large pool: needs a new segment
    Block smallWhole = alloc.allocate(MiB, S);
    Block smallRest = alloc.allocate(MiB, S);
    assertEquals(a.ptr(), smallWhole.ptr());
    assertEquals(a.ptr() + MiB, smallRest.ptr());
    assertNotEquals(a.ptr(), whole.ptr());
    alloc.free(smallWhole);
    alloc.free(smallRest);
    alloc.emptyCache(); // the coalesced small segment is whole again, so it is released
    assertEquals(1, raw.liveSegments());
  }

  @Test
  void snapshotShowsEachSegmentsBlocksInAddressOrder() {
    Block a = alloc.allocate(4000, S);
    Block b = alloc.allocate(4 * KiB, S);
    Block c = alloc.allocate(4 * KiB, S);
    Block large = alloc.allocate(12 * MiB, S);
    alloc.free(b);
    List<SegmentSnapshot> snap = alloc.snapshot();
    assertEquals(2, snap.size());
    SegmentSnapshot small = snap.get(0);
    assertEquals(new SegmentSnapshot(a.ptr(), 2 * MiB, S, true, List.of(
        new SegmentSnapshot.BlockInfo(a.ptr(), 4 * KiB, 4000, SegmentSnapshot.State.ACTIVE_ALLOCATED),
        new SegmentSnapshot.BlockInfo(b.ptr(), 4 * KiB, 0, SegmentSnapshot.State.INACTIVE),
        new SegmentSnapshot.BlockInfo(c.ptr(), 4 * KiB, 4 * KiB, SegmentSnapshot.State.ACTIVE_ALLOCATED),
        new SegmentSnapshot.BlockInfo(c.ptr() + 4 * KiB, 2 * MiB - 12 * KiB, 0, SegmentSnapshot.State.INACTIVE))),
        small);
    assertEquals(8 * KiB, small.allocatedBytes());
    assertEquals(new SegmentSnapshot(large.ptr(), 12 * MiB, S, false, List.of(
        new SegmentSnapshot.BlockInfo(large.ptr(), 12 * MiB, 12 * MiB, SegmentSnapshot.State.ACTIVE_ALLOCATED))),
        snap.get(1));
    alloc.free(a); // the segment's head merges with b: the snapshot starts at the merged piece
    assertEquals(new SegmentSnapshot.BlockInfo(a.ptr(), 8 * KiB, 0, SegmentSnapshot.State.INACTIVE),
        alloc.snapshot().get(0).blocks().get(0));
    alloc.checkInvariants();
  }

  @Test
  void invariantCheckCatchesACorruptedPiece() {
    Block a = alloc.allocate(4 * KiB, S);
    alloc.allocate(4 * KiB, S);
    alloc.checkInvariants();
    a.chunk.size += 512; // what a bookkeeping bug in a split would do
    IllegalStateException e = assertThrows(IllegalStateException.class, alloc::checkInvariants);
    assertTrue(e.getMessage().startsWith("CachingAllocator: segment at 0x"), e.getMessage());
    assertTrue(e.getMessage().contains("does not start where the previous one ends"), e.getMessage());
  }

  @Test
  void bestFitTakesTheSmallestFreeBlockThatFits() {
    Block big = alloc.allocate(8 * KiB, S);
    Block guard1 = alloc.allocate(512, S);
    Block snug = alloc.allocate(2 * KiB, S);
    Block guard2 = alloc.allocate(512, S);
    alloc.free(big);
    alloc.free(snug);
    Block b = alloc.allocate(2 * KiB, S);
    assertEquals(snug.ptr(), b.ptr(), "2 KiB goes to the 2 KiB hole, not the 8 KiB one before it");
    Block c = alloc.allocate(3 * KiB, S);
    assertEquals(big.ptr(), c.ptr(), "3 KiB goes to the 8 KiB hole, not the large rest of the segment");
    Block d = alloc.allocate(5 * KiB, S);
    assertEquals(big.ptr() + 3 * KiB, d.ptr(), "the 8 KiB hole was split: its 5 KiB rest fits exactly");
    assertEquals(1, raw.mallocCalls);
    assertNotEquals(guard1.ptr(), guard2.ptr());
  }

  @Test
  void poolsDoNotShareSegments() {
    Block large = alloc.allocate(2 * MiB, S);
    alloc.free(large);
    alloc.allocate(4 * KiB, S); // the free 20 MiB large segment does not serve the small pool
    assertEquals(2, raw.mallocCalls);
  }

  @Test
  void emptyCacheReleasesOnlySegmentsWithNoLiveBlock() {
    Block a = alloc.allocate(4 * KiB, S);
    Block b = alloc.allocate(4 * KiB, S);
    Block large = alloc.allocate(5 * MiB, S);
    alloc.free(a);
    alloc.free(large);
    alloc.emptyCache();
    assertEquals(1, raw.freeCalls, "the large segment goes back; the small one still holds b");
    assertEquals(2 * MiB, raw.usedBytes());
    assertEquals(2 * MiB, alloc.stats().reservedBytes().current());
    alloc.free(b);
    alloc.emptyCache();
    assertEquals(0, raw.liveSegments());
    MemoryStats stats = alloc.stats();
    assertEquals(0, stats.reservedBytes().current());
    assertEquals(0, stats.segment().current());
    assertEquals(2, stats.numDeviceFree());
    Block again = alloc.allocate(4 * KiB, S);
    assertEquals(3, raw.mallocCalls, "after emptyCache a request needs a new segment");
    alloc.free(again);
  }

  @Test
  void zeroBytesGiveTheSharedEmptyBlockWithoutADeviceCall() {
    Block z = alloc.allocate(0, S);
    assertSame(Block.EMPTY, z);
    assertEquals(0, z.size());
    assertEquals(0, z.ptr());
    assertEquals(0, raw.mallocCalls);
    alloc.free(z);
    alloc.free(z);
    alloc.recordStream(z, S + 1);
    assertEquals(0, alloc.stats().allocation().current());
  }

  @Test
  void doubleFreeNamesThePointer() {
    Block a = alloc.allocate(4 * KiB, S);
    alloc.free(a);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> alloc.free(a));
    assertEquals(String.format("CachingAllocator.free: double free of block at 0x%x (4096 bytes, stream 0x5000)",
        a.ptr()), e.getMessage());
    // A stale handle stays dead even when its memory was handed out again.
    Block b = alloc.allocate(4 * KiB, S);
    assertEquals(a.ptr(), b.ptr());
    assertThrows(IllegalStateException.class, () -> alloc.free(a));
    alloc.free(b);
  }

  @Test
  void blocksOfAnotherAllocatorAreRefused() {
    CachingAllocator other = new CachingAllocator(1, new FakeRawMemory(1L << 30), events);
    Block foreign = other.allocate(4 * KiB, S);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> alloc.free(foreign));
    assertTrue(e.getMessage().startsWith(String.format(
        "CachingAllocator.free: block at 0x%x (4096 bytes) belongs to another allocator (device 1)", foreign.ptr())),
        e.getMessage());
  }

  @Test
  void negativeSizesAreRefused() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> alloc.allocate(-1, S));
    assertTrue(e.getMessage().startsWith("CachingAllocator.allocate: size must be in [0, "), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> alloc.allocate(Long.MAX_VALUE, S));
  }

  @Test
  void allocatedBytesCountsTheBlocksHeldForTensorsNotTheCache() {
    CachingAllocator a = new CachingAllocator(0, new FakeRawMemory(1L << 30), events);
    Block b1 = a.allocate(1000, 0);
    Block b2 = a.allocate(3 << 20, 0);
    assertEquals(CachingAllocator.roundSize(1000) + (3 << 20), a.allocatedBytes());
    a.free(b1);
    a.free(b2);
    assertEquals(0, a.allocatedBytes(), "cached blocks are not held for tensors");
  }
}
