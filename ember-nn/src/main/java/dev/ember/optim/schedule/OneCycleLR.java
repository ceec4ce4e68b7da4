package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import dev.ember.optim.ParamGroup;

/**
 * The 1cycle policy (Smith and Topin, https://arxiv.org/abs/1708.07120), as {@code OneCycleLR}:
 * the learning rate rises from {@code maxLr / divFactor} to {@code maxLr} over the first
 * {@code pctStart} of {@code totalSteps}, then anneals to {@code maxLr / divFactor / finalDivFactor}
 * (three-phase: back to the initial rate first, then down). Annealing is cosine or linear. With
 * {@code cycleMomentum} the momentum (or beta1) moves inversely between {@code maxMomentum} and
 * {@code baseMomentum}. The optimizer's own learning rate is ignored. Stepping past
 * {@code totalSteps} is an error.
 */
public final class OneCycleLR extends LRScheduler {
  private final double maxLr;
  private final long totalSteps;
  private final boolean cosine;
  private final boolean cycleMomentum;
  private final double baseMomentum;
  private final double maxMomentum;
  private final double initialLr;
  private final double minLr;
  private final double[] ends;     // end step of each phase
  private final double[][] lrs;    // [phase] {start, end}
  private final double[][] moms;   // [phase] {start, end}

  /** PyTorch's defaults: pct_start 0.3, cosine annealing, momentum 0.85-0.95, div 25, final div 1e4. */
  public OneCycleLR(Optimizer optimizer, double maxLr, long totalSteps) {
    this(optimizer, maxLr, totalSteps, 0.3, "cos", true, 0.85, 0.95, 25.0, 1e4, false);
  }

  /**
   * @param annealStrategy "cos" or "linear"
   * @param threePhase use the three-phase schedule of the fast.ai variant
   */
  public OneCycleLR(Optimizer optimizer, double maxLr, long totalSteps, double pctStart, String annealStrategy,
      boolean cycleMomentum, double baseMomentum, double maxMomentum, double divFactor, double finalDivFactor,
      boolean threePhase) {
    super(optimizer, fill(optimizer, maxLr / divFactor));
    require(totalSteps > 0, "OneCycleLR: Expected positive integer total_steps, but got " + totalSteps);
    require(pctStart >= 0 && pctStart <= 1, "OneCycleLR: Expected float between 0 and 1 pct_start, but got " + pctStart);
    require(annealStrategy.equals("cos") || annealStrategy.equals("linear"),
        "OneCycleLR: anneal_strategy must by one of 'cos' or 'linear', instead got " + annealStrategy);
    if (cycleMomentum) requireMomentum("OneCycleLR", optimizer);
    this.maxLr = maxLr;
    this.totalSteps = totalSteps;
    this.cosine = annealStrategy.equals("cos");
    this.cycleMomentum = cycleMomentum;
    this.baseMomentum = baseMomentum;
    this.maxMomentum = maxMomentum;
    this.initialLr = maxLr / divFactor;
    this.minLr = initialLr / finalDivFactor;
    if (threePhase) {
      ends = new double[] {pctStart * totalSteps - 1, 2 * pctStart * totalSteps - 2, totalSteps - 1};
      lrs = new double[][] {{initialLr, maxLr}, {maxLr, initialLr}, {initialLr, minLr}};
      moms = new double[][] {{maxMomentum, baseMomentum}, {baseMomentum, maxMomentum}, {maxMomentum, maxMomentum}};
    } else {
      ends = new double[] {pctStart * totalSteps - 1, totalSteps - 1};
      lrs = new double[][] {{initialLr, maxLr}, {maxLr, minLr}};
      moms = new double[][] {{maxMomentum, baseMomentum}, {baseMomentum, maxMomentum}};
    }
    start();
  }

  private static double[] fill(Optimizer opt, double v) {
    double[] a = new double[opt.paramGroups().size()];
    java.util.Arrays.fill(a, v);
    return a;
  }

  private double anneal(double start, double end, double pct) {
    return cosine ? end + (start - end) / 2.0 * (Math.cos(Math.PI * pct) + 1) : (end - start) * pct + start;
  }

  /** {lr, momentum} at step t, walking the phases as PyTorch does. */
  private double[] at(long t) {
    if (t > totalSteps) {
      throw new IllegalStateException("OneCycleLR: Tried to step " + t + " times. The specified number of total steps is "
          + totalSteps);
    }
    double startStep = 0;
    for (int i = 0; i < ends.length; i++) {
      if (t <= ends[i] || i == ends.length - 1) {
        double pct = (t - startStep) / (ends[i] - startStep);
        // step totalSteps (allowed, after a loop's last batch) is past the last phase's end: PyTorch's linear anneal
        // extrapolates below zero there, which no learning rate may be (ParamGroup refuses it); the anneal stops at its
        // end instead. The cosine one stays positive and keeps PyTorch's value.
        if (!cosine) pct = Math.min(pct, 1);
        return new double[] {anneal(lrs[i][0], lrs[i][1], pct), anneal(moms[i][0], moms[i][1], pct)};
      }
      startStep = ends[i];
    }
    throw new AssertionError("unreachable: the last phase always matches");
  }

  @Override
  protected double lr(double base, int group, long t) {
    return at(t)[0];
  }

  @Override
  protected void afterApply(long step) {
    if (!cycleMomentum) return;
    double m = at(step)[1];
    for (ParamGroup g : optimizer.paramGroups()) setMomentum(g, m);
  }

  /** The peak learning rate. */
  public double maxLr() {
    return maxLr;
  }
}
