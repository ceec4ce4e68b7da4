package dev.ember.metrics;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A named set of scalar metrics updated together, with the value of each at the end of every
 * epoch.
 * <pre>{@code
 * MetricTracker val = new MetricTracker()
 *     .add(new Accuracy())
 *     .add(new F1Score(10, Average.MACRO))
 *     .addMean("loss");
 * for (Batch b : loader) {
 *   Tensor out = model.forward(b.input());
 *   Tensor loss = F.crossEntropy(out, b.target());
 *   val.update(out, b.target());                        // accuracy, f1_macro
 *   val.updateMean("loss", loss.item(), b.size());      // loss
 * }
 * Map<String, Double> epoch = val.endEpoch();           // {accuracy=.., f1_macro=.., loss=..}
 * MetricTracker.Best best = val.best("accuracy", "max");
 * }</pre>
 * Metrics added with {@link #add} take every {@link #update}; means added with {@link #addMean}
 * take only {@link #updateMean}. Values keep insertion order.
 */
public final class MetricTracker {
  /** The best value of a metric and the epoch (counting from 1) that reached it first. */
  public record Best(int epoch, double value) {}

  private final LinkedHashMap<String, Metric<Double>> metrics = new LinkedHashMap<>();
  private final LinkedHashMap<String, MeanMetric> means = new LinkedHashMap<>();
  private final LinkedHashMap<String, List<Double>> history = new LinkedHashMap<>();

  /** Adds {@code metric} under its own {@link Metric#name()}. */
  public MetricTracker add(Metric<Double> metric) {
    return add(metric.name(), metric);
  }

  /** Adds {@code metric} under {@code name}; names must be unique. */
  public MetricTracker add(String name, Metric<Double> metric) {
    if (metric == null) throw new IllegalArgumentException("MetricTracker.add: metric '" + name + "' is null");
    claim(name);
    metrics.put(name, metric);
    return this;
  }

  /** Adds a running mean under {@code name}, fed by {@link #updateMean}. */
  public MetricTracker addMean(String name) {
    claim(name);
    MeanMetric m = new MeanMetric(name);
    metrics.put(name, m);
    means.put(name, m);
    return this;
  }

  private void claim(String name) {
    if (name == null || name.isEmpty()) throw new IllegalArgumentException("MetricTracker.add: name must not be empty");
    if (epochs() > 0) {
      throw new IllegalStateException("MetricTracker.add: cannot add '" + name + "' after " + epochs()
          + (epochs() == 1 ? " epoch" : " epochs") + " ended (its history would not line up with the others)");
    }
    if (metrics.containsKey(name)) {
      throw new IllegalArgumentException("MetricTracker.add: a metric named '" + name + "' is already tracked"
          + " (tracked: " + metrics.keySet() + ")");
    }
  }

  /** The names tracked, in insertion order. */
  public List<String> names() {
    return List.copyOf(metrics.keySet());
  }

  /** The metric tracked as {@code name}. */
  public Metric<Double> get(String name) {
    Metric<Double> m = metrics.get(name);
    if (m == null) throw unknown("get", name);
    return m;
  }

  /** Updates every metric added with {@link #add} with one batch. */
  public void update(Tensor output, Tensor target) {
    for (var e : metrics.entrySet()) {
      if (!means.containsKey(e.getKey())) e.getValue().update(output, target);
    }
  }

  /** Adds {@code value} with {@code weight} to the mean {@code name} (see {@link MeanMetric#update(double, long)}). */
  public void updateMean(String name, double value, long weight) {
    MeanMetric m = means.get(name);
    if (m == null) {
      throw new IllegalArgumentException("MetricTracker.updateMean: no mean named '" + name + "' (means: "
          + means.keySet() + "; add it with addMean)");
    }
    m.update(value, weight);
  }

  /** The current value of every metric, in insertion order. */
  public Map<String, Double> compute() {
    LinkedHashMap<String, Double> out = new LinkedHashMap<>();
    for (var e : metrics.entrySet()) out.put(e.getKey(), e.getValue().compute());
    return Collections.unmodifiableMap(out);
  }

  /** Resets every metric (the history is kept). */
  public void reset() {
    for (Metric<Double> m : metrics.values()) m.reset();
  }

  /** Computes every metric, appends the values to the history as the next epoch, resets, and returns them. */
  public Map<String, Double> endEpoch() {
    Map<String, Double> values = compute();
    for (var e : values.entrySet()) history.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
    reset();
    return values;
  }

  /** Epochs ended so far. */
  public int epochs() {
    return history.isEmpty() ? 0 : history.values().iterator().next().size();
  }

  /** The per-epoch values of {@code name} (empty before the first {@link #endEpoch}). */
  public List<Double> history(String name) {
    if (!metrics.containsKey(name)) throw unknown("history", name);
    return Collections.unmodifiableList(history.getOrDefault(name, List.of()));
  }

  /**
   * The best epoch value of {@code name}: the largest for {@code mode "max"}, the smallest for
   * {@code "min"}; NaN values are skipped and the earliest epoch wins ties.
   */
  public Best best(String name, String mode) {
    boolean max;
    if ("max".equals(mode)) max = true;
    else if ("min".equals(mode)) max = false;
    else throw new IllegalArgumentException("MetricTracker.best: mode must be \"max\" or \"min\", got \"" + mode + "\"");
    List<Double> h = history(name);
    int bestEpoch = -1;
    double bestValue = Double.NaN;
    for (int i = 0; i < h.size(); i++) {
      double v = h.get(i);
      if (Double.isNaN(v)) continue;
      if (bestEpoch < 0 || (max ? v > bestValue : v < bestValue)) {
        bestEpoch = i + 1;
        bestValue = v;
      }
    }
    if (bestEpoch < 0) {
      throw new IllegalStateException("MetricTracker.best: no epoch value for '" + name + "' yet (" + h.size()
          + (h.size() == 1 ? " epoch" : " epochs") + ", all NaN or none)");
    }
    return new Best(bestEpoch, bestValue);
  }

  /**
   * The state of every metric and the history: {@code metrics} maps each tracked name to that
   * metric's {@link Metric#stateDict}, {@code history} each name to its per-epoch values
   * (double[epochs]); both in insertion order.
   */
  public Map<String, Object> stateDict() {
    Map<String, Object> states = new LinkedHashMap<>();
    Map<String, Object> values = new LinkedHashMap<>();
    for (var e : metrics.entrySet()) {
      states.put(e.getKey(), e.getValue().stateDict());
      List<Double> h = history.getOrDefault(e.getKey(), List.of());
      double[] v = new double[h.size()];
      for (int i = 0; i < v.length; i++) v[i] = h.get(i);
      values.put(e.getKey(), v);
    }
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("metrics", states);
    s.put("history", values);
    return s;
  }

  /**
   * Replaces the state of every metric and the history with {@code state} from
   * {@link #stateDict} of a tracker with the same names. Everything is checked (each metric's
   * state against an empty copy of it) before anything changes.
   */
  public void loadStateDict(Map<String, Object> state) {
    String op = "MetricTracker.loadStateDict";
    String tracked = "tracked=" + metrics.keySet();
    StateReader r = new StateReader(op, tracked, state, "metrics", "history");
    Map<String, Object> states = r.map("metrics");
    Map<String, Object> values = r.map("history");
    String[] names = metrics.keySet().toArray(String[]::new);
    new StateReader(op, tracked, states, names);
    StateReader h = new StateReader(op, tracked, values, names);
    LinkedHashMap<String, List<Double>> loaded = new LinkedHashMap<>();
    int epochs = -1;
    for (String name : names) {
      double[] v = h.doubles(name, epochs, "epochs, as the other metrics' histories");
      epochs = v.length;
      List<Double> l = new ArrayList<>(v.length);
      for (double x : v) l.add(x);
      loaded.put(name, l);
    }
    for (String name : names) {
      Map<String, Object> s = metricState(op, name, states.get(name));
      metrics.get(name).emptyCopy().loadStateDict(s);  // validates without touching the metric
    }
    for (String name : names) metrics.get(name).loadStateDict(metricState(op, name, states.get(name)));
    history.clear();
    if (epochs > 0) history.putAll(loaded);
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> metricState(String op, String name, Object s) {
    if (!(s instanceof Map<?, ?> m)) {
      throw new IllegalArgumentException(op + ": the state of '" + name + "' must be a Map (got "
          + (s == null ? "null" : s.getClass().getSimpleName()) + ")");
    }
    for (Object k : m.keySet()) {
      if (!(k instanceof String)) {
        throw new IllegalArgumentException(op + ": the state of '" + name + "' must have String keys (got " + k + ")");
      }
    }
    return (Map<String, Object>) m;
  }

  private IllegalArgumentException unknown(String method, String name) {
    return new IllegalArgumentException("MetricTracker." + method + ": no metric named '" + name + "' (tracked: "
        + metrics.keySet() + ")");
  }
}
