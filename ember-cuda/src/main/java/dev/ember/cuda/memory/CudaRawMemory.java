package dev.ember.cuda.memory;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.lib.CudaException;
import dev.ember.cuda.runtime.CudaContext;
import java.util.Objects;

/**
 * {@link RawMemory} over the CUDA driver of one device: {@code cuMemAlloc}, {@code cuMemFree} and
 * {@code cuMemGetInfo} in the device's primary context, made current on the calling thread first (the allocator may
 * be called from any thread, a {@link java.lang.ref.Cleaner}'s included). A full device answers
 * {@link OutOfDeviceMemory}; every other driver failure stays a {@link CudaException}.
 */
public final class CudaRawMemory implements RawMemory {
  private final CudaContext ctx;

  /** Device memory of {@code ctx}'s device. */
  public CudaRawMemory(CudaContext ctx) {
    this.ctx = Objects.requireNonNull(ctx, "ctx");
  }

  @Override
  public long malloc(long bytes) {
    ctx.makeCurrent();
    try {
      return ctx.driver().memAlloc(bytes);
    } catch (CudaException e) {
      if (e.code() == CudaDriver.ERROR_OUT_OF_MEMORY) {
        throw new OutOfDeviceMemory(bytes, e.getMessage());
      }
      throw e;
    }
  }

  @Override
  public void free(long ptr) {
    ctx.makeCurrent();
    ctx.driver().memFree(ptr);
  }

  @Override
  public long[] memInfo() {
    ctx.makeCurrent();
    return ctx.driver().memInfo();
  }
}
