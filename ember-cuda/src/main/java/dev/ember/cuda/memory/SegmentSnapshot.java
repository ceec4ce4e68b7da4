package dev.ember.cuda.memory;

import java.util.ArrayList;
import java.util.List;

/**
 * One segment of a {@link CachingAllocator} and its blocks in address order, as {@code torch.cuda.memory_snapshot()}
 * describes them: what to read when reserved memory far exceeds allocated memory (fragmentation).
 *
 * @param address the device address of the segment's first byte
 * @param size the segment's bytes
 * @param stream the stream its blocks are cached for
 * @param smallPool whether it serves the small pool (blocks up to 1 MiB)
 * @param blocks its blocks, which cover it without gaps
 */
public record SegmentSnapshot(long address, long size, long stream, boolean smallPool, List<BlockInfo> blocks) {
  /** What a block is doing. */
  public enum State {
    /** Handed out and not freed. */
    ACTIVE_ALLOCATED,
    /** Freed, waiting for the events of the other streams that used it. */
    ACTIVE_PENDING_FREE,
    /** Free in the cache. */
    INACTIVE
  }

  /**
   * One block of a segment.
   *
   * @param address its first byte
   * @param size its bytes
   * @param requestedSize the bytes its caller asked for while allocated, else 0
   * @param state what it is doing
   */
  public record BlockInfo(long address, long size, long requestedSize, State state) {}

  public SegmentSnapshot {
    blocks = List.copyOf(blocks);
  }

  /** The snapshot of {@code segment}, taken with its allocator's lock held. */
  static SegmentSnapshot of(Segment segment) {
    List<BlockInfo> blocks = new ArrayList<>();
    for (Chunk c = segment.head; c != null; c = c.next) {
      State state = c.allocated ? State.ACTIVE_ALLOCATED : c.eventCount > 0 ? State.ACTIVE_PENDING_FREE : State.INACTIVE;
      blocks.add(new BlockInfo(c.ptr, c.size, c.allocated ? c.requested : 0, state));
    }
    return new SegmentSnapshot(segment.base, segment.size, segment.stream, segment.small, blocks);
  }

  /** Bytes in blocks handed out and not freed. */
  public long allocatedBytes() {
    return blocks.stream().filter(b -> b.state() == State.ACTIVE_ALLOCATED).mapToLong(BlockInfo::size).sum();
  }
}
