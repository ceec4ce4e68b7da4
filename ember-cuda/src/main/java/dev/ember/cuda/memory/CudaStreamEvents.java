package dev.ember.cuda.memory;

import dev.ember.cuda.runtime.CudaContext;
import java.util.ArrayDeque;
import java.util.Objects;

/**
 * {@link StreamEvents} over the CUDA driver of one device. Events are created without timing (cheaper to record
 * and query) and kept in a pool after {@link #destroy}, as PyTorch's allocator does, so that a steady state of
 * cross-stream frees creates no events; {@link #close} destroys the pooled ones.
 */
public final class CudaStreamEvents implements StreamEvents, AutoCloseable {
  private final CudaContext ctx;
  private final ArrayDeque<Long> idle = new ArrayDeque<>();

  /** Events of {@code ctx}'s device. */
  public CudaStreamEvents(CudaContext ctx) {
    this.ctx = Objects.requireNonNull(ctx, "ctx");
  }

  @Override
  public synchronized long record(long stream) {
    ctx.makeCurrent();
    Long pooled = idle.pollFirst();
    long event = pooled != null ? pooled : ctx.driver().eventCreate(false);
    try {
      ctx.driver().eventRecord(event, stream);
    } catch (RuntimeException e) {
      idle.addFirst(event);
      throw e;
    }
    return event;
  }

  @Override
  public boolean query(long event) {
    ctx.makeCurrent();
    return ctx.driver().eventQuery(event);
  }

  @Override
  public void synchronize(long event) {
    ctx.makeCurrent();
    ctx.driver().eventSynchronize(event);
  }

  @Override
  public synchronized void destroy(long event) {
    idle.addLast(event);
  }

  /** Events created and not in use now (pooled for the next {@link #record}). */
  public synchronized int pooled() {
    return idle.size();
  }

  /** Destroys the pooled events; events still recorded stay the caller's. */
  @Override
  public synchronized void close() {
    ctx.makeCurrent();
    while (!idle.isEmpty()) {
      ctx.driver().eventDestroy(idle.pollFirst());
    }
  }
}
