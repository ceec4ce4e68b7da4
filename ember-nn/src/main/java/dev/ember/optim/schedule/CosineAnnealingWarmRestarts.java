package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Cosine annealing with warm restarts (SGDR), as {@code CosineAnnealingWarmRestarts}: the first
 * cycle lasts {@code t0} steps, each next one {@code tMult} times longer; within a cycle of length
 * {@code T_i} at position {@code T_cur}, {@code lr = etaMin + (base - etaMin) * (1 + cos(pi * T_cur / T_i)) / 2}.
 */
public final class CosineAnnealingWarmRestarts extends LRScheduler {
  private final int t0;
  private final int tMult;
  private final double etaMin;

  /** @param t0 first cycle length (> 0); @param tMult cycle growth (>= 1); @param etaMin minimum lr */
  public CosineAnnealingWarmRestarts(Optimizer optimizer, int t0, int tMult, double etaMin) {
    super(optimizer);
    require(t0 > 0, "CosineAnnealingWarmRestarts: T_0 must be a positive integer, got " + t0);
    require(tMult >= 1, "CosineAnnealingWarmRestarts: T_mult must be an integer >= 1, got " + tMult);
    this.t0 = t0;
    this.tMult = tMult;
    this.etaMin = etaMin;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    long ti = t0, cur = t;
    if (tMult == 1) {
      cur = t % t0;
    } else {
      while (cur >= ti) {
        cur -= ti;
        ti *= tMult;
      }
    }
    return etaMin + (base - etaMin) * (1 + Math.cos(Math.PI * cur / ti)) / 2;
  }
}
