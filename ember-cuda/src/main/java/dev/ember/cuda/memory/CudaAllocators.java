package dev.ember.cuda.memory;

import dev.ember.cuda.runtime.CudaContext;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The process's {@link CachingAllocator} of each CUDA device, as PyTorch keeps one caching allocator per device:
 * every user of a device shares its cache, so memory one frees another reuses.
 *
 * <pre>{@code
 * CachingAllocator alloc = CudaAllocators.of(CudaContext.of(0));
 * Block b = alloc.allocate(bytes, ctx.stream());
 * }</pre>
 */
public final class CudaAllocators {
  private static final ConcurrentHashMap<Integer, CachingAllocator> ALLOCATORS = new ConcurrentHashMap<>();

  private CudaAllocators() {}

  /** The allocator of {@code ctx}'s device, made on first use over {@link CudaRawMemory} and {@link CudaStreamEvents}. */
  public static CachingAllocator of(CudaContext ctx) {
    return ALLOCATORS.computeIfAbsent(ctx.ordinal(),
        ordinal -> new CachingAllocator(ordinal, new CudaRawMemory(ctx), new CudaStreamEvents(ctx)));
  }
}
