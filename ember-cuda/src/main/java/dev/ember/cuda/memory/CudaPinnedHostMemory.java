package dev.ember.cuda.memory;

import dev.ember.cuda.runtime.CudaContext;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** {@link PinnedHostMemory} from the CUDA driver ({@code cuMemHostAlloc}, {@code cuMemFreeHost}) in one context. */
public final class CudaPinnedHostMemory implements PinnedHostMemory {
  private final CudaContext ctx;

  /** Pinned memory registered with {@code ctx}'s context. */
  public CudaPinnedHostMemory(CudaContext ctx) {
    this.ctx = Objects.requireNonNull(ctx, "ctx");
  }

  @Override
  public MemorySegment allocate(long bytes) {
    ctx.makeCurrent();
    return ctx.driver().hostAlloc(bytes);
  }

  @Override
  public void free(MemorySegment segment) {
    ctx.makeCurrent();
    ctx.driver().hostFree(segment);
  }
}
