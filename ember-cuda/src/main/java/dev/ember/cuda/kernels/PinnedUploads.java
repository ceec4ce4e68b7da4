package dev.ember.cuda.kernels;

import dev.ember.cuda.runtime.CudaContext;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Small host arrays (a normalization's statistics, weights and biases, an embedding's rows) copied to the device
 * without stopping the host: each is written into a pinned ring and copied from there with an asynchronous copy on
 * the compute stream, so it is ordered after the kernels queued before it (which may still read the device buffer it
 * overwrites) and before those queued after, and the call returns at once. A synchronous copy from a Java array
 * instead waits for every queued kernel first: one pipeline drain per call, several per normalization layer and
 * step.
 *
 * <p>The ring has two halves. Copies fill one; when it is full the next half is taken, after waiting for the event
 * recorded when that half was last left (the copies out of it have run by then), and an event is recorded for the
 * half being left. Halves are {@link #HALF} bytes, so a wait comes once per thousands of small copies; an array
 * larger than a half is copied synchronously.
 */
final class PinnedUploads {
  /** The driver calls the ring makes, on one stream (an interface so that a test can run it without a GPU). */
  interface Device {
    MemorySegment hostAlloc(long bytes);

    void copyAsync(long dst, MemorySegment src, long bytes);

    void copySync(long dst, MemorySegment src, long bytes);

    long eventCreate();

    void eventRecord(long event);

    void eventSynchronize(long event);
  }

  /** Bytes per half of the ring. */
  static final long HALF = 1L << 20;

  private final Device device;
  private MemorySegment ring;
  private final long[] events = new long[2];
  private final boolean[] recorded = new boolean[2];
  private int half;
  private long used;

  PinnedUploads(Device device) {
    this.device = device;
  }

  /** The ring of {@code ctx}'s device, copying on its stream. */
  static PinnedUploads of(CudaContext ctx) {
    return new PinnedUploads(new Device() {
      @Override
      public MemorySegment hostAlloc(long bytes) {
        ctx.makeCurrent();
        return ctx.driver().hostAlloc(bytes);
      }

      @Override
      public void copyAsync(long dst, MemorySegment src, long bytes) {
        ctx.driver().memcpyHtoD(dst, src, bytes, ctx.stream());
      }

      @Override
      public void copySync(long dst, MemorySegment src, long bytes) {
        ctx.driver().memcpyHtoDSync(dst, src, bytes);
      }

      @Override
      public long eventCreate() {
        return ctx.driver().eventCreate(false);
      }

      @Override
      public void eventRecord(long event) {
        ctx.driver().eventRecord(event, ctx.stream());
      }

      @Override
      public void eventSynchronize(long event) {
        ctx.driver().eventSynchronize(event);
      }
    });
  }

  /** Copies {@code a} to device address {@code dst}, ordered on the stream; returns without waiting for it. */
  synchronized void put(long dst, double[] a) {
    copy(dst, MemorySegment.ofArray(a));
  }

  /** Copies {@code a} to device address {@code dst}, ordered on the stream; returns without waiting for it. */
  synchronized void put(long dst, long[] a) {
    copy(dst, MemorySegment.ofArray(a));
  }

  /** Copies {@code a} to device address {@code dst}, ordered on the stream; returns without waiting for it. */
  synchronized void put(long dst, int[] a) {
    copy(dst, MemorySegment.ofArray(a));
  }

  private void copy(long dst, MemorySegment from) {
    long bytes = from.byteSize();
    if (bytes == 0) return;
    if (bytes > HALF) {
      device.copySync(dst, from, bytes);
      return;
    }
    if (ring == null) {
      ring = device.hostAlloc(2 * HALF);
      events[0] = device.eventCreate();
      events[1] = device.eventCreate();
    }
    if (used + bytes > HALF) { // leave this half: its copies finish by this event; take the other once its have
      device.eventRecord(events[half]);
      recorded[half] = true;
      half ^= 1;
      used = 0;
      if (recorded[half]) device.eventSynchronize(events[half]);
    }
    MemorySegment slot = ring.asSlice(half * HALF + used, bytes);
    MemorySegment.copy(from, ValueLayout.JAVA_BYTE, 0, slot, ValueLayout.JAVA_BYTE, 0, bytes);
    device.copyAsync(dst, slot, bytes);
    used += (bytes + 15) & ~15L;
  }
}
