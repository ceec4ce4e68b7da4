package dev.ember.train;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Every value the Trainer logged, in order: per-epoch training values ({@code loss}, metrics,
 * {@code lr}), validation values ({@code val_loss}, {@code val_<metric>}) and anything callbacks
 * log. Each entry remembers the epoch and optimizer step at which it was logged.
 */
public final class History {
  /** One logged value. {@code epoch} counts from 1; {@code step} is the number of optimizer steps done. */
  public record Entry(int epoch, long step, double value) {}

  private final LinkedHashMap<String, List<Entry>> series = new LinkedHashMap<>();

  /** Appends {@code value} under {@code key}. */
  public void log(String key, int epoch, long step, double value) {
    series.computeIfAbsent(key, k -> new ArrayList<>()).add(new Entry(epoch, step, value));
  }

  /** The names logged so far, in first-logged order. */
  public List<String> keys() {
    return List.copyOf(series.keySet());
  }

  /** The entries of {@code key} (empty if never logged). */
  public List<Entry> entries(String key) {
    return Collections.unmodifiableList(series.getOrDefault(key, List.of()));
  }

  /** The values of {@code key} in order. */
  public double[] values(String key) {
    return entries(key).stream().mapToDouble(Entry::value).toArray();
  }

  /** The last value of {@code key}, or NaN if it was never logged. */
  public double last(String key) {
    List<Entry> e = series.get(key);
    return e == null || e.isEmpty() ? Double.NaN : e.get(e.size() - 1).value();
  }

  /** Everything as plain maps (for checkpoints): key -> [epoch..., step..., value...] arrays. */
  public Map<String, Object> stateDict() {
    LinkedHashMap<String, Object> out = new LinkedHashMap<>();
    for (var e : series.entrySet()) {
      List<Entry> l = e.getValue();
      long[] epochs = new long[l.size()];
      long[] steps = new long[l.size()];
      double[] values = new double[l.size()];
      for (int i = 0; i < l.size(); i++) {
        epochs[i] = l.get(i).epoch();
        steps[i] = l.get(i).step();
        values[i] = l.get(i).value();
      }
      out.put(e.getKey(), Map.of("epoch", epochs, "step", steps, "value", values));
    }
    return out;
  }

  /** Replaces the contents with a {@link #stateDict()}. */
  public void loadStateDict(Map<String, Object> state) {
    series.clear();
    for (var e : state.entrySet()) {
      if (!(e.getValue() instanceof Map<?, ?> m) || !(m.get("epoch") instanceof long[] ep)
          || !(m.get("step") instanceof long[] st) || !(m.get("value") instanceof double[] va)
          || ep.length != st.length || st.length != va.length) {
        throw new IllegalArgumentException("History.loadStateDict: entry '" + e.getKey()
            + "' must hold equally long epoch (long[]), step (long[]) and value (double[]) arrays");
      }
      for (int i = 0; i < va.length; i++) log(e.getKey(), (int) ep[i], st[i], va[i]);
    }
  }
}
