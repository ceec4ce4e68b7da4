package dev.ember.cuda;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.memory.CudaPinnedHostMemory;
import dev.ember.cuda.memory.CudaStreamEvents;
import dev.ember.cuda.memory.PinnedStagingPool;
import dev.ember.cuda.memory.StreamEvents;
import dev.ember.cuda.runtime.CudaContext;
import java.lang.foreign.MemorySegment;

/**
 * The non-blocking host-to-device copies of one device ({@link CudaBackend#copyNonBlocking}): the host bytes go
 * into a pinned buffer of a {@link PinnedStagingPool} (a memcpy on the calling thread, after which the caller's array
 * is free), and {@code cuMemcpyHtoDAsync} copies that buffer on a dedicated stream created with
 * {@code CU_STREAM_NON_BLOCKING}. Two events order it against the compute stream (the legacy default stream the
 * kernels run on): the copy waits for the work queued there so far (which may still read the destination block's
 * previous contents: the caching allocator reuses a block for work queued after its free), and the compute stream
 * waits for the copy, so every kernel queued afterwards, on any thread, reads the copied values and a later free of
 * the destination cannot hand its block to work that would run before the copy ends. The second event is also the
 * one the pool queries before it hands the pinned buffer out again. The host never waits for the transfer.
 *
 * <p>A large copy is staged and queued in chunks of {@link #CHUNK} bytes, so that the transfer of one chunk
 * overlaps the memcpy of the next (the memcpy, ~15 GB/s on one core, is the slower of the two).
 */
public final class AsyncCopies {
  /** Bytes staged and queued at a time: a driver call per 8 MiB (~0.5 ms of memcpy) costs nothing. */
  static final long CHUNK = 8L << 20;

  /** The driver calls the copies make, on one device; tests pass a fake that runs the queued copies when told. */
  interface Streams {
    /** Makes the device's context current on the calling thread. */
    void makeCurrent();

    /** The stream the kernels run on. */
    long computeStream();

    /** A new stream that does not synchronise with the legacy default stream. */
    long createNonBlockingStream();

    /** Work queued on {@code stream} later waits for {@code event}. */
    void waitEvent(long stream, long event);

    /** Queues the copy of {@code bytes} bytes of pinned {@code src} to device address {@code dst} on {@code stream}. */
    void copyAsync(long dst, MemorySegment src, long bytes, long stream);

    /** Waits for the work queued on {@code stream}. */
    void synchronizeStream(long stream);
  }

  private final Streams streams;
  private final StreamEvents events;
  private final PinnedStagingPool pool;
  private volatile long copyStream;

  /** The copies into {@code ctx}'s device, staged through a pool of {@code ctx}'s pinned memory. */
  public AsyncCopies(CudaContext ctx) {
    this(driverStreams(ctx), new CudaStreamEvents(ctx), ctx);
  }

  private AsyncCopies(Streams streams, CudaStreamEvents events, CudaContext ctx) {
    this(streams, events, new PinnedStagingPool(new CudaPinnedHostMemory(ctx), events));
  }

  /** Copies through {@code streams}, tracked by {@code events} (the events {@code pool} queries too). */
  AsyncCopies(Streams streams, StreamEvents events, PinnedStagingPool pool) {
    this.streams = streams;
    this.events = events;
    this.pool = pool;
  }

  private static Streams driverStreams(CudaContext ctx) {
    CudaDriver driver = ctx.driver();
    return new Streams() {
      @Override
      public void makeCurrent() {
        ctx.makeCurrent();
      }

      @Override
      public long computeStream() {
        return ctx.stream();
      }

      @Override
      public long createNonBlockingStream() {
        return driver.streamCreate(true);
      }

      @Override
      public void waitEvent(long stream, long event) {
        driver.streamWaitEvent(stream, event);
      }

      @Override
      public void copyAsync(long dst, MemorySegment src, long bytes, long stream) {
        driver.memcpyHtoD(dst, src, bytes, stream);
      }

      @Override
      public void synchronizeStream(long stream) {
        driver.streamSynchronize(stream);
      }
    };
  }

  /** The pinned staging buffers. */
  public PinnedStagingPool pool() {
    return pool;
  }

  /** The stream the copies run on, created on first use (non-blocking: no implicit sync with stream 0). */
  public long copyStream() {
    long s = copyStream;
    if (s == 0) {
      synchronized (this) {
        s = copyStream;
        if (s == 0) {
          streams.makeCurrent();
          s = streams.createNonBlockingStream();
          copyStream = s;
        }
      }
    }
    return s;
  }

  /**
   * Copies the bytes of host segment {@code from} (a heap or native segment; read before this returns) to device
   * address {@code dst}, ordered after the compute stream's work so far and before any it queues later.
   */
  public void hostToDevice(MemorySegment from, long dst) {
    streams.makeCurrent();
    long bytes = from.byteSize();
    long stream = copyStream();
    long compute = streams.computeStream();
    PinnedStagingPool.Staging staging = pool.acquire(bytes);
    boolean queued = false;
    boolean handedBack = false;
    try {
      MemorySegment buffer = staging.segment();
      MemorySegment.copy(from, 0, buffer, 0, Math.min(bytes, CHUNK));
      long before = events.record(compute);
      try {
        streams.waitEvent(stream, before); // the wait takes the event's state now: it may be re-recorded after
      } finally {
        events.destroy(before);
      }
      for (long off = 0; off < bytes; off += CHUNK) {
        long n = Math.min(CHUNK, bytes - off);
        if (off > 0) MemorySegment.copy(from, off, buffer, off, n); // while the previous chunk is in flight
        streams.copyAsync(dst + off, buffer.asSlice(off, n), n, stream);
        queued = true;
      }
      long done = events.record(stream);
      try {
        streams.waitEvent(compute, done);
      } catch (RuntimeException e) {
        events.synchronize(done); // the copy has ended: the compute stream needs no wait
        events.destroy(done);
        throw e;
      }
      pool.release(staging, done);
      handedBack = true;
    } finally {
      if (!handedBack) {
        if (queued) streams.synchronizeStream(stream); // no event to wait on: the buffer is free once the stream is
        pool.releaseUnused(staging);
      }
    }
  }
}
