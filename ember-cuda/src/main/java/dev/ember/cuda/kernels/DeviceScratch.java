package dev.ember.cuda.kernels;

import dev.ember.cuda.runtime.CudaContext;

/**
 * A device buffer a kernel family reuses for its temporaries (reduction partials, a flag, a contiguous copy),
 * grown on demand and never shrunk. Callers hold their family's lock while the buffer's contents matter; the
 * work is ordered on the context's stream, so a later launch reuses it only after the earlier ones read it.
 */
final class DeviceScratch {
  private final CudaContext ctx;
  private long ptr;
  private long bytes;

  DeviceScratch(CudaContext ctx) {
    this.ctx = ctx;
  }

  /** A device address of at least {@code need} bytes (256-byte aligned, as cuMemAlloc returns). */
  long get(long need) {
    if (need <= bytes) return ptr;
    ctx.makeCurrent();
    if (ptr != 0) {
      ctx.synchronize(); // queued kernels may still read the old buffer
      ctx.driver().memFree(ptr);
      ptr = 0;
      bytes = 0;
    }
    long size = Math.max(need, 4096);
    ptr = ctx.driver().memAlloc(size);
    bytes = size;
    return ptr;
  }
}
