package dev.ember.cuda.memory;

import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory for a {@link PinnedStagingPool}: {@code cuMemHostAlloc}/{@code cuMemFreeHost} on a GPU
 * ({@link CudaPinnedHostMemory}); tests pass ordinary native memory and count the calls.
 */
public interface PinnedHostMemory {
  /** {@code bytes} bytes of pinned host memory. */
  MemorySegment allocate(long bytes);

  /** Gives back a segment {@link #allocate} returned; it is not used afterwards. */
  void free(MemorySegment segment);
}
