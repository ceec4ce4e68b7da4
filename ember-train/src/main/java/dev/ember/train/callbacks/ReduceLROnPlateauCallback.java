package dev.ember.train.callbacks;

import dev.ember.optim.Optimizer;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;
import java.util.Map;

/**
 * Drives a {@link dev.ember.optim.schedule.ReduceLROnPlateau} from a logged value at every epoch
 * end (after validation): the learning rate drops by {@code factor} when the value has not
 * improved for {@code patience} epochs. A hand-written loop uses that scheduler directly
 * (PyTorch's name and arguments); this is its Trainer callback.
 */
public final class ReduceLROnPlateauCallback implements Callback {
  private final String monitor;
  private final double factor;
  private final int patience;
  private final String mode;
  private final double minLr;
  private dev.ember.optim.schedule.ReduceLROnPlateau plateau;
  private Map<String, Object> restored;

  /** PyTorch's defaults for the rest: threshold 1e-4 relative, cooldown 0, eps 1e-8. */
  public ReduceLROnPlateauCallback(String monitor, String mode, double factor, int patience, double minLr) {
    if (monitor == null || monitor.isEmpty()) throw new IllegalArgumentException("ReduceLROnPlateauCallback: monitor must name a logged value");
    this.monitor = monitor;
    this.mode = mode;
    this.factor = factor;
    this.patience = patience;
    this.minLr = minLr;
  }

  private dev.ember.optim.schedule.ReduceLROnPlateau plateau(Optimizer optimizer) {
    if (plateau == null) {
      plateau = new dev.ember.optim.schedule.ReduceLROnPlateau(optimizer, mode, factor, patience, 1e-4, "rel", 0, minLr, 1e-8);
    }
    return plateau;
  }

  @Override
  public void onTrainBegin(TrainContext ctx) {
    plateau(ctx.optimizer());
    if (restored != null) plateau.loadStateDict(restored);
    restored = null;
  }

  @Override
  public void onEpochEnd(TrainContext ctx) {
    Double v = ctx.logs().get(monitor);
    if (v == null) {
      throw new IllegalStateException("ReduceLROnPlateauCallback: monitored value '" + monitor + "' was not logged; logged values are "
          + ctx.logs().keySet());
    }
    plateau(ctx.optimizer()).step(v);
  }

  @Override
  public Map<String, Object> stateDict() {
    return plateau == null ? Map.of() : plateau.stateDict();
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    if (state.isEmpty()) return;
    if (plateau == null) restored = state; // a resumed fit restores before onTrainBegin builds the schedule
    else plateau.loadStateDict(state);
  }
}
