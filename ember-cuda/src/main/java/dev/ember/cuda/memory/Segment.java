package dev.ember.cuda.memory;

/**
 * One device allocation of a {@link CachingAllocator}: a range obtained by one {@link RawMemory#malloc} and given
 * back whole. Its pieces ({@link Chunk}s) form a list from {@link #head} in address order; guarded by the
 * allocator's lock.
 */
final class Segment {
  final long base;
  final long size;
  final long stream;
  final boolean small;
  /** The piece at {@link #base}; it changes as the front piece splits and merges. */
  Chunk head;

  Segment(long base, long size, long stream, boolean small) {
    this.base = base;
    this.size = size;
    this.stream = stream;
    this.small = small;
  }
}
