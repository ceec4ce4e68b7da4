package dev.ember.cuda.memory;

import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.Set;

/**
 * A contiguous piece of one segment: allocated, free in its pool, or waiting for stream events. The pieces of a
 * segment form a doubly linked list in address order; a segment nobody split is one piece with no neighbours.
 * Mutable and guarded by the allocator's lock; a piece in a pool's free set must not change size, address or stream
 * while there (the set is ordered by them).
 */
final class Chunk {
  /** Free sets order by stream, then size (best fit is the first at least as large), then address. */
  static final Comparator<Chunk> BY_STREAM_SIZE_ADDRESS = Comparator.<Chunk>comparingLong(c -> c.stream)
      .thenComparingLong(c -> c.size)
      .thenComparingLong(c -> c.ptr);

  final long stream;
  final boolean small;
  /** The segment this piece belongs to (null only for search keys). */
  final Segment segment;
  long ptr;
  long size;
  long requested;
  Chunk prev;
  Chunk next;
  boolean allocated;
  /** Events recorded when the block was freed that have not completed yet. */
  int eventCount;
  /** Streams other than {@link #stream} that used the block since it was allocated (null when none). */
  Set<Long> streamUses;

  /** A piece of {@code segment}. */
  Chunk(Segment segment, long ptr, long size) {
    this.segment = segment;
    this.ptr = ptr;
    this.size = size;
    this.stream = segment.stream;
    this.small = segment.small;
  }

  /** A search key: the first free piece of {@code stream} at least {@code size} large orders at or after it. */
  private Chunk(long stream, long size) {
    this.segment = null;
    this.ptr = Long.MIN_VALUE;
    this.size = size;
    this.stream = stream;
    this.small = false;
  }

  static Chunk searchKey(long stream, long size) {
    return new Chunk(stream, size);
  }

  /** Whether the piece shares its segment with others (so freeing it alone releases no device memory). */
  boolean isSplit() {
    return prev != null || next != null;
  }

  /** Whether the piece is free for reuse now (not allocated, no event pending). */
  boolean isIdle() {
    return !allocated && eventCount == 0;
  }

  void addStreamUse(long use) {
    if (streamUses == null) {
      streamUses = new LinkedHashSet<>();
    }
    streamUses.add(use);
  }
}
