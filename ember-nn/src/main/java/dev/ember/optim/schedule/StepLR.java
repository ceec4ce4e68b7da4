package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;

/**
 * Decays the learning rate by {@code gamma} every {@code stepSize} steps, as
 * {@code torch.optim.lr_scheduler.StepLR}: {@code lr = base * gamma^floor(t / stepSize)}.
 */
public final class StepLR extends LRScheduler {
  private final int stepSize;
  private final double gamma;

  /** @param stepSize period of the decay (> 0); @param gamma factor (0.1 in PyTorch) */
  public StepLR(Optimizer optimizer, int stepSize, double gamma) {
    super(optimizer);
    require(stepSize > 0, "StepLR: step_size must be > 0, got " + stepSize);
    this.stepSize = stepSize;
    this.gamma = gamma;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * Math.pow(gamma, Math.floorDiv(t, stepSize));
  }
}
