package dev.ember.train;

/**
 * Times the {@link Phase}s of one training step as laps: each {@link #lap} charges the time since
 * the previous mark to a phase, {@link #mark} starts the next lap without charging what came
 * before to any phase. {@link #publishWork()} and {@link #publishCallbacks()} copy the step's
 * times into {@link TrainContext#stepNanos(Phase)}; the first does so before validation and
 * {@code onBatchEnd}, so that those see the current step's work, and their callback time is only
 * complete after {@code onBatchEnd}.
 */
final class PhaseClock {
  private final long[] published;
  /** Run before each lap is read: waits for a GPU's queued work, so a phase is charged its kernels' time. */
  private final Runnable sync;
  private final long[] nanos = new long[Phase.values().length];
  private long start;
  private long last;

  /** A clock publishing into {@code published}, indexed by {@link Phase#ordinal()}. */
  PhaseClock(long[] published) {
    this(published, null);
  }

  /**
   * A clock that calls {@code sync} (or nothing, when null) before charging each lap: on a device that runs work
   * after the calls that queue it (a GPU), a phase's time is then the time its kernels took, not the time it took to
   * queue them.
   */
  PhaseClock(long[] published, Runnable sync) {
    this.published = published;
    this.sync = sync;
  }

  /** A step begins now: every phase back at zero. */
  void startStep() {
    java.util.Arrays.fill(nanos, 0);
    start = System.nanoTime();
    last = start;
  }

  /** Charges the time since the last mark to {@code phase}, and marks now. */
  void lap(Phase phase) {
    if (sync != null) sync.run();
    long now = System.nanoTime();
    nanos[phase.ordinal()] += now - last;
    last = now;
  }

  /** Marks now, charging the time since the last mark to no phase. */
  void mark() {
    last = System.nanoTime();
  }

  /** Publishes the step's times of every phase but {@link Phase#CALLBACKS}. */
  void publishWork() {
    int callbacks = Phase.CALLBACKS.ordinal();
    for (int i = 0; i < nanos.length; i++) if (i != callbacks) published[i] = nanos[i];
  }

  /** Publishes the step's callback time and returns the time since {@link #startStep()} to the last mark. */
  long publishCallbacks() {
    published[Phase.CALLBACKS.ordinal()] = nanos[Phase.CALLBACKS.ordinal()];
    return last - start;
  }
}
