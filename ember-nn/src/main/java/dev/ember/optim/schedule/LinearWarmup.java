package dev.ember.optim.schedule;

/**
 * Linear warmup in front of another schedule: for the first {@code warmupSteps} steps the rate
 * rises linearly from {@code startFactor} times the inner schedule's first value to that value,
 * then the inner schedule runs from its own step 0:
 * {@code lr(t) = t < w ? inner(0) * (startFactor + (1 - startFactor) * t / w) : inner(t - w)}.
 * The same values as {@code SequentialLR([LinearLR(startFactor, 1, w), inner], [w])} in PyTorch.
 * <pre>{@code
 * var sched = new LinearWarmup(new CosineAnnealingLR(opt, 10_000, 1e-5), 500, 0.0);
 * }</pre>
 */
public final class LinearWarmup extends LRScheduler {
  private final LRScheduler inner;
  private final int warmupSteps;
  private final double startFactor;

  /** @param startFactor in [0, 1]: the fraction of the inner schedule's first rate at step 0 */
  public LinearWarmup(LRScheduler inner, int warmupSteps, double startFactor) {
    super(inner.optimizer());
    require(warmupSteps >= 0, "LinearWarmup: warmup_steps must be >= 0, got " + warmupSteps);
    require(startFactor >= 0 && startFactor <= 1, "LinearWarmup: start_factor must be in [0, 1], got " + startFactor);
    this.inner = inner;
    this.warmupSteps = warmupSteps;
    this.startFactor = startFactor;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    if (t >= warmupSteps) return inner.lrAt(group, t - warmupSteps);
    return inner.lrAt(group, 0) * (startFactor + (1 - startFactor) * t / warmupSteps);
  }
}
