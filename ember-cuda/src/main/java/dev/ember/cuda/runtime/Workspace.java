package dev.ember.cuda.runtime;

/**
 * A device buffer a kernel family reuses from call to call (column matrices, per-image partial products): it
 * grows to the largest size asked for and is never shrunk. Work is ordered on one stream, so a call may
 * overwrite what the previous call's kernels read: they have run by then.
 */
public final class Workspace {
  private final CudaContext ctx;
  private long address;
  private long bytes;

  public Workspace(CudaContext ctx) {
    this.ctx = ctx;
  }

  /** A device address with at least {@code need} bytes (0 when need is 0). */
  public synchronized long get(long need) {
    if (need <= bytes) return address;
    ctx.makeCurrent();
    if (address != 0) {
      ctx.synchronize();
      ctx.driver().memFree(address);
      address = 0;
      bytes = 0;
    }
    long size = Math.max(need, Math.min(2 * bytes, need + (256L << 20)));
    address = ctx.driver().memAlloc(size);
    bytes = size;
    return address;
  }

  /** The bytes held. */
  public synchronized long size() {
    return bytes;
  }
}
