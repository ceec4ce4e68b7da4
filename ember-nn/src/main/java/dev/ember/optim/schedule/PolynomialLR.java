package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Polynomial decay to zero over {@code totalIters} steps, as {@code PolynomialLR}:
 * {@code lr = base * (1 - min(t, totalIters) / totalIters)^power}.
 */
public final class PolynomialLR extends LRScheduler {
  private final int totalIters;
  private final double power;

  /** @param totalIters steps of decay (5 in PyTorch); @param power exponent (1.0 in PyTorch) */
  public PolynomialLR(Optimizer optimizer, int totalIters, double power) {
    super(optimizer);
    require(totalIters > 0, "PolynomialLR: total_iters must be > 0, got " + totalIters);
    this.totalIters = totalIters;
    this.power = power;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * Math.pow(1.0 - (double) Math.min(t, totalIters) / totalIters, power);
  }
}
