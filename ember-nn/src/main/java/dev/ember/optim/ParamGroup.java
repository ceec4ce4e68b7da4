package dev.ember.optim;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A list of parameters with their own hyperparameters, as an entry of PyTorch's
 * {@code param_groups}. Options not set here are filled from the optimizer's defaults when the
 * group is added, so a group only names what differs:
 * <pre>{@code
 * var opt = new AdamW(List.of(
 *     ParamGroup.of(weights),
 *     ParamGroup.of(biasesAndNorms).set("weight_decay", 0.0)), 1e-3);
 * }</pre>
 * Option values are {@code Double}, {@code Boolean} or {@code double[]} (pairs such as
 * {@code betas}); integers are stored as doubles. Schedules change {@link #setLr(double)}.
 */
public final class ParamGroup {
  private final List<Tensor> params;
  private final LinkedHashMap<String, Object> options = new LinkedHashMap<>();
  private double initialLr = Double.NaN;
  /** Counts the writes to {@link #options}: an optimizer's values resolved at an older count are stale. */
  private int version;

  private ParamGroup(List<Tensor> params) {
    this.params = List.copyOf(params);
  }

  /** A group over {@code params} with no options of its own yet. */
  public static ParamGroup of(Collection<Tensor> params) {
    return new ParamGroup(new ArrayList<>(params));
  }

  /** A group over {@code params} with no options of its own yet. */
  public static ParamGroup of(Tensor... params) {
    return new ParamGroup(Arrays.asList(params));
  }

  /** The parameters of this group, in order (unmodifiable). */
  public List<Tensor> params() {
    return params;
  }

  /** Sets an option; returns this. Numbers become doubles, arrays are copied. */
  public ParamGroup set(String name, Object value) {
    options.put(name, normalize(name, value));
    version++;
    return this;
  }

  /** Whether this group has a value for {@code name}. */
  public boolean has(String name) {
    return options.containsKey(name);
  }

  /** A numeric option. */
  public double getDouble(String name) {
    Object v = get(name);
    if (v instanceof Double d) return d;
    throw new IllegalArgumentException("ParamGroup: option '" + name + "' is not a number: " + show(v));
  }

  /** A boolean option. */
  public boolean getBoolean(String name) {
    Object v = get(name);
    if (v instanceof Boolean b) return b;
    throw new IllegalArgumentException("ParamGroup: option '" + name + "' is not a boolean: " + show(v));
  }

  /** A pair option such as {@code betas} (a copy). */
  public double[] getPair(String name) {
    Object v = get(name);
    if (v instanceof double[] a && a.length == 2) return a.clone();
    throw new IllegalArgumentException("ParamGroup: option '" + name + "' is not a pair of numbers: " + show(v));
  }

  /** Element {@code i} of a pair option, without copying. */
  double pair(String name, int i) {
    return ((double[]) get(name))[i];
  }

  /** The raw option value (Double, Boolean or a copy of a double[]). */
  public Object get(String name) {
    Object v = options.get(name);
    if (v == null) throw new IllegalArgumentException("ParamGroup: no option '" + name + "' (options: " + options.keySet() + ")");
    return v instanceof double[] a ? a.clone() : v;
  }

  /** The learning rate of this group. */
  public double lr() {
    return getDouble("lr");
  }

  /** Changes the learning rate of this group (what schedules do). */
  public void setLr(double lr) {
    if (!(lr >= 0)) throw new IllegalArgumentException("ParamGroup: lr must be >= 0, got " + lr);
    options.put("lr", lr);
    version++;
  }

  /**
   * The learning rate when the first schedule attached to this group (PyTorch's {@code initial_lr}):
   * schedules built later on the same optimizer start from it. NaN before any schedule.
   */
  public double initialLr() {
    return initialLr;
  }

  /** Records the schedules' starting learning rate (set once by the first schedule, or by a restore). */
  public void setInitialLr(double lr) {
    this.initialLr = lr;
  }

  /** A copy of the options, in insertion order, without the parameters. */
  public LinkedHashMap<String, Object> options() {
    LinkedHashMap<String, Object> out = new LinkedHashMap<>();
    for (var e : options.entrySet()) out.put(e.getKey(), e.getValue() instanceof double[] a ? a.clone() : e.getValue());
    return out;
  }

  /** Fills options this group does not set from {@code defaults}. */
  void fillDefaults(Map<String, Object> defaults) {
    for (var e : defaults.entrySet()) {
      if (!options.containsKey(e.getKey())) options.put(e.getKey(), normalize(e.getKey(), e.getValue()));
    }
    version++;
  }

  /** The count of option writes so far (an optimizer caches values read at one count, {@link Adam}). */
  int version() {
    return version;
  }

  static Object normalize(String name, Object value) {
    if (value instanceof Boolean) return value;
    if (value instanceof Number n) return n.doubleValue();
    if (value instanceof double[] a) return a.clone();
    if (value instanceof float[] a) {
      double[] d = new double[a.length];
      for (int i = 0; i < a.length; i++) d[i] = a[i];
      return d;
    }
    if (value instanceof List<?> l && l.stream().allMatch(x -> x instanceof Number)) {
      return l.stream().mapToDouble(x -> ((Number) x).doubleValue()).toArray();
    }
    throw new IllegalArgumentException("ParamGroup: option '" + name + "' must be a number, a boolean or a pair of numbers, got "
        + show(value));
  }

  static String show(Object v) {
    return v instanceof double[] a ? Arrays.toString(a) : String.valueOf(v);
  }

  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder("ParamGroup(").append(params.size()).append(" params");
    for (var e : options.entrySet()) sb.append(", ").append(e.getKey()).append('=').append(show(e.getValue()));
    return sb.append(')').toString();
  }
}
