package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Scales the learning rate linearly from {@code startFactor} to {@code endFactor} over
 * {@code totalIters} steps, then holds it, as {@code LinearLR}:
 * {@code lr = base * (start + (end - start) * min(t, totalIters) / totalIters)}.
 */
public final class LinearLR extends LRScheduler {
  private final double startFactor;
  private final double endFactor;
  private final int totalIters;

  /** PyTorch's defaults are startFactor 1/3, endFactor 1.0, totalIters 5. */
  public LinearLR(Optimizer optimizer, double startFactor, double endFactor, int totalIters) {
    super(optimizer);
    require(startFactor > 0 && startFactor <= 1,
        "LinearLR: start_factor must be in (0, 1], got " + startFactor);
    require(endFactor >= 0 && endFactor <= 1, "LinearLR: end_factor must be in [0, 1], got " + endFactor);
    require(totalIters > 0, "LinearLR: total_iters must be > 0, got " + totalIters);
    this.startFactor = startFactor;
    this.endFactor = endFactor;
    this.totalIters = totalIters;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * (startFactor + (endFactor - startFactor) * Math.min(t, totalIters) / totalIters);
  }
}
