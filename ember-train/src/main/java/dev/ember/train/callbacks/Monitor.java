package dev.ember.train.callbacks;

import java.util.Map;

/**
 * A logged value watched for improvement: its name ({@code val_loss}), whether lower or higher is
 * better, and by how much it must move to count as better.
 */
record Monitor(String owner, String key, boolean maximize, double minDelta) {
  Monitor {
    if (key == null || key.isEmpty()) throw new IllegalArgumentException(owner + ": monitor must name a logged value");
    if (!(minDelta >= 0)) throw new IllegalArgumentException(owner + ": min_delta must be >= 0, got " + minDelta);
  }

  static Monitor of(String owner, String key, String mode, double minDelta) {
    if (!"min".equals(mode) && !"max".equals(mode)) {
      throw new IllegalArgumentException(owner + ": mode must be \"min\" or \"max\", got \"" + mode + "\"");
    }
    return new Monitor(owner, key, mode.equals("max"), minDelta);
  }

  /** The worst possible value, to start from. */
  double worst() {
    return maximize ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
  }

  /** Whether {@code current} beats {@code best} by more than min_delta (NaN never does). */
  boolean improves(double current, double best) {
    if (Double.isNaN(current)) return false;
    return maximize ? current > best + minDelta : current < best - minDelta;
  }

  /** The monitored value in {@code logs}; a clear error naming what was logged if absent. */
  double read(Map<String, Double> logs) {
    Double v = logs.get(key);
    if (v == null) {
      throw new IllegalStateException(owner + ": monitored value '" + key + "' was not logged; logged values are "
          + logs.keySet() + " (validation values appear only when a validation loader is given)");
    }
    return v;
  }
}
