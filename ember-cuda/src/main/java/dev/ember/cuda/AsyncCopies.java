package dev.ember.cuda;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.memory.CudaPinnedHostMemory;
import dev.ember.cuda.memory.CudaStreamEvents;
import dev.ember.cuda.memory.PinnedStagingPool;
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
 */
public final class AsyncCopies {
  private final CudaContext ctx;
  private final CudaDriver driver;
  private final CudaStreamEvents events;
  private final PinnedStagingPool pool;
  private volatile long copyStream;

  /** The copies into {@code ctx}'s device, staged through a pool of {@code ctx}'s pinned memory. */
  public AsyncCopies(CudaContext ctx) {
    this.ctx = ctx;
    this.driver = ctx.driver();
    this.events = new CudaStreamEvents(ctx);
    this.pool = new PinnedStagingPool(new CudaPinnedHostMemory(ctx), events);
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
          ctx.makeCurrent();
          s = driver.streamCreate(true);
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
    ctx.makeCurrent();
    long bytes = from.byteSize();
    long stream = copyStream();
    long compute = ctx.stream();
    PinnedStagingPool.Staging staging = pool.acquire(bytes);
    boolean queued = false;
    boolean handedBack = false;
    try {
      MemorySegment.copy(from, 0, staging.segment(), 0, bytes);
      long before = events.record(compute);
      try {
        driver.streamWaitEvent(stream, before); // the wait takes the event's state now: it may be re-recorded after
      } finally {
        events.destroy(before);
      }
      driver.memcpyHtoD(dst, staging.segment(), bytes, stream);
      queued = true;
      long done = events.record(stream);
      try {
        driver.streamWaitEvent(compute, done);
      } catch (RuntimeException e) {
        events.synchronize(done); // the copy has ended: the compute stream needs no wait
        events.destroy(done);
        throw e;
      }
      pool.release(staging, done);
      handedBack = true;
    } finally {
      if (!handedBack) {
        if (queued) driver.streamSynchronize(stream); // no event to wait on: the buffer is free once the stream is
        pool.releaseUnused(staging);
      }
    }
  }
}
