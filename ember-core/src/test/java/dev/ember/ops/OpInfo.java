package dev.ember.ops;

import dev.ember.testing.Arr;
import dev.ember.testing.Ref;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.DoubleBinaryOperator;
import java.util.function.DoubleUnaryOperator;
import java.util.function.Function;

/**
 * One entry of the op table, keyed to an {@link OpDef} by name: how to call the op, its double-precision oracle,
 * the input shapes and value range to sample, whether it is differentiable, and the error cases with their exact
 * messages. The tests in {@link OpTableTest} (and in other modules' tables, through {@link OpChecks}) are generated
 * from these entries.
 */
public final class OpInfo {
  final String name;
  /** The {@link OpDef} this entry tests: its name unless {@link #def(String)} names another. */
  String def;
  Function<List<Tensor>, Tensor> fn;
  Function<List<Arr>, Arr> oracle;
  final List<int[][]> samples = new ArrayList<>();
  double lo = -2;
  double hi = 2;
  final List<double[]> inputDomains = new ArrayList<>();
  boolean differentiable = true;
  boolean contiguousOnly;
  double f32Rtol = 1e-4;
  final List<ErrorCase> errors = new ArrayList<>();

  record ErrorCase(int[][] shapes, String message, Function<List<Tensor>, Tensor> call) {}

  private OpInfo(String name) {
    this.name = name;
    this.def = name;
  }

  public static OpInfo op(String name) {
    return new OpInfo(name);
  }

  /** The definition this entry tests when it is a variant (e.g. {@code sum_dims} of {@code sum}). */
  public OpInfo def(String defName) {
    this.def = defName;
    return this;
  }

  public OpInfo fn(Function<List<Tensor>, Tensor> f) {
    this.fn = f;
    return this;
  }

  public OpInfo unary(Function<Tensor, Tensor> f) {
    this.fn = l -> f.apply(l.get(0));
    if (samples.isEmpty()) shapes("[]", "[7]", "[3, 5]", "[2, 1, 4]", "[0]", "[2, 0]");
    return this;
  }

  public OpInfo binary(BiFunction<Tensor, Tensor, Tensor> f) {
    this.fn = l -> f.apply(l.get(0), l.get(1));
    if (samples.isEmpty()) shapes("[3, 4] x [3, 4]", "[3, 1] x [1, 4]", "[] x [2, 3]", "[2, 3, 4] x [4]", "[5] x []",
        "[0, 3] x [3]");
    return this;
  }

  public OpInfo ref(Function<List<Arr>, Arr> oracle) {
    this.oracle = oracle;
    return this;
  }

  public OpInfo refUnary(DoubleUnaryOperator f) {
    this.oracle = l -> Ref.map(l.get(0), f);
    return this;
  }

  public OpInfo refBinary(DoubleBinaryOperator f) {
    this.oracle = l -> Ref.zip(l.get(0), l.get(1), f);
    return this;
  }

  /** Replaces the samples: each string is one sample, input shapes separated by " x ". */
  public OpInfo shapes(String... specs) {
    samples.clear();
    for (String s : specs) samples.add(parse(s));
    return this;
  }

  public OpInfo domain(double lo, double hi) {
    this.lo = lo;
    this.hi = hi;
    return this;
  }

  /** Samples input {@code input} from [lo, hi) instead of the op's domain (e.g. a probability or a variance). */
  public OpInfo domain(int input, double lo, double hi) {
    while (inputDomains.size() <= input) inputDomains.add(null);
    inputDomains.set(input, new double[] {lo, hi});
    return this;
  }

  /** The sampling range of input {@code input}: its own if set, else the op's. */
  double[] domainOf(int input) {
    double[] d = input < inputDomains.size() ? inputDomains.get(input) : null;
    return d != null ? d : new double[] {lo, hi};
  }

  public OpInfo noGrad() {
    this.differentiable = false;
    return this;
  }

  /** Inputs must stay contiguous (ops whose fn builds its own layout, e.g. view). */
  public OpInfo contiguousOnly() {
    this.contiguousOnly = true;
    return this;
  }

  public OpInfo f32Rtol(double rtol) {
    this.f32Rtol = rtol;
    return this;
  }

  /** Calling the op on zero tensors of these shapes throws IllegalArgumentException with exactly this message. */
  public OpInfo error(String shapes, String message) {
    errors.add(new ErrorCase(parse(shapes), message, null));
    return this;
  }

  /** As {@link #error(String, String)}, calling the op with other arguments (e.g. a bad hyperparameter). */
  public OpInfo error(Function<List<Tensor>, Tensor> call, String shapes, String message) {
    errors.add(new ErrorCase(parse(shapes), message, call));
    return this;
  }

  static int[][] parse(String spec) {
    String[] parts = spec.split(" x ");
    int[][] out = new int[parts.length][];
    for (int i = 0; i < parts.length; i++) {
      String p = parts[i].trim();
      String inner = p.substring(1, p.length() - 1).trim();
      out[i] = inner.isEmpty() ? new int[0] : Arrays.stream(inner.split(",")).mapToInt(x -> Integer.parseInt(x.trim())).toArray();
    }
    return out;
  }

  public String name() {
    return name;
  }

  /** The name of the {@link OpDef} this entry tests. */
  public String def() {
    return def;
  }

  /** Whether the op has a double-precision oracle (entries without one are checked against float64 fixtures). */
  public boolean hasOracle() {
    return oracle != null;
  }

  public boolean differentiable() {
    return differentiable;
  }

  public int sampleCount() {
    return samples.size();
  }

  @Override
  public String toString() {
    return name;
  }
}
