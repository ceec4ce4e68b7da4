package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Cosine annealing (Loshchilov and Hutter, SGDR), as {@code CosineAnnealingLR}:
 * {@code lr = etaMin + (base - etaMin) * (1 + cos(pi * t / tMax)) / 2}; past {@code tMax} the
 * cosine continues (rising again), as PyTorch's values do.
 */
public final class CosineAnnealingLR extends LRScheduler {
  private final int tMax;
  private final double etaMin;

  /** @param tMax half period in steps (> 0); @param etaMin the minimum learning rate (0 in PyTorch) */
  public CosineAnnealingLR(Optimizer optimizer, int tMax, double etaMin) {
    super(optimizer);
    require(tMax > 0, "CosineAnnealingLR: T_max must be > 0, got " + tMax);
    this.tMax = tMax;
    this.etaMin = etaMin;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return etaMin + (base - etaMin) * (1 + Math.cos(Math.PI * t / tMax)) / 2;
  }
}
