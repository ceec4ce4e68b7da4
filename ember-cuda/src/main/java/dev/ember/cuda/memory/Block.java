package dev.ember.cuda.memory;

/**
 * One allocation from a {@link CachingAllocator}: a range of device memory, handed back once with
 * {@link CachingAllocator#free}. The handle stays readable after the free, but its memory belongs to the allocator
 * again (a second free is an {@link IllegalStateException}).
 *
 * <p>A zero-byte request gets the shared {@link #EMPTY} block (address 0, no device memory), which every allocator
 * accepts back any number of times.
 */
public final class Block {
  /** The block zero-byte requests get: address 0, size 0, stream 0. */
  public static final Block EMPTY = new Block(null, null, 0, 0, 0, 0);

  private final long ptr;
  private final long size;
  private final long requestedSize;
  private final long stream;
  final CachingAllocator owner;
  /** The allocator's node for this block while it is live; null once freed (guarded by the owner's lock). */
  Chunk chunk;

  Block(CachingAllocator owner, Chunk chunk, long ptr, long size, long requestedSize, long stream) {
    this.owner = owner;
    this.chunk = chunk;
    this.ptr = ptr;
    this.size = size;
    this.requestedSize = requestedSize;
    this.stream = stream;
  }

  /** The device address of the first byte (0 for {@link #EMPTY}). */
  public long ptr() {
    return ptr;
  }

  /** The bytes reserved for this block: the request rounded up to 512 bytes, or more when a split was not worth it. */
  public long size() {
    return size;
  }

  /** The bytes the caller asked for. */
  public long requestedSize() {
    return requestedSize;
  }

  /** The stream the block was allocated on, whose later work may reuse it without waiting. */
  public long stream() {
    return stream;
  }

  @Override
  public String toString() {
    return String.format("Block[ptr=0x%x, size=%d, requested=%d, stream=0x%x]", ptr, size, requestedSize, stream);
  }
}
