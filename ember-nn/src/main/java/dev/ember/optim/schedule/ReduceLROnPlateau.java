package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import dev.ember.optim.ParamGroup;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Cuts the learning rate when a metric stops improving, as {@code ReduceLROnPlateau}. Each
 * {@link #step(double)} takes the metric: a value better than the best by more than the threshold
 * ({@code rel}: relative, {@code abs}: absolute) resets the count of bad epochs; after more than
 * {@code patience} bad epochs every group's lr becomes {@code max(lr * factor, minLr)} (changes
 * smaller than {@code eps} are skipped) and {@code cooldown} epochs pass before counting resumes.
 */
public final class ReduceLROnPlateau {
  private final Optimizer optimizer;
  private final boolean maximize;
  private final double factor;
  private final int patience;
  private final boolean relative;
  private final double threshold;
  private final int cooldown;
  private final double[] minLrs;
  private final double eps;
  private double best;
  private int numBadEpochs;
  private int cooldownCounter;
  private long lastEpoch;

  /** PyTorch's defaults: mode min, factor 0.1, patience 10, threshold 1e-4 rel, cooldown 0, min_lr 0, eps 1e-8. */
  public ReduceLROnPlateau(Optimizer optimizer) {
    this(optimizer, "min", 0.1, 10, 1e-4, "rel", 0, 0.0, 1e-8);
  }

  /**
   * @param mode "min" (lower is better) or "max"
   * @param thresholdMode "rel" or "abs"
   * @param minLr lower bound of every group's lr
   */
  public ReduceLROnPlateau(Optimizer optimizer, String mode, double factor, int patience, double threshold,
      String thresholdMode, int cooldown, double minLr, double eps) {
    this(optimizer, mode, factor, patience, threshold, thresholdMode, cooldown, fill(optimizer, minLr), eps);
  }

  /** As above with one minimum lr per group. */
  public ReduceLROnPlateau(Optimizer optimizer, String mode, double factor, int patience, double threshold,
      String thresholdMode, int cooldown, double[] minLrs, double eps) {
    LRScheduler.require(factor < 1.0, "ReduceLROnPlateau: Factor should be < 1.0, got " + factor);
    LRScheduler.require(mode.equals("min") || mode.equals("max"), "ReduceLROnPlateau: mode " + mode + " is unknown!");
    LRScheduler.require(thresholdMode.equals("rel") || thresholdMode.equals("abs"),
        "ReduceLROnPlateau: threshold mode " + thresholdMode + " is unknown!");
    LRScheduler.require(minLrs.length == optimizer.paramGroups().size(),
        "ReduceLROnPlateau: expected " + optimizer.paramGroups().size() + " min_lrs, got " + minLrs.length);
    LRScheduler.require(patience >= 0 && cooldown >= 0,
        "ReduceLROnPlateau: patience and cooldown must be >= 0, got " + patience + " and " + cooldown);
    this.optimizer = optimizer;
    this.maximize = mode.equals("max");
    this.factor = factor;
    this.patience = patience;
    this.relative = thresholdMode.equals("rel");
    this.threshold = threshold;
    this.cooldown = cooldown;
    this.minLrs = minLrs.clone();
    this.eps = eps;
    this.best = maximize ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
  }

  private static double[] fill(Optimizer opt, double v) {
    double[] a = new double[opt.paramGroups().size()];
    java.util.Arrays.fill(a, v);
    return a;
  }

  private boolean isBetter(double a) {
    if (!maximize) return relative ? a < best * (1 - threshold) : a < best - threshold;
    return relative ? a > best * (threshold + 1) : a > best + threshold;
  }

  /** Records one epoch's metric and reduces the learning rates when the plateau is long enough. */
  public void step(double metric) {
    lastEpoch++;
    if (isBetter(metric)) {
      best = metric;
      numBadEpochs = 0;
    } else {
      numBadEpochs++;
    }
    if (cooldownCounter > 0) {
      cooldownCounter--;
      numBadEpochs = 0;
    }
    if (numBadEpochs > patience) {
      List<ParamGroup> groups = optimizer.paramGroups();
      for (int i = 0; i < groups.size(); i++) {
        double old = groups.get(i).lr();
        double next = Math.max(old * factor, minLrs[i]);
        if (old - next > eps) groups.get(i).setLr(next);
      }
      cooldownCounter = cooldown;
      numBadEpochs = 0;
    }
  }

  /** The best metric so far. */
  public double best() {
    return best;
  }

  /** The groups' current learning rates. */
  public double[] lastLr() {
    return optimizer.paramGroups().stream().mapToDouble(ParamGroup::lr).toArray();
  }

  /** The counters: {@code best}, {@code num_bad_epochs}, {@code cooldown_counter}, {@code last_epoch}. */
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("best", best);
    s.put("num_bad_epochs", numBadEpochs);
    s.put("cooldown_counter", cooldownCounter);
    s.put("last_epoch", lastEpoch);
    return s;
  }

  /** Restores {@link #stateDict()}. */
  public void loadStateDict(Map<String, Object> state) {
    for (String k : List.of("best", "num_bad_epochs", "cooldown_counter", "last_epoch")) {
      LRScheduler.require(state.get(k) instanceof Number, "ReduceLROnPlateau: state lacks a number for '" + k + "'");
    }
    best = ((Number) state.get("best")).doubleValue();
    numBadEpochs = ((Number) state.get("num_bad_epochs")).intValue();
    cooldownCounter = ((Number) state.get("cooldown_counter")).intValue();
    lastEpoch = ((Number) state.get("last_epoch")).longValue();
  }
}
