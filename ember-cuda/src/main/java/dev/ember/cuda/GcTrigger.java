package dev.ember.cuda;

import java.util.concurrent.atomic.AtomicLong;

/**
 * When a device backend should ask the JVM for a garbage collection: after the bytes the caching allocator holds
 * for live tensors have grown by {@code threshold} since the lowest point seen after the last request. Device
 * tensors that die outside a {@link dev.ember.tensor.MemoryScope} give their blocks back only when the collector
 * finds them, and the collector watches the Java heap, not the GPU, so a loop outside a scope grows the allocated
 * bytes until a collection runs; a loop inside scopes (the Trainer's, the benchmarks') gives its blocks back every
 * step and never triggers one, however many bytes it allocates. (Counting every allocation instead made a 95M-
 * parameter MLP collect every few dozen steps on a 140 GB GPU, tens of milliseconds each.)
 */
final class GcTrigger {
  private final long threshold;
  private final AtomicLong base = new AtomicLong();

  GcTrigger(long threshold) {
    if (threshold <= 0) throw new IllegalArgumentException("GcTrigger: threshold must be positive, got " + threshold);
    this.threshold = threshold;
  }

  /**
   * Whether a collection should be requested now that the allocator holds {@code allocated} bytes: true once per
   * {@code threshold} of growth (for one caller when several race), false while the holdings stay level or fall.
   */
  boolean shouldCollect(long allocated) {
    long b = base.get();
    if (allocated < b) {
      base.compareAndSet(b, allocated); // blocks came back: growth counts from the new low
      return false;
    }
    return allocated - b > threshold && base.compareAndSet(b, allocated);
  }

  /** Counts growth from {@code allocated} on, as after a collection that an out-of-memory retry forced. */
  void reset(long allocated) {
    base.set(allocated);
  }
}
