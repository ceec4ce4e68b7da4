package dev.ember.metrics;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Shared body of the regression metrics: per-output running sums in double precision, so that an
 * update costs one pass over the batch. {@code output} and {@code target} are [B] (one output) or
 * [B, D] (D outputs) of the same shape; [B] against [B, 1] is accepted as one output. D is fixed
 * by the first batch. Multi-output values are the uniform mean of the per-output values, as
 * scikit-learn's {@code multioutput='uniform_average'}.
 */
abstract sealed class RegressionMetric implements Metric<Double>
    permits MeanAbsoluteError, SquaredErrorMetric, R2Score {
  /** Outputs per sample; 0 before the first update. */
  int outputs;
  /** Samples seen. */
  long n;

  private String op(String method) {
    return getClass().getSimpleName() + "." + method;
  }

  /** Adds a checked batch: {@code o} and {@code t} row-major [b, d] with {@code d == outputs}. */
  abstract void accumulate(double[] o, double[] t, int b, int d);

  /** Allocates the per-output sums for {@code d} outputs. */
  abstract void allocate(int d);

  /** The value of output {@code j}. */
  abstract double value(int j);

  /** Adds the sums of {@code other} (same kind, same outputs, both non-empty). */
  abstract void mergeSums(RegressionMetric other);

  /** The state keys of the per-output arrays, in the order of {@link #sums}. */
  abstract String[] sumKeys();

  /** The per-output arrays themselves (not copies), as allocated by {@link #allocate}. */
  abstract double[][] sums();

  @Override
  public void update(Tensor output, Tensor target) {
    String op = op("update");
    if (output.dim() == 0 || output.dim() > 2 || target.dim() == 0 || target.dim() > 2) {
      throw Check.fail(op, "output and target must be [B] or [B, D]", "output", output, "target", target);
    }
    int b = Inputs.batch(op, output, target);
    int d = output.dim() == 1 ? 1 : output.size(1);
    int dt = target.dim() == 1 ? 1 : target.size(1);
    boolean sameRank = output.dim() == target.dim();
    if (d != dt || (!sameRank && d != 1)) {
      throw Check.fail(op, "output and target shapes differ", "output", output, "target", target);
    }
    requireNumeric(op, output, target, output);
    requireNumeric(op, output, target, target);
    if (outputs == 0) {
      outputs = d;
      allocate(d);
    } else if (d != outputs) {
      throw Check.fail(op, "number of outputs changed (" + outputs + " before, now " + d + ")",
          "output", output, "target", target);
    }
    if (b == 0) return;
    accumulate(Inputs.values(output), Inputs.values(target), b, d);
    n += b;
  }

  private static void requireNumeric(String op, Tensor output, Tensor target, Tensor t) {
    if (t.dtype() == dev.ember.tensor.DType.BOOL) {
      throw Check.fail(op, (t == output ? "output" : "target") + " must be numeric (got bool)",
          "output", output, "target", target);
    }
  }

  /** The uniform average over outputs of the per-output values ({@link #perOutput}). */
  @Override
  public Double compute() {
    if (n == 0) throw new IllegalStateException(op("compute") + ": no samples seen since the last reset");
    double s = 0;
    for (int j = 0; j < outputs; j++) s += value(j);
    return s / outputs;
  }

  /** The value of each output separately (scikit-learn's {@code multioutput='raw_values'}). */
  public double[] perOutput() {
    if (n == 0) throw new IllegalStateException(op("perOutput") + ": no samples seen since the last reset");
    double[] v = new double[outputs];
    for (int j = 0; j < outputs; j++) v[j] = value(j);
    return v;
  }

  @Override
  public void reset() {
    outputs = 0;
    n = 0;
  }

  @Override
  public void merge(Metric<Double> other) {
    RegressionMetric o = Merges.sameKind(this, other, getClass());
    if (o.n == 0) return;
    if (n == 0) {
      outputs = o.outputs;
      allocate(outputs);
    } else if (o.outputs != outputs) {
      throw new IllegalArgumentException(op("merge") + ": number of outputs differs (" + outputs + " vs "
          + o.outputs + ")");
    }
    mergeSums(o);
    n += o.n;
  }

  /**
   * {@code outputs} (Integer, 0 before the first batch), {@code count} (Long, samples seen) and
   * one double[outputs] per running sum of the subclass.
   */
  @Override
  public Map<String, Object> stateDict() {
    Map<String, Object> s = new LinkedHashMap<>();
    s.put("outputs", outputs);
    s.put("count", n);
    String[] keys = sumKeys();
    double[][] sums = outputs == 0 ? null : sums();
    for (int i = 0; i < keys.length; i++) s.put(keys[i], sums == null ? new double[0] : sums[i].clone());
    return s;
  }

  @Override
  public void loadStateDict(Map<String, Object> state) {
    String[] keys = sumKeys();
    String[] all = new String[keys.length + 2];
    all[0] = "outputs";
    all[1] = "count";
    System.arraycopy(keys, 0, all, 2, keys.length);
    StateReader r = new StateReader(this, state, all);
    long d = r.count("outputs");
    long count = r.count("count");
    if (d > Integer.MAX_VALUE - 8) throw r.fail("'outputs' is too large (" + d + ")");
    if (d == 0 && count > 0) throw r.fail("'count' is " + count + " but 'outputs' is 0");
    double[][] loaded = new double[keys.length][];
    for (int i = 0; i < keys.length; i++) loaded[i] = r.doubles(keys[i], (int) d, "for outputs " + d);
    outputs = (int) d;
    n = count;
    if (d > 0) {
      allocate(outputs);
      double[][] sums = sums();
      for (int i = 0; i < keys.length; i++) System.arraycopy(loaded[i], 0, sums[i], 0, outputs);
    }
  }

  static double[] add(double[] a, double[] b) {
    for (int j = 0; j < a.length; j++) a[j] += b[j];
    return a;
  }

  static double[] zeros(int d) {
    return new double[d];
  }
}
