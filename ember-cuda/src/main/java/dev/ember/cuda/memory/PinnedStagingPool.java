package dev.ember.cuda.memory;

import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Pinned (page-locked) host buffers that asynchronous host-to-device copies read from, cached by size class as
 * PyTorch's {@code CachingHostAllocator} caches them: a request gets a buffer of its bin (the next power of two, at
 * least {@link #MIN_SIZE}), reused once the copy that last read it has completed.
 *
 * <p>The caller fills the buffer from {@link #acquire}, queues its copy, records an event after it
 * ({@link StreamEvents#record}) and hands buffer and event back with {@link #release}: the pool owns the event from
 * then on, queries it before handing the buffer out again and destroys it then. When every buffer of a bin is still
 * being copied a new one is allocated, unless that would take the pool past its soft limit: it then waits for the
 * oldest of the bin's copies instead. {@link #emptyCache} waits for the pending copies and frees every idle buffer.
 * Thread-safe.
 */
public final class PinnedStagingPool implements AutoCloseable {
  /** The smallest bin: 64 KiB. */
  public static final long MIN_SIZE = 64L << 10;
  /** The soft limit {@link #PinnedStagingPool(PinnedHostMemory, StreamEvents)} sets: 2 GiB of pinned memory. */
  public static final long DEFAULT_SOFT_LIMIT = 2L << 30;

  /** A buffer handed out by {@link #acquire}: {@link #segment()} holds the bytes asked for. */
  public static final class Staging {
    private final MemorySegment buffer;
    private final long bytes;
    private boolean released;

    private Staging(MemorySegment buffer, long bytes) {
      this.buffer = buffer;
      this.bytes = bytes;
    }

    /** The first {@code bytes} bytes of the buffer (as many as were asked for). */
    public MemorySegment segment() {
      return buffer.asSlice(0, bytes);
    }

    /** The bin size: the bytes the buffer really has. */
    public long capacity() {
      return buffer.byteSize();
    }

    @Override
    public String toString() {
      return "Staging[" + bytes + " of " + buffer.byteSize() + " bytes at 0x" + Long.toHexString(buffer.address())
          + (released ? ", released]" : "]");
    }
  }

  /** A cached buffer and the event of the copy that last read it (0: none). */
  private record Idle(MemorySegment buffer, long event) {}

  private final PinnedHostMemory host;
  private final StreamEvents events;
  private final long softLimit;
  private final TreeMap<Long, ArrayDeque<Idle>> bins = new TreeMap<>();
  private long reservedBytes;
  private int inUse;
  private long hostAllocations;
  private long reuses;
  private long waits;
  private boolean closed;

  /** A pool over {@code host} memory whose copies {@code events} track, with the {@link #DEFAULT_SOFT_LIMIT}. */
  public PinnedStagingPool(PinnedHostMemory host, StreamEvents events) {
    this(host, events, DEFAULT_SOFT_LIMIT);
  }

  /**
   * A pool that allocates past {@code softLimit} reserved bytes only when a bin has no buffer at all (a request
   * always gets a buffer).
   */
  public PinnedStagingPool(PinnedHostMemory host, StreamEvents events, long softLimit) {
    this.host = Objects.requireNonNull(host, "host");
    this.events = Objects.requireNonNull(events, "events");
    if (softLimit < 0) throw new IllegalArgumentException("PinnedStagingPool: softLimit must be >= 0, got " + softLimit);
    this.softLimit = softLimit;
  }

  /** The bin of a request of {@code bytes}: the next power of two, at least {@link #MIN_SIZE}. */
  public static long binSize(long bytes) {
    if (bytes < 0 || bytes > 1L << 62) {
      throw new IllegalArgumentException("PinnedStagingPool: a request must be 0.." + (1L << 62) + " bytes, got " + bytes);
    }
    return bytes <= MIN_SIZE ? MIN_SIZE : Long.highestOneBit(bytes - 1) << 1;
  }

  /**
   * A buffer of at least {@code bytes} bytes that no copy reads any more: a cached one of the bin whose event has
   * completed, else a new one, else (past the soft limit) the bin's oldest once its copy completes.
   *
   * @throws IllegalStateException after {@link #close}
   */
  public synchronized Staging acquire(long bytes) {
    if (closed) throw new IllegalStateException("PinnedStagingPool.acquire(" + bytes + " bytes): the pool is closed");
    long size = binSize(bytes);
    ArrayDeque<Idle> bin = bins.get(size);
    if (bin != null) {
      for (Iterator<Idle> it = bin.iterator(); it.hasNext(); ) {
        Idle idle = it.next();
        if (idle.event() == 0 || events.query(idle.event())) {
          it.remove();
          reuses++;
          return handOut(idle, bytes);
        }
      }
      if (!bin.isEmpty() && reservedBytes + size > softLimit) {
        Idle oldest = bin.peekFirst();
        events.synchronize(oldest.event());
        bin.pollFirst();
        waits++;
        reuses++;
        return handOut(oldest, bytes);
      }
    }
    MemorySegment buffer = host.allocate(size);
    reservedBytes += size;
    hostAllocations++;
    inUse++;
    return new Staging(buffer, bytes);
  }

  private Staging handOut(Idle idle, long bytes) {
    if (idle.event() != 0) events.destroy(idle.event());
    inUse++;
    return new Staging(idle.buffer(), bytes);
  }

  /**
   * Gives {@code staging} back; it may be handed out again once {@code event} (recorded after the copy that reads
   * it, by this pool's {@link StreamEvents}) has completed. The pool owns the event from now on.
   *
   * @throws IllegalStateException when {@code staging} was released already
   */
  public synchronized void release(Staging staging, long event) {
    if (event == 0) throw new IllegalArgumentException("PinnedStagingPool.release: event must not be 0 (use releaseUnused)");
    giveBack(staging, event);
  }

  /** Gives back a buffer that no copy read (a copy failed before it was queued): it may be handed out at once. */
  public synchronized void releaseUnused(Staging staging) {
    giveBack(staging, 0);
  }

  private void giveBack(Staging staging, long event) {
    Objects.requireNonNull(staging, "staging");
    if (staging.released) {
      throw new IllegalStateException("PinnedStagingPool.release: " + staging + " was given back already");
    }
    staging.released = true;
    inUse--;
    if (closed) { // nothing is cached after close: wait for the copy, then free
      if (event != 0) {
        events.synchronize(event);
        events.destroy(event);
      }
      host.free(staging.buffer);
      reservedBytes -= staging.buffer.byteSize();
      return;
    }
    bins.computeIfAbsent(staging.buffer.byteSize(), s -> new ArrayDeque<>()).addLast(new Idle(staging.buffer, event));
  }

  /** Waits for the copies that read cached buffers and frees them; buffers handed out stay with their holders. */
  public synchronized void emptyCache() {
    for (ArrayDeque<Idle> bin : bins.values()) {
      while (!bin.isEmpty()) {
        Idle idle = bin.pollFirst();
        if (idle.event() != 0) {
          events.synchronize(idle.event());
          events.destroy(idle.event());
        }
        host.free(idle.buffer());
        reservedBytes -= idle.buffer().byteSize();
      }
    }
    bins.clear();
  }

  /** {@link #emptyCache}, and from now on buffers given back are freed and {@link #acquire} fails. */
  @Override
  public synchronized void close() {
    closed = true;
    emptyCache();
  }

  /** Pinned bytes held: cached and handed out. */
  public synchronized long reservedBytes() {
    return reservedBytes;
  }

  /** Buffers cached (idle or still being copied from). */
  public synchronized int cachedBuffers() {
    return bins.values().stream().mapToInt(ArrayDeque::size).sum();
  }

  /** Buffers handed out and not given back. */
  public synchronized int inUse() {
    return inUse;
  }

  /** Calls to {@link PinnedHostMemory#allocate} so far. */
  public synchronized long hostAllocations() {
    return hostAllocations;
  }

  /** Requests served by a cached buffer. */
  public synchronized long reuses() {
    return reuses;
  }

  /** Requests that waited for a copy (the soft limit reached). */
  public synchronized long waits() {
    return waits;
  }

  @Override
  public synchronized String toString() {
    return "PinnedStagingPool[reserved=" + reservedBytes + " bytes, cached=" + cachedBuffers() + ", inUse=" + inUse
        + ", hostAllocations=" + hostAllocations + ", reuses=" + reuses + "]";
  }
}
