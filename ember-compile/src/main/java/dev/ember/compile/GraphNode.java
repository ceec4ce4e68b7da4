package dev.ember.compile;

import dev.ember.autograd.Tracing;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One value of a {@link Graph}: a graph input, a parameter or buffer of the traced module, a constant, or the
 * output of an op. An op node names its op definition ({@code "linear"}, {@code "relu"}), its inputs (null for an
 * absent optional input, such as a linear without bias), its attributes (the op's non-tensor arguments), the shape
 * and dtype of its output, and how to run it: the op's own entry point again, on new inputs.
 */
public final class GraphNode {
  /** What a node is. */
  public enum Kind {
    /** A tensor passed to the forward: {@code target} is its position. */
    INPUT,
    /** A parameter or buffer of the module, read when the graph runs (so training updates are seen). */
    PARAMETER,
    /** A tensor fixed at trace time (made inside the forward, or folded). */
    CONSTANT,
    /** The output of an op. */
    OP
  }

  private final Kind kind;
  private final String op;
  final List<GraphNode> inputs;
  private final Map<String, Object> attrs;
  private final int[] shape;
  /** Per dim, k for a dim that is k times the symbolic batch size (shape holds its traced size), else 0; or null. */
  private final int[] perBatch;
  private final DType dtype;
  private final Tracing.Replay replay;
  private final Tensor value;
  private final String target;
  String name;
  int slot;

  private GraphNode(Kind kind, String op, List<GraphNode> inputs, Map<String, Object> attrs, int[] shape, DType dtype,
      Tracing.Replay replay, Tensor value, String target) {
    this(kind, op, inputs, attrs, shape, null, dtype, replay, value, target);
  }

  private GraphNode(Kind kind, String op, List<GraphNode> inputs, Map<String, Object> attrs, int[] shape, int[] perBatch,
      DType dtype, Tracing.Replay replay, Tensor value, String target) {
    this.perBatch = perBatch == null ? null : perBatch.clone();
    this.kind = kind;
    this.op = op;
    this.inputs = new ArrayList<>(inputs);
    this.attrs = attrs;
    this.shape = shape.clone();
    this.dtype = dtype;
    this.replay = replay;
    this.value = value;
    this.target = target;
  }

  /** Graph input number {@code index}, of the shape and dtype it was traced with. */
  public static GraphNode input(int index, int[] shape, DType dtype) {
    return new GraphNode(Kind.INPUT, "input", List.of(), Map.of(), shape, dtype, null, null, Integer.toString(index));
  }

  /** Parameter or buffer {@code name} (dotted, as in the state dict) of the module, read when the graph runs. */
  public static GraphNode parameter(String name, Tensor value) {
    return new GraphNode(Kind.PARAMETER, "parameter", List.of(), Map.of(), value.shape(), value.dtype(), null, value,
        name);
  }

  /**
   * A constant tensor, taken out of any {@link dev.ember.tensor.MemoryScope} (a graph outlives the call that compiled
   * it: a pass that makes a constant inside the first step's scope must not leave the graph a buffer the scope's end
   * hands back to the pool).
   */
  public static GraphNode constant(Tensor value) {
    dev.ember.tensor.MemoryScope.escape(value);
    return new GraphNode(Kind.CONSTANT, "constant", List.of(), Map.of(), value.shape(), value.dtype(), null, value, null);
  }

  /**
   * Op {@code op} on {@code inputs} with {@code attrs} (names and values, in the op's order; a value may be null),
   * giving a {@code dtype} tensor of {@code shape}, run by {@code replay}.
   */
  public static GraphNode op(String op, List<GraphNode> inputs, Map<String, Object> attrs, int[] shape, DType dtype,
      Tracing.Replay replay) {
    return new GraphNode(Kind.OP, op, inputs, java.util.Collections.unmodifiableMap(new LinkedHashMap<>(attrs)), shape,
        dtype, replay, null, null);
  }

  /** The attributes of a {@link Tracing} report: names and values in turn. */
  static Map<String, Object> attrs(Object... namesAndValues) {
    if (namesAndValues.length % 2 != 0) {
      throw new IllegalArgumentException("attrs: names and values in turn, got " + namesAndValues.length + " items");
    }
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < namesAndValues.length; i += 2) m.put((String) namesAndValues[i], namesAndValues[i + 1]);
    return m;
  }

  /** A copy of this node reading {@code newInputs} instead (same op, attributes, output type). */
  GraphNode withInputs(List<GraphNode> newInputs) {
    return new GraphNode(kind, op, newInputs, attrs, shape, perBatch, dtype, replay, value, target);
  }

  /** A copy run by {@code newReplay} instead (same op, inputs, attributes and output type). */
  GraphNode withReplay(Tracing.Replay newReplay) {
    return new GraphNode(kind, op, inputs, attrs, shape, perBatch, dtype, newReplay, value, target);
  }

  /** How this op node runs (null for other nodes). */
  Tracing.Replay replay() {
    return replay;
  }

  /** A copy whose dims scale with a symbolic batch ({@code perBatch}, see {@link #perBatch()}), run by {@code replay}. */
  GraphNode withBatch(List<GraphNode> newInputs, int[] perBatch, Tracing.Replay replay) {
    return new GraphNode(kind, op, newInputs, attrs, shape, perBatch, dtype, replay, value, target);
  }

  /**
   * For a graph with a symbolic batch: per dim, k where the dim is k times the batch size (printed {@code kB}),
   * 0 where it is fixed; null when no dim scales.
   */
  public int[] perBatch() {
    return perBatch == null ? null : perBatch.clone();
  }

  public Kind kind() {
    return kind;
  }

  /** The op definition's name for an op node; "input", "parameter" or "constant" otherwise. */
  public String op() {
    return op;
  }

  /** The inputs, in the op's order; an entry is null for an absent optional input. */
  public List<GraphNode> inputs() {
    return java.util.Collections.unmodifiableList(inputs);
  }

  /** The op's non-tensor arguments by name, in the op's order (for printing and for comparing two nodes). */
  public Map<String, Object> attrs() {
    return attrs;
  }

  /** Attribute {@code name}, or null. */
  public Object attr(String name) {
    return attrs.get(name);
  }

  public int[] shape() {
    return shape.clone();
  }

  /** The shape itself, not a copy (the graph's run reads it on every call). */
  int[] shapeRef() {
    return shape;
  }

  /** {@link #perBatch()} itself, not a copy. */
  int[] perBatchRef() {
    return perBatch;
  }

  public DType dtype() {
    return dtype;
  }

  /** The tensor of a parameter or constant node, null otherwise. */
  public Tensor value() {
    return value;
  }

  /** The parameter's dotted name, or the input's position; null for other nodes. */
  public String target() {
    return target;
  }

  /** The name the graph prints, e.g. {@code %linear_3}. */
  public String name() {
    return name;
  }

  /** Runs this op node on its inputs' values. */
  Tensor run(Tensor[] in) {
    return replay.run(in);
  }

  /**
   * Whether two runs on the same inputs may differ (random ops) or the op writes a tensor besides its output (a
   * training batch norm updates its running statistics): never merged or folded by passes.
   */
  public boolean isRandom() {
    if (kind != Kind.OP) return false;
    if (op.equals("batch_norm")) return Boolean.TRUE.equals(attrs.get("training"));
    if (op.endsWith("_")) return true; // an in-place op (relu_, add_, copy_) writes its input
    if (op.equals("dropout") || op.equals("dropout1d") || op.equals("dropout2d") || op.equals("alpha_dropout")) {
      return Boolean.TRUE.equals(attrs.get("training")) && ((Double) attrs.get("p")) > 0;
    }
    if (op.equals("scaled_dot_product_attention")) return ((Double) attrs.get("dropout_p")) > 0;
    return false;
  }

  /** The type as printed: {@code f32[32, 784]}. */
  public String type() {
    String d = dtype.name().toLowerCase(java.util.Locale.ROOT);
    if (perBatch == null) return d + Arrays.toString(shape);
    java.util.StringJoiner j = new java.util.StringJoiner(", ", d + "[", "]");
    for (int i = 0; i < shape.length; i++) {
      j.add(perBatch[i] == 0 ? Integer.toString(shape[i]) : perBatch[i] == 1 ? "B" : perBatch[i] + "B");
    }
    return j.toString();
  }

  static String attrString(Object a) {
    if (a instanceof int[] v) return Arrays.toString(v);
    return String.valueOf(a);
  }

  @Override
  public String toString() {
    return "%" + name + " : " + type();
  }
}
