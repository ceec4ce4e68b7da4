package dev.ember.tensor;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Bytes of the host buffers that {@link MemoryScope}s hand out, live and at their most: the counter
 * behind Ember's memory profile ({@code peak live bytes in one training step}). A buffer counts from
 * the moment a scope's pool hands out its array (an op's output, a saved activation, a gradient, a
 * temporary) until the array goes back to a pool (the scope closes, backward releases a consumed
 * gradient, {@code zeroGrad} recycles a parameter's gradient). Escaped buffers that are later recycled
 * (parameter gradients, optimizer state made in a step) count as long as they are held.
 *
 * <p>Not counted: buffers allocated outside any scope (parameters, data loaded before a step, anything
 * created while no scope is open), which the garbage collector manages, and device memory (see
 * {@link Device#memoryStats()}). A pooled buffer that leaves every scope for good ({@link MemoryScope#keep}
 * at the outermost scope, an {@link MemoryScope#escape escaped} buffer never recycled) stays counted.
 *
 * <pre>{@code
 * ScopeMemory.resetPeak();
 * try (MemoryScope step = MemoryScope.open()) { ... }
 * long peak = ScopeMemory.peak();      // the most bytes live at once since resetPeak
 * }</pre>
 *
 * <p>Thread-safe: one count for the whole process (every thread's pool), updated with one atomic add per
 * buffer and a compare-and-set only when the peak grows.
 */
public final class ScopeMemory {
  private static final AtomicLong LIVE = new AtomicLong();
  private static final AtomicLong PEAK = new AtomicLong();

  private ScopeMemory() {}

  /** Bytes of pooled buffers now handed out. */
  public static long live() {
    return LIVE.get();
  }

  /** The most bytes handed out at once since the last {@link #resetPeak()} (or the start). */
  public static long peak() {
    return PEAK.get();
  }

  /** Starts a new peak from the bytes live now, and returns that number. */
  public static long resetPeak() {
    long now = LIVE.get();
    PEAK.set(now);
    return now;
  }

  static void taken(long bytes) {
    long now = LIVE.addAndGet(bytes);
    long p = PEAK.get();
    while (now > p && !PEAK.compareAndSet(p, now)) p = PEAK.get();
  }

  static void given(long bytes) {
    LIVE.addAndGet(-bytes);
  }
}
