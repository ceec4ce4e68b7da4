package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import dev.ember.optim.ParamGroup;

/**
 * Cyclical learning rates (Smith, https://arxiv.org/abs/1506.01186), as {@code CyclicLR}: the rate
 * moves between {@code baseLr} and {@code maxLr} in cycles of {@code stepSizeUp + stepSizeDown}
 * steps, the amplitude scaled per mode: {@code triangular} (constant), {@code triangular2} (halved
 * each cycle), {@code exp_range} ({@code gamma^t}). With {@code cycleMomentum} the momentum (or
 * beta1) moves inversely between {@code maxMomentum} and {@code baseMomentum}.
 */
public final class CyclicLR extends LRScheduler {
  private final double maxLr;
  private final double totalSize;
  private final double stepRatio;
  private final String mode;
  private final double gamma;
  private final boolean cycleMomentum;
  private final double baseMomentum;
  private final double maxMomentum;

  /** Triangular cycles with momentum cycling between 0.8 and 0.9 (PyTorch's defaults). */
  public CyclicLR(Optimizer optimizer, double baseLr, double maxLr, int stepSizeUp) {
    this(optimizer, baseLr, maxLr, stepSizeUp, stepSizeUp, "triangular", 1.0, true, 0.8, 0.9);
  }

  /** @param mode "triangular", "triangular2" or "exp_range" */
  public CyclicLR(Optimizer optimizer, double baseLr, double maxLr, int stepSizeUp, int stepSizeDown, String mode,
      double gamma, boolean cycleMomentum, double baseMomentum, double maxMomentum) {
    super(optimizer, fill(optimizer, baseLr));
    require(stepSizeUp > 0 && stepSizeDown > 0,
        "CyclicLR: step_size_up and step_size_down must be > 0, got " + stepSizeUp + " and " + stepSizeDown);
    require(mode.equals("triangular") || mode.equals("triangular2") || mode.equals("exp_range"),
        "CyclicLR: mode must be one of triangular, triangular2, exp_range, got " + mode);
    if (cycleMomentum) requireMomentum("CyclicLR", optimizer);
    this.maxLr = maxLr;
    this.totalSize = (double) stepSizeUp + stepSizeDown;
    this.stepRatio = stepSizeUp / totalSize;
    this.mode = mode;
    this.gamma = gamma;
    this.cycleMomentum = cycleMomentum;
    this.baseMomentum = baseMomentum;
    this.maxMomentum = maxMomentum;
    start();
  }

  private static double[] fill(Optimizer opt, double v) {
    double[] a = new double[opt.paramGroups().size()];
    java.util.Arrays.fill(a, v);
    return a;
  }

  /** {scale factor, amplitude multiplier} at step t. */
  private double[] shape(long t) {
    double cycle = Math.floor(1 + t / totalSize);
    double x = 1.0 + t / totalSize - cycle;
    double factor = x <= stepRatio ? x / stepRatio : (x - 1) / (stepRatio - 1);
    double amp = switch (mode) {
      case "triangular" -> 1.0;
      case "triangular2" -> 1 / Math.pow(2.0, cycle - 1);
      default -> Math.pow(gamma, t);
    };
    return new double[] {factor, amp};
  }

  @Override
  protected double lr(double base, int group, long t) {
    double[] s = shape(t);
    return base + (maxLr - base) * s[0] * s[1];
  }

  @Override
  protected void afterApply(long step) {
    if (!cycleMomentum) return;
    double[] s = shape(step);
    double m = maxMomentum - (maxMomentum - baseMomentum) * s[0] * s[1];
    for (ParamGroup g : optimizer.paramGroups()) setMomentum(g, m);
  }
}
