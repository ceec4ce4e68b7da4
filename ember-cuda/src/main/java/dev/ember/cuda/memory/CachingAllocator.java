package dev.ember.cuda.memory;

import dev.ember.cuda.memory.StatCounters.Metric;
import java.util.List;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A caching allocator for one device with the semantics of PyTorch's {@code CUDACachingAllocator}: device memory is
 * obtained in segments, carved into blocks, and cached after a free so that later allocations reuse it without a
 * device call (which synchronizes the device and costs far more than a lookup).
 *
 * <ul>
 *   <li>Requests are rounded up to a multiple of 512 bytes. Blocks up to 1 MiB come from the small pool, served by
 *       2 MiB segments; larger ones from the large pool, served by 20 MiB segments below 10 MiB and otherwise by a
 *       segment of the request rounded up to 2 MiB.
 *   <li>Each pool keeps its free blocks ordered by (stream, size); a request takes the smallest free block of its
 *       stream that fits (best fit), and splits it when the rest is worth keeping (at least 512 bytes in the small
 *       pool, more than 1 MiB in the large one). A freed block merges with free neighbours of its segment.
 *   <li>A block is cached for the stream it was allocated on: work queued later on that stream runs after the
 *       frees' users, so reuse needs no synchronization. A block also used on another stream must say so with
 *       {@link #recordStream}; its free then records an event on each such stream, and the block is reused only
 *       once they complete (checked without blocking at the start of each allocation).
 *   <li>When the device is full, the allocator releases every cached segment nobody uses ({@link #emptyCache}) and
 *       retries once before throwing {@link CudaOutOfMemoryError}.
 *   <li>Optionally, blocks of a split limit or more are never split (PyTorch's {@code max_split_size_mb}; see
 *       {@link #CachingAllocator(int, RawMemory, StreamEvents, long)}).
 * </ul>
 *
 * <p>{@link #stats}, {@link #memorySummary} and {@link #snapshot} report what it holds, as
 * {@code torch.cuda.memory_stats}, {@code memory_summary} and {@code memory_snapshot} do.
 *
 * <p>Thread-safe: one lock guards all state, and the {@link RawMemory} and {@link StreamEvents} calls are made with
 * it held. Block handles may be freed from any thread (a {@link java.lang.ref.Cleaner}'s, say).
 *
 * <pre>{@code
 * CachingAllocator alloc = new CachingAllocator(0, rawMemory, streamEvents);
 * Block b = alloc.allocate(4 << 20, stream);    // large pool: a 20 MiB segment, split
 * alloc.free(b);                                // cached (merged back into the whole segment), not given back
 * Block c = alloc.allocate(3 << 20, stream);    // served from that segment: no device call
 * }</pre>
 */
public final class CachingAllocator {
  /** Every block size is a multiple of this (PyTorch's kMinBlockSize). */
  public static final long MIN_BLOCK_SIZE = 512;
  /** Requests up to this many bytes come from the small pool (kSmallSize). */
  public static final long SMALL_SIZE = 1L << 20;
  /** The segment size of the small pool (kSmallBuffer). */
  public static final long SMALL_BUFFER = 2L << 20;
  /** The segment size of the large pool for requests below {@link #MIN_LARGE_ALLOC} (kLargeBuffer). */
  public static final long LARGE_BUFFER = 20L << 20;
  /** Requests of at least this many bytes get a segment of their own size (kMinLargeAlloc). */
  public static final long MIN_LARGE_ALLOC = 10L << 20;
  /** Segments for large requests are rounded up to a multiple of this (kRoundLarge). */
  public static final long ROUND_LARGE = 2L << 20;
  /** The default {@code maxSplitSize}: no limit, every block may be split (PyTorch's default). */
  public static final long NO_SPLIT_LIMIT = Long.MAX_VALUE;
  /** The largest request accepted: larger ones would overflow the rounding. */
  static final long MAX_REQUEST = Long.MAX_VALUE - (ROUND_LARGE << 1);

  private final int device;
  private final RawMemory raw;
  private final long maxSplitSize;
  private final ReentrantLock lock = new ReentrantLock();
  private final TreeSet<Chunk> smallFree = new TreeSet<>(Chunk.BY_STREAM_SIZE_ADDRESS);
  private final TreeSet<Chunk> largeFree = new TreeSet<>(Chunk.BY_STREAM_SIZE_ADDRESS);
  /** Freed blocks waiting for other streams' events. */
  private final PendingFrees pending;
  private final StatCounters stats = new StatCounters();
  /** Every segment held, by address. */
  private final TreeMap<Long, Segment> segments = new TreeMap<>();
  /** The most that may be reserved ({@link #setMemoryFraction}), or -1 without a limit. */
  private long allowedBytes = -1;
  private double memoryFraction = 1;

  /**
   * An allocator for device {@code device} (the ordinal its messages name), over {@code raw} for segments and
   * {@code events} for cross-stream reuse.
   */
  public CachingAllocator(int device, RawMemory raw, StreamEvents events) {
    this(device, raw, events, NO_SPLIT_LIMIT);
  }

  /**
   * An allocator whose blocks of {@code maxSplitSize} bytes or more are never split (PyTorch's
   * {@code max_split_size_mb}): such "oversize" blocks serve only requests of at least that size that waste under
   * 20 MiB of them, and smaller requests never take them, which bounds fragmentation by large blocks. When the
   * device is full, cached oversize blocks are released first, before the whole cache.
   *
   * @param maxSplitSize over 20 MiB, or {@link #NO_SPLIT_LIMIT}
   */
  public CachingAllocator(int device, RawMemory raw, StreamEvents events, long maxSplitSize) {
    if (device < 0) {
      throw new IllegalArgumentException("CachingAllocator: device ordinal must be >= 0, got " + device);
    }
    if (maxSplitSize <= LARGE_BUFFER) {
      throw new IllegalArgumentException("CachingAllocator: maxSplitSize must be over 20 MiB (" + LARGE_BUFFER
          + " bytes), got " + maxSplitSize);
    }
    this.device = device;
    this.raw = Objects.requireNonNull(raw, "raw");
    this.pending = new PendingFrees(Objects.requireNonNull(events, "events"));
    this.maxSplitSize = maxSplitSize;
  }

  /** The device ordinal this allocator serves. */
  public int device() {
    return device;
  }

  /** {@code bytes} rounded up to a multiple of {@link #MIN_BLOCK_SIZE} (at least one). */
  public static long roundSize(long bytes) {
    if (bytes < MIN_BLOCK_SIZE) {
      return MIN_BLOCK_SIZE;
    }
    return ceilTo(bytes, MIN_BLOCK_SIZE);
  }

  /** The size of the segment obtained from the device when no cached block fits a request of {@code size} bytes. */
  public static long segmentSize(long size) {
    if (size <= SMALL_SIZE) {
      return SMALL_BUFFER;
    } else if (size < MIN_LARGE_ALLOC) {
      return LARGE_BUFFER;
    }
    return ceilTo(size, ROUND_LARGE);
  }

  private static long ceilTo(long bytes, long unit) {
    return (bytes + unit - 1) / unit * unit;
  }

  /**
   * Allocates {@code bytes} bytes for use on {@code stream}: a cached block when one of that stream fits, else a
   * new segment from the device. Zero bytes gives {@link Block#EMPTY} without touching the device.
   *
   * @throws IllegalArgumentException when {@code bytes} is negative or too large to round
   * @throws CudaOutOfMemoryError when the device has no room even after the cache is released
   */
  public Block allocate(long bytes, long stream) {
    if (bytes < 0 || bytes > MAX_REQUEST) {
      throw new IllegalArgumentException(
          "CachingAllocator.allocate: size must be in [0, " + MAX_REQUEST + "] bytes, got " + bytes);
    }
    if (bytes == 0) {
      return Block.EMPTY;
    }
    lock.lock();
    try {
      pending.poll(this::freeChunk);
      long size = roundSize(bytes);
      boolean small = size <= SMALL_SIZE;
      TreeSet<Chunk> pool = small ? smallFree : largeFree;
      Chunk chunk = takeBestFit(pool, stream, size);
      if (chunk == null) {
        chunk = newSegment(pool, size, stream, small);
      }
      return place(chunk, pool, size, bytes);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The smallest free block of {@code stream} in {@code pool} with at least {@code size} bytes, taken out of it;
   * null when there is none, or when it is an oversize block that the request may not take.
   */
  private Chunk takeBestFit(TreeSet<Chunk> pool, long stream, long size) {
    Chunk found = pool.ceiling(Chunk.searchKey(stream, size));
    if (found == null || found.stream != stream) {
      return null;
    }
    if (size < maxSplitSize ? found.size >= maxSplitSize : found.size >= size + LARGE_BUFFER) {
      return null;
    }
    pool.remove(found);
    return found;
  }

  /**
   * A new segment for a request of {@code size} bytes; when the device is full, releases cached oversize blocks
   * enough for it and retries, then releases the whole cache and retries once more, then throws.
   */
  private Chunk newSegment(TreeSet<Chunk> pool, long size, long stream, boolean small) {
    long segmentSize = segmentSize(size);
    long ptr = tryMalloc(segmentSize);
    if (ptr == 0 && releaseAvailableCachedBlocks(pool, stream, size)) {
      ptr = tryMalloc(segmentSize);
    }
    if (ptr == 0) {
      releaseCachedBlocks();
      stats.numAllocRetries++;
      ptr = tryMalloc(segmentSize);
    }
    if (ptr == 0) {
      stats.numOoms++;
      long[] info = {-1, -1};
      RuntimeException infoFailure = null;
      try {
        info = raw.memInfo();
      } catch (RuntimeException e) {
        infoFailure = e; // the out-of-memory error is the news; the failed query rides along with it
      }
      CudaOutOfMemoryError oom = new CudaOutOfMemoryError(device, segmentSize, info[0], info[1],
          stats.current(Metric.ALLOCATED_BYTES), stats.current(Metric.RESERVED_BYTES), allowedBytes, memoryFraction);
      if (infoFailure != null) {
        oom.addSuppressed(infoFailure);
      }
      throw oom;
    }
    stats.increase(Metric.SEGMENT, small, 1);
    if (segmentSize >= maxSplitSize) {
      stats.increase(Metric.OVERSIZE_SEGMENT, small, 1);
    }
    stats.increase(Metric.RESERVED_BYTES, small, segmentSize);
    stats.numDeviceAlloc++;
    Segment segment = new Segment(ptr, segmentSize, stream, small);
    segment.head = new Chunk(segment, ptr, segmentSize);
    segments.put(ptr, segment);
    return segment.head;
  }

  private long tryMalloc(long bytes) {
    if (allowedBytes >= 0 && stats.current(Metric.RESERVED_BYTES) + bytes > allowedBytes) {
      return 0; // over the memory fraction: answered as a full device, without asking it
    }
    try {
      return raw.malloc(bytes);
    } catch (OutOfDeviceMemory full) {
      return 0;
    }
  }

  /** Hands out the front {@code size} bytes of {@code chunk} (out of any pool), splitting off a worthwhile rest. */
  private Block place(Chunk chunk, TreeSet<Chunk> pool, long size, long requested) {
    boolean small = chunk.small;
    boolean alreadySplit = chunk.isSplit();
    Chunk block = chunk;
    if (shouldSplit(chunk, size)) {
      // The rest keeps the old node (as in PyTorch) and goes back to the pool at its new address.
      Chunk rest = chunk;
      block = new Chunk(rest.segment, rest.ptr, size);
      block.prev = rest.prev;
      if (block.prev != null) {
        block.prev.next = block;
      } else {
        block.segment.head = block;
      }
      block.next = rest;
      rest.prev = block;
      rest.ptr += size;
      rest.size -= size;
      pool.add(rest);
      if (alreadySplit) {
        // An inactive split piece shrinks by the bytes handed out.
        stats.decrease(Metric.INACTIVE_SPLIT_BYTES, small, size);
      } else {
        // A whole segment becomes split: its rest is a new inactive split piece.
        stats.increase(Metric.INACTIVE_SPLIT_BYTES, small, rest.size);
        stats.increase(Metric.INACTIVE_SPLIT, small, 1);
      }
    } else if (alreadySplit) {
      stats.decrease(Metric.INACTIVE_SPLIT_BYTES, small, chunk.size);
      stats.decrease(Metric.INACTIVE_SPLIT, small, 1);
    }
    block.allocated = true;
    block.requested = requested;
    stats.increase(Metric.ALLOCATION, small, 1);
    stats.increase(Metric.ALLOCATED_BYTES, small, block.size);
    stats.increase(Metric.ACTIVE, small, 1);
    stats.increase(Metric.ACTIVE_BYTES, small, block.size);
    stats.increase(Metric.REQUESTED_BYTES, small, requested);
    if (block.size >= maxSplitSize) {
      stats.increase(Metric.OVERSIZE_ALLOCATION, small, 1);
    }
    return new Block(this, block, block.ptr, block.size, requested, block.stream);
  }

  private boolean shouldSplit(Chunk chunk, long size) {
    long remaining = chunk.size - size;
    return chunk.small ? remaining >= MIN_BLOCK_SIZE : size < maxSplitSize && remaining > SMALL_SIZE;
  }

  /**
   * Gives {@code block} back. It is cached for its stream at once, or, when {@link #recordStream} named other
   * streams, once the events recorded on them now complete. {@link Block#EMPTY} is accepted and ignored.
   *
   * @throws IllegalStateException when the block was freed already
   * @throws IllegalArgumentException when the block came from another allocator
   */
  public void free(Block block) {
    Objects.requireNonNull(block, "block");
    if (block == Block.EMPTY) {
      return;
    }
    checkOwner("free", block);
    lock.lock();
    try {
      Chunk chunk = block.chunk;
      if (chunk == null) {
        throw new IllegalStateException(String.format(
            "CachingAllocator.free: double free of block at 0x%x (%d bytes, stream 0x%x)", block.ptr(),
            block.size(), block.stream()));
      }
      boolean usedElsewhere = chunk.streamUses != null && !chunk.streamUses.isEmpty();
      if (usedElsewhere) {
        pending.hold(chunk); // first: when recording an event fails, the block stays allocated
      }
      block.chunk = null;
      chunk.allocated = false;
      stats.decrease(Metric.ALLOCATION, chunk.small, 1);
      stats.decrease(Metric.ALLOCATED_BYTES, chunk.small, chunk.size);
      stats.decrease(Metric.REQUESTED_BYTES, chunk.small, chunk.requested);
      if (chunk.size >= maxSplitSize) {
        stats.decrease(Metric.OVERSIZE_ALLOCATION, chunk.small, 1);
      }
      if (!usedElsewhere) {
        freeChunk(chunk);
      }
    } finally {
      lock.unlock();
    }
  }

  /**
   * Marks {@code block} as used by work on {@code stream} too, so that its free waits for that work before the
   * block is reused ({@code Tensor.record_stream}). Use on the block's own stream needs no mark and is ignored, as
   * is {@link Block#EMPTY}.
   *
   * @throws IllegalStateException when the block was freed already
   */
  public void recordStream(Block block, long stream) {
    Objects.requireNonNull(block, "block");
    if (block == Block.EMPTY) {
      return;
    }
    checkOwner("recordStream", block);
    lock.lock();
    try {
      Chunk chunk = block.chunk;
      if (chunk == null) {
        throw new IllegalStateException(String.format(
            "CachingAllocator.recordStream: block at 0x%x (%d bytes) was already freed", block.ptr(), block.size()));
      }
      if (stream != chunk.stream) {
        chunk.addStreamUse(stream);
      }
    } finally {
      lock.unlock();
    }
  }

  private void checkOwner(String op, Block block) {
    if (block.owner != this) {
      throw new IllegalArgumentException(String.format(
          "CachingAllocator.%s: block at 0x%x (%d bytes) belongs to another allocator (device %s), not this one"
              + " (device %d)", op, block.ptr(), block.size(),
          block.owner == null ? "none" : Integer.toString(block.owner.device), device));
    }
  }

  /** Returns an idle chunk to its pool, merged with idle neighbours of its segment. */
  private void freeChunk(Chunk chunk) {
    TreeSet<Chunk> pool = chunk.small ? smallFree : largeFree;
    long originalSize = chunk.size;
    long splitBlocksChange = 0;
    long splitBytesChange = 0;
    for (Chunk neighbour : new Chunk[] {chunk.prev, chunk.next}) {
      long subsumed = tryMerge(chunk, neighbour, pool);
      if (subsumed > 0) {
        splitBlocksChange--;
        splitBytesChange -= subsumed;
      }
    }
    pool.add(chunk);
    if (chunk.isSplit()) {
      splitBlocksChange++;
      splitBytesChange += chunk.size;
    }
    stats.increase(Metric.INACTIVE_SPLIT, chunk.small, splitBlocksChange);
    stats.increase(Metric.INACTIVE_SPLIT_BYTES, chunk.small, splitBytesChange);
    stats.decrease(Metric.ACTIVE, chunk.small, 1);
    stats.decrease(Metric.ACTIVE_BYTES, chunk.small, originalSize);
  }

  /** Merges idle {@code src} (a neighbour, possibly null) into {@code dst}; returns the bytes gained. */
  private static long tryMerge(Chunk dst, Chunk src, TreeSet<Chunk> pool) {
    if (src == null || !src.isIdle()) {
      return 0;
    }
    pool.remove(src);
    if (dst.prev == src) {
      dst.ptr = src.ptr;
      dst.prev = src.prev;
      if (dst.prev != null) {
        dst.prev.next = dst;
      } else {
        dst.segment.head = dst;
      }
    } else {
      dst.next = src.next;
      if (dst.next != null) {
        dst.next.prev = dst;
      }
    }
    dst.size += src.size;
    return src.size;
  }

  /**
   * Limits this allocator to {@code fraction} of the device's capacity
   * ({@code torch.cuda.set_per_process_memory_fraction}): a segment that would take the reserved bytes over it is
   * refused as if the device were full (the cache is released and the request retried, then
   * {@link CudaOutOfMemoryError}). Segments already held stay; 1 lifts the limit to the whole device.
   *
   * @throws IllegalArgumentException when {@code fraction} is not in (0, 1]
   */
  public void setMemoryFraction(double fraction) {
    if (!(fraction > 0 && fraction <= 1)) {
      throw new IllegalArgumentException("CachingAllocator.setMemoryFraction: fraction must be in (0, 1], got "
          + fraction);
    }
    lock.lock();
    try {
      allowedBytes = (long) (fraction * raw.memInfo()[1]);
      memoryFraction = fraction;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Gives every cached segment that holds no live block back to the device ({@code torch.cuda.empty_cache}),
   * after waiting for the events of blocks freed while in use on other streams. Segments split between live and
   * free blocks stay.
   */
  public void emptyCache() {
    lock.lock();
    try {
      releaseCachedBlocks();
    } finally {
      lock.unlock();
    }
  }

  private void releaseCachedBlocks() {
    pending.drain(this::freeChunk);
    releaseWholeSegments(largeFree);
    releaseWholeSegments(smallFree);
  }

  private void releaseWholeSegments(TreeSet<Chunk> pool) {
    for (Chunk chunk : pool.stream().filter(c -> !c.isSplit()).toList()) {
      releaseSegment(pool, chunk);
    }
  }

  /**
   * With a split limit, releases cached oversize segments of {@code stream} for a request of {@code size} bytes:
   * the smallest one at least as large as the request (and the limit), else the largest ones until they add up to
   * it. Returns whether that much was released (PyTorch's release_available_cached_blocks).
   */
  private boolean releaseAvailableCachedBlocks(TreeSet<Chunk> pool, long stream, long size) {
    if (maxSplitSize == NO_SPLIT_LIMIT) {
      return false;
    }
    Chunk key = Chunk.searchKey(stream, Math.max(size, maxSplitSize));
    Chunk fit = pool.ceiling(key);
    if (fit != null && fit.stream == stream && !fit.isSplit()) {
      releaseSegment(pool, fit);
      return true;
    }
    // No single block is large enough: release oversize blocks of this stream, the largest first.
    long released = 0;
    Chunk c = pool.lower(key);
    while (released < key.size && c != null && c.stream == stream && c.size >= maxSplitSize) {
      Chunk smaller = pool.lower(c);
      if (!c.isSplit()) {
        releaseSegment(pool, c);
        released += c.size;
      }
      c = smaller;
    }
    return released >= key.size;
  }

  /** Gives a whole, idle segment back to the device. */
  private void releaseSegment(TreeSet<Chunk> pool, Chunk chunk) {
    assert !chunk.isSplit() && chunk.isIdle();
    raw.free(chunk.ptr);
    pool.remove(chunk);
    segments.remove(chunk.ptr);
    stats.decrease(Metric.SEGMENT, chunk.small, 1);
    stats.decrease(Metric.RESERVED_BYTES, chunk.small, chunk.size);
    if (chunk.size >= maxSplitSize) {
      stats.decrease(Metric.OVERSIZE_SEGMENT, chunk.small, 1);
    }
    stats.numDeviceFree++;
  }

  /** Bytes of the blocks handed out and not yet freed ({@code torch.cuda.memory_allocated}). */
  public long allocatedBytes() {
    lock.lock();
    try {
      return stats.current(StatCounters.Metric.ALLOCATED_BYTES);
    } finally {
      lock.unlock();
    }
  }

  /** A snapshot of the counters ({@code torch.cuda.memory_stats}). */
  public MemoryStats stats() {
    lock.lock();
    try {
      return stats.snapshot();
    } finally {
      lock.unlock();
    }
  }

  /** Sets every peak to its current value ({@code torch.cuda.reset_peak_memory_stats}). */
  public void resetPeakStats() {
    lock.lock();
    try {
      stats.resetPeaks();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Zeroes the accumulated totals (allocated, freed) and the retry, OOM and device call counts
   * ({@code torch.cuda.reset_accumulated_memory_stats}).
   */
  public void resetAccumulatedStats() {
    lock.lock();
    try {
      stats.resetAccumulated();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Every segment held and its blocks, in address order ({@code torch.cuda.memory_snapshot}): where the reserved
   * memory is and why it cannot be released.
   */
  public List<SegmentSnapshot> snapshot() {
    lock.lock();
    try {
      return segments.values().stream().map(SegmentSnapshot::of).toList();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Checks the allocator's structure against its counters (for tests): every segment's pieces cover it without
   * gaps, no two idle neighbours are left unmerged, exactly the idle pieces are in the free sets, and the current
   * counters match what the pieces add up to.
   *
   * @throws IllegalStateException naming the first inconsistency found
   */
  void checkInvariants() {
    lock.lock();
    try {
      new InvariantCheck(segments.values(), smallFree, largeFree, stats, maxSplitSize, pending.size()).run();
    } finally {
      lock.unlock();
    }
  }

  /** A readable table of the counters ({@code torch.cuda.memory_summary}). */
  public String memorySummary() {
    return MemorySummary.format(device, stats());
  }
}
