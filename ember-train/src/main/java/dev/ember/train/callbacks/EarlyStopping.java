package dev.ember.train.callbacks;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Stops training when a monitored value has not improved for {@code patience} epochs, and
 * optionally puts back the weights of the best epoch when training ends.
 */
public final class EarlyStopping implements Callback {
  private final Monitor monitor;
  private final int patience;
  private final boolean restoreBestWeights;
  private double best;
  private int bestEpoch;
  private int wait;
  private int stoppedEpoch;
  private LinkedHashMap<String, Tensor> bestWeights;

  /** Watches {@code monitor} ("min" or "max" mode) with min_delta 0 and no weight restore. */
  public EarlyStopping(String monitor, String mode, int patience) {
    this(monitor, mode, patience, 0.0, false);
  }

  public EarlyStopping(String monitor, String mode, int patience, double minDelta, boolean restoreBestWeights) {
    this.monitor = Monitor.of("EarlyStopping", monitor, mode, minDelta);
    if (patience < 0) throw new IllegalArgumentException("EarlyStopping: patience must be >= 0, got " + patience);
    this.patience = patience;
    this.restoreBestWeights = restoreBestWeights;
    this.best = this.monitor.worst();
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    double current = monitor.read(ctx.logs());
    if (monitor.improves(current, best)) {
      best = current;
      bestEpoch = ctx.epoch();
      wait = 0;
      if (restoreBestWeights) bestWeights = copy(ctx.model().stateDict());
      return;
    }
    wait++;
    if (wait > patience) {
      stoppedEpoch = ctx.epoch();
      ctx.requestStop("EarlyStopping: " + monitor.key() + " did not improve for " + wait + (wait == 1 ? " epoch" : " epochs") + " (best "
          + best + " at epoch " + bestEpoch + ")");
    }
  }

  @Override
  public void onTrainEnd(TrainContext ctx) {
    if (restoreBestWeights && bestWeights != null) {
      try (var ignored = Grad.off()) {
        ctx.model().loadStateDict(bestWeights);
      }
    }
  }

  /** The best monitored value seen (the mode's worst value before the first epoch end). */
  public double best() {
    return best;
  }

  /** The epoch (from 1) of the best value, 0 if none yet. */
  public int bestEpoch() {
    return bestEpoch;
  }

  /** The epoch at which it asked training to stop, 0 if it did not. */
  public int stoppedEpoch() {
    return stoppedEpoch;
  }

  @Override
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("best", best);
    s.put("best_epoch", bestEpoch);
    s.put("wait", wait);
    s.put("stopped_epoch", stoppedEpoch);
    if (bestWeights != null) s.put("best_weights", new LinkedHashMap<String, Object>(bestWeights));
    return s;
  }

  @Override
  @SuppressWarnings("unchecked")
  public void loadStateDict(Map<String, Object> state) {
    best = (Double) state.get("best");
    bestEpoch = (Integer) state.get("best_epoch");
    wait = (Integer) state.get("wait");
    stoppedEpoch = (Integer) state.get("stopped_epoch");
    bestWeights = null;
    if (state.get("best_weights") instanceof Map<?, ?> m) {
      bestWeights = new LinkedHashMap<>();
      ((Map<String, Object>) m).forEach((k, v) -> bestWeights.put(k, (Tensor) v));
    }
  }

  private static LinkedHashMap<String, Tensor> copy(Map<String, Tensor> state) {
    LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
    try (var ignored = Grad.off()) {
      state.forEach((k, v) -> out.put(k, v.detach().cloneContiguous()));
    }
    return out;
  }
}
