package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import java.util.Arrays;

/**
 * Decays the learning rate by {@code gamma} at each milestone, as
 * {@code torch.optim.lr_scheduler.MultiStepLR}: {@code lr = base * gamma^(number of milestones <= t)}
 * (a repeated milestone counts twice, as in PyTorch).
 */
public final class MultiStepLR extends LRScheduler {
  private final int[] milestones;
  private final double gamma;

  /** @param milestones steps at which to decay; @param gamma factor (0.1 in PyTorch) */
  public MultiStepLR(Optimizer optimizer, int[] milestones, double gamma) {
    super(optimizer);
    this.milestones = milestones.clone();
    Arrays.sort(this.milestones);
    this.gamma = gamma;
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    int passed = 0;
    for (int m : milestones) if (m <= t) passed++;
    return base * Math.pow(gamma, passed);
  }
}
