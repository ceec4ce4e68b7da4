package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import dev.ember.optim.ParamGroup;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Base of the learning-rate schedules. A schedule is a pure function of the step:
 * {@link #lrAt(int, long)} gives group {@code g}'s learning rate at step {@code t} from its base
 * learning rate alone, and {@link #step()} advances the counter and writes that value into the
 * optimizer's groups. So a schedule restored from {@link #stateDict()} continues exactly, and the
 * values equal PyTorch's (which PyTorch computes recursively for most schedules).
 *
 * <p>As in PyTorch, constructing a schedule sets the groups' learning rates to their step-0 values;
 * the base learning rate of a group is its lr when the first schedule attached to the optimizer
 * ({@link ParamGroup#initialLr()}), so schedules built one after another (for {@link SequentialLR})
 * share it.
 */
public abstract class LRScheduler {
  protected final Optimizer optimizer;
  private double[] baseLrs;
  private long lastEpoch;
  private double[] lastLr;

  /** Takes the base learning rates from the groups ({@code initial_lr}, set here when absent). */
  protected LRScheduler(Optimizer optimizer) {
    this(optimizer, null);
  }

  /** Uses {@code baseLrs} (one per group) when not null, else the groups' initial learning rates. */
  protected LRScheduler(Optimizer optimizer, double[] baseLrs) {
    this.optimizer = optimizer;
    List<ParamGroup> groups = optimizer.paramGroups();
    if (baseLrs != null && baseLrs.length != groups.size()) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": expected " + groups.size()
          + " base learning rates (one per group), got " + baseLrs.length);
    }
    this.baseLrs = new double[groups.size()];
    for (int i = 0; i < groups.size(); i++) {
      ParamGroup g = groups.get(i);
      if (Double.isNaN(g.initialLr())) g.setInitialLr(g.lr());
      this.baseLrs[i] = baseLrs != null ? baseLrs[i] : g.initialLr();
    }
  }

  /** Learning rate of group {@code group} at step {@code step}, given its base learning rate. */
  protected abstract double lr(double baseLr, int group, long step);

  /** Learning rate of group {@code group} at step {@code step} (pure: depends on nothing else). */
  public double lrAt(int group, long step) {
    return lr(baseLrs[group], group, step);
  }

  /** Applies the step-0 values; subclasses call it at the end of their constructors. */
  protected final void start() {
    lastEpoch = 0;
    apply();
  }

  /** Advances one step and sets the groups' learning rates. */
  public void step() {
    lastEpoch++;
    apply();
  }

  /** Jumps to step {@code step} and sets the groups' learning rates. */
  public void step(long step) {
    if (step < 0) throw new IllegalArgumentException(getClass().getSimpleName() + ": step must be >= 0, got " + step);
    lastEpoch = step;
    apply();
  }

  private void apply() {
    List<ParamGroup> groups = optimizer.paramGroups();
    double[] lrs = new double[groups.size()];
    for (int i = 0; i < lrs.length; i++) {
      lrs[i] = lrAt(i, lastEpoch);
      groups.get(i).setLr(lrs[i]);
    }
    lastLr = lrs;
    afterApply(lastEpoch);
  }

  /** Hook for schedules that also drive other options (momentum cycling). */
  protected void afterApply(long step) {}

  /** The current step (PyTorch's {@code last_epoch}). */
  public long lastEpoch() {
    return lastEpoch;
  }

  /** The learning rates set by the last step, one per group. */
  public double[] lastLr() {
    return lastLr.clone();
  }

  /** The base learning rates, one per group. */
  public double[] baseLrs() {
    return baseLrs.clone();
  }

  /** The optimizer driven. */
  public Optimizer optimizer() {
    return optimizer;
  }

  /** The schedule's state: {@code last_epoch}, {@code base_lrs}, {@code _last_lr} (PyTorch's keys). */
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("last_epoch", lastEpoch);
    s.put("base_lrs", baseLrs.clone());
    s.put("_last_lr", lastLr.clone());
    return s;
  }

  /** Restores {@link #stateDict()}; the optimizer's learning rates come back with the optimizer's own state. */
  public void loadStateDict(Map<String, Object> state) {
    Object e = state.get("last_epoch"), b = state.get("base_lrs"), l = state.get("_last_lr");
    if (!(e instanceof Number) || !(b instanceof double[] bl) || !(l instanceof double[] ll)) {
      throw new IllegalArgumentException(getClass().getSimpleName()
          + ": state must hold last_epoch (a number), base_lrs and _last_lr (double[]), got keys " + state.keySet());
    }
    if (bl.length != baseLrs.length) {
      throw new IllegalArgumentException(getClass().getSimpleName() + ": state has " + bl.length
          + " base learning rates for " + baseLrs.length + " groups");
    }
    lastEpoch = ((Number) e).longValue();
    baseLrs = bl.clone();
    lastLr = ll.clone();
  }

  /**
   * Sets a group's momentum for the cycling schedules: {@code betas[0]} when the optimizer has
   * betas, else {@code momentum}.
   */
  protected static void setMomentum(ParamGroup g, double momentum) {
    if (g.has("betas")) {
      double[] b = g.getPair("betas");
      g.set("betas", new double[] {momentum, b[1]});
    } else {
      g.set("momentum", momentum);
    }
  }

  /** Fails unless the optimizer has momentum or betas (for cycle_momentum). */
  protected static void requireMomentum(String name, Optimizer opt) {
    for (ParamGroup g : opt.paramGroups()) {
      if (!g.has("betas") && !g.has("momentum")) {
        throw new IllegalArgumentException(name + ": optimizer must support momentum (a 'momentum' or 'betas' option)"
            + " with cycle_momentum enabled, " + opt.name() + " has neither");
      }
    }
  }

  static void require(boolean ok, String message) {
    if (!ok) throw new IllegalArgumentException(message);
  }
}
