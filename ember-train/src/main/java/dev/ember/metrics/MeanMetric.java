package dev.ember.metrics;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A running (weighted) mean, for values that are not a function of output and target, such as
 * the loss: {@code update(loss.item(), batchSize)} after each batch gives the per-sample mean
 * over the epoch. Sums are kept in double precision with Neumaier compensation, so the mean does
 * not drift over long epochs.
 */
public final class MeanMetric implements Metric<Double> {
  private final String name;
  private double sum;
  private double sumComp;  // Neumaier compensation of sum
  private double weight;

  /** A mean logged as {@code name} ({@code loss}, {@code val_loss}, ...). */
  public MeanMetric(String name) {
    if (name == null || name.isEmpty()) throw new IllegalArgumentException("MeanMetric: name must not be empty");
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  /** Adds {@code value} with weight 1. */
  public void update(double value) {
    update(value, 1);
  }

  /** Adds {@code value} counted {@code weight >= 0} times (a batch mean and its batch size). */
  public void update(double value, long weight) {
    if (weight < 0) {
      throw new IllegalArgumentException("MeanMetric.update: weight must be >= 0, got " + weight + " (" + name + ")");
    }
    if (weight == 0) return;
    add(value * weight, weight);
  }

  /**
   * Adds every element of {@code output} (any shape), each weighted by the matching element of
   * {@code target} (same shape, non-negative), or by 1 when {@code target} is null.
   */
  @Override
  public void update(Tensor output, Tensor target) {
    String op = "MeanMetric.update";
    double[] v = Inputs.values(output);
    if (target == null) {
      for (double x : v) add(x, 1);
      return;
    }
    if (!Arrays.equals(output.shape(), target.shape())) {
      throw Check.fail(op, "values and weights differ in shape", "output", output, "target", target);
    }
    double[] w = Inputs.values(target);
    for (int i = 0; i < w.length; i++) {
      if (!(w[i] >= 0)) {
        throw Check.fail(op, "weights must be >= 0 (got " + w[i] + " at flat index " + i + ")",
            "output", output, "target", target);
      }
    }
    for (int i = 0; i < v.length; i++) if (w[i] != 0) add(v[i] * w[i], w[i]);
  }

  private void add(double weightedValue, double w) {
    double t = sum + weightedValue;
    sumComp += Math.abs(sum) >= Math.abs(weightedValue) ? (sum - t) + weightedValue : (weightedValue - t) + sum;
    sum = t;
    weight += w;
  }

  /** The total weight seen. */
  public double weight() {
    return weight;
  }

  /** The weighted mean of everything seen since the last reset. */
  @Override
  public Double compute() {
    if (weight == 0) throw new IllegalStateException(name + ".compute: nothing seen since the last reset");
    return (sum + sumComp) / weight;
  }

  @Override
  public void reset() {
    sum = 0;
    sumComp = 0;
    weight = 0;
  }

  @Override
  public void merge(Metric<Double> other) {
    MeanMetric o = Merges.sameKind(this, other, MeanMetric.class);
    add(o.sum, 0);
    add(o.sumComp, 0);
    weight += o.weight;
  }

  @Override
  public MeanMetric emptyCopy() {
    return new MeanMetric(name);
  }

  /** {@code sum}, {@code sum_compensation} and {@code weight} (Double). */
  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("sum", sum);
    s.put("sum_compensation", sumComp);
    s.put("weight", weight);
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    StateReader r = new StateReader(this, state, "sum", "sum_compensation", "weight");
    double s = r.real("sum");
    double c = r.real("sum_compensation");
    double w = r.real("weight");
    if (!(w >= 0)) throw r.fail("'weight' must be >= 0 (got " + w + ")");
    sum = s;
    sumComp = c;
    weight = w;
  }
}
