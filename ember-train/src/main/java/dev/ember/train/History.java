package dev.ember.train;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
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

  /**
   * The epochs and optimizer steps reached and the last value of everything logged, in
   * first-logged order: {@code History(5 epochs, 2345 steps; loss=0.2931 accuracy=0.8912
   * lr=0.0010 epoch_time_s=3.1416 val_loss=0.3310 val_accuracy=0.8792 train_time_s=16.2000)}.
   * Counts (keys ending in {@code step(s)} or {@code epoch(s)}) print as integers, other values
   * with 4 decimals, or in scientific notation outside [0.001, 100000) (0 stays 0.0000).
   */
  @Override
  public String toString() {
    int epochs = 0;
    long steps = 0;
    for (List<Entry> l : series.values()) {
      for (Entry e : l) {
        epochs = Math.max(epochs, e.epoch());
        steps = Math.max(steps, e.step());
      }
    }
    StringBuilder sb = new StringBuilder("History(").append(epochs).append(epochs == 1 ? " epoch, " : " epochs, ")
        .append(steps).append(steps == 1 ? " step" : " steps");
    String sep = "; ";
    for (var e : series.entrySet()) {
      if (e.getValue().isEmpty()) continue;
      sb.append(sep).append(e.getKey()).append('=').append(number(e.getKey(), e.getValue().getLast().value()));
      sep = " ";
    }
    return sb.append(')').toString();
  }

  private static String number(String key, double v) {
    if (Double.isNaN(v)) return "NaN";
    if (Double.isInfinite(v)) return v > 0 ? "Inf" : "-Inf";
    double a = Math.abs(v);
    boolean count = key.endsWith("step") || key.endsWith("steps") || key.endsWith("epoch") || key.endsWith("epochs");
    if (count && v == Math.rint(v) && a < 1e15) return Long.toString((long) v);
    if (a == 0 || (a >= 1e-3 && a < 1e5)) return String.format(Locale.ROOT, "%.4f", v);
    return String.format(Locale.ROOT, "%.3e", v);
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
      LinkedHashMap<String, Object> entry = new LinkedHashMap<>();   // a fixed order: Map.of's varies per JVM
      entry.put("epoch", epochs);
      entry.put("step", steps);
      entry.put("value", values);
      out.put(e.getKey(), entry);
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
