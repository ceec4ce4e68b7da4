package dev.ember.cuda.memory;

/**
 * The CUDA events a {@link CachingAllocator} needs for blocks used on more than one stream
 * ({@link CachingAllocator#recordStream}): when such a block is freed, an event is recorded on each stream that
 * used it, and the block is reused only once all of them have completed. The CUDA backend passes one over
 * {@code cuEventCreate}/{@code cuEventRecord}/{@code cuEventQuery}/{@code cuEventSynchronize}/{@code cuEventDestroy};
 * tests pass a fake whose events complete when told.
 */
public interface StreamEvents {
  /** Records a new event on {@code stream} (after all work queued on it so far) and returns its handle. */
  long record(long stream);

  /** Whether the work before {@code event} has completed; never blocks. */
  boolean query(long event);

  /** Blocks until the work before {@code event} has completed ({@link CachingAllocator#emptyCache} waits so). */
  void synchronize(long event);

  /** Releases an event {@link #record} returned; it is not used afterwards. */
  void destroy(long event);
}
