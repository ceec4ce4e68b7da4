package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Multiplies the learning rate by {@code factor} for the first {@code totalIters} steps, as
 * {@code ConstantLR}: {@code lr = base * (t < totalIters ? factor : 1)}.
 */
public final class ConstantLR extends LRScheduler {
  private final double factor;
  private final int totalIters;

  /** PyTorch's defaults are factor 1/3, totalIters 5. */
  public ConstantLR(Optimizer optimizer, double factor, int totalIters) {
    super(optimizer);
    require(factor >= 0 && factor <= 1, "ConstantLR: factor must be in [0, 1], got " + factor);
    require(totalIters >= 0, "ConstantLR: total_iters must be >= 0, got " + totalIters);
    this.factor = factor;
    this.totalIters = totalIters;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * (t < totalIters ? factor : 1.0);
  }
}
