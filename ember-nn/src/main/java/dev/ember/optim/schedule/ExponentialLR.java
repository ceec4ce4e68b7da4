package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/** Decays the learning rate by {@code gamma} every step, as {@code ExponentialLR}: {@code lr = base * gamma^t}. */
public final class ExponentialLR extends LRScheduler {
  private final double gamma;

  public ExponentialLR(Optimizer optimizer, double gamma) {
    super(optimizer);
    this.gamma = gamma;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * Math.pow(gamma, t);
  }
}
