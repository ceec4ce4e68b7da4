package dev.ember.compile;

import dev.ember.backend.UnaryOp;
import dev.ember.nn.functional.F;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.DType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Fuses a {@code linear} with the activation that reads it (relu, gelu, gelu tanh, silu, tanh, sigmoid, leaky relu)
 * and/or the residual {@code add} that reads that (the other operand of the output's shape and dtype) into one
 * {@code linear_epilogue} node ({@link LinalgOps#linearEpilogue}): the activation and the add run on each block of
 * the product while it is in cache, in place in the product. Only a value nothing else reads is fused away (the
 * graph's output counts as a reader). Bitwise: the fused op runs the GEMM, the activation's kernel and the add's
 * kernel as eager runs them, and its backward is the activation's rule, then linear's.
 *
 * <p>A {@code conv2d} of more than one input channel per group with the {@code relu} that alone reads it becomes one
 * {@code conv2d} node with {@code activation=relu}: {@code F.conv2dRelu}, the ReLU in the convolution kernel's output
 * epilogue when the tape is off (inference), as eager's {@code conv2dRelu} records under conv2d's name; bitwise
 * conv2d then relu. Not on one input channel: there the epilogue kernel is slower than the two passes. On LeNet-5
 * (fastest of 101 rounds, 1 thread, a loaded 2-core machine) the first convolution (1 input channel) took 546 us fused
 * against 2046 at batch 64 and 11.2 against 8.0 us at batch 1; the second (6 channels) 418 against 489 us at batch 64
 * and 10.9 against 11.4 at batch 1.
 */
public final class EpilogueFusion implements Pass {
  /** The activations by their op name in a graph. */
  private static final Map<String, UnaryOp> ACTIVATIONS = Map.of("relu", UnaryOp.RELU, "gelu", UnaryOp.GELU,
      "gelu_tanh", UnaryOp.GELU_TANH, "silu", UnaryOp.SILU, "tanh", UnaryOp.TANH, "sigmoid", UnaryOp.SIGMOID,
      "leaky_relu", UnaryOp.LEAKY_RELU);

  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, List<GraphNode>> readers = g.readers();
    IdentityHashMap<GraphNode, GraphNode> fused = new IdentityHashMap<>(); // last node of a chain -> its fusion
    for (GraphNode n : g.nodes()) {
      if (n.kind() != GraphNode.Kind.OP || !n.op().equals("linear") || !floating(n)) continue;
      GraphNode last = n;
      GraphNode reader = soleReader(n, g, readers);
      UnaryOp act = null;
      double param = 0;
      if (reader != null && ACTIVATIONS.containsKey(reader.op()) && sameType(reader, n)) {
        act = ACTIVATIONS.get(reader.op());
        Object p = reader.attr("param");
        param = p == null ? 0 : ((Number) p).doubleValue();
        last = reader;
        reader = soleReader(reader, g, readers);
      }
      GraphNode residual = null;
      if (reader != null && reader.op().equals("add") && sameType(reader, last)) {
        GraphNode a = reader.inputs.get(0);
        GraphNode b = reader.inputs.get(1);
        GraphNode other = a == last ? b : a;
        if (other != null && other != last && sameType(other, last)) {
          residual = other;
          last = reader;
        }
      }
      if (last == n) continue;
      UnaryOp activation = act;
      double slope = param;
      Map<String, Object> attrs = new LinkedHashMap<>();
      attrs.put("activation", act == null ? "none" : ACTIVATIONS.entrySet().stream()
          .filter(e -> e.getValue() == activation).findFirst().orElseThrow().getKey());
      if (param != 0) attrs.put("param", param);
      List<GraphNode> ins = new ArrayList<>(n.inputs);
      ins.add(residual);
      fused.put(last, GraphNode.op("linear_epilogue", ins, attrs, last.shapeRef(), last.dtype(),
          in -> LinalgOps.linearEpilogue(in[0], in[1], in[2], activation, slope, in[3])));
    }
    for (GraphNode n : g.nodes()) {
      if (n.kind() != GraphNode.Kind.OP || !n.op().equals("conv2d") || n.dtype() != DType.F32
          || n.attr("activation") != null) {
        continue;
      }
      GraphNode w = n.inputs.get(1);
      if (w == null || w.shapeRef().length != 4 || w.shapeRef()[1] < 2) continue; // one input channel: slower fused
      GraphNode reader = soleReader(n, g, readers);
      if (reader == null || !reader.op().equals("relu") || !sameType(reader, n)) continue;
      GraphNode f = convRelu(n, reader);
      if (f != null) fused.put(reader, f);
    }
    if (fused.isEmpty()) return g;
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : g.nodes()) {
      GraphNode r = fused.getOrDefault(n, n);
      List<GraphNode> ins = new ArrayList<>();
      for (GraphNode in : r.inputs) ins.add(in == null ? null : map.getOrDefault(in, in));
      GraphNode c = ins.equals(r.inputs) ? r : r.withInputs(ins);
      map.put(n, c);
      out.add(c);
    }
    List<GraphNode> inputs = new ArrayList<>();
    for (GraphNode in : g.inputs()) inputs.add(map.getOrDefault(in, in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g.outputs()) outs.add(map.getOrDefault(o, o));
    return new DeadCodeElimination().run(new Graph(out, inputs, outs));
  }

  /**
   * conv2d {@code conv} with {@code relu} in its epilogue ({@code F.conv2dRelu} with conv's geometry, read back from
   * its attributes), or null when an attribute is not as conv2d records it.
   */
  private static GraphNode convRelu(GraphNode conv, GraphNode relu) {
    int[] stride = ints(conv.attr("stride"));
    int[] dilation = ints(conv.attr("dilation"));
    Object padding = conv.attr("padding");
    if (stride == null || dilation == null || !(padding instanceof String pad) || !(conv.attr("groups") instanceof
        Integer groups) || !(conv.attr("padding_mode") instanceof String mode)) {
      return null;
    }
    int[] pads = ints(pad);
    Map<String, Object> attrs = new LinkedHashMap<>(conv.attrs());
    attrs.put("activation", "relu");
    dev.ember.autograd.Tracing.Replay run = pads != null
        ? in -> F.conv2dRelu(in[0], in[1], in[2], stride, pads, dilation, groups, mode)
        : in -> F.conv2dRelu(in[0], in[1], in[2], stride, pad, dilation, groups, mode);
    return GraphNode.op("conv2d", conv.inputs, attrs, relu.shapeRef(), relu.dtype(), run);
  }

  /** An int array written as {@code Arrays.toString} writes it ("[1, 2]"), or null for anything else. */
  private static int[] ints(Object attr) {
    if (!(attr instanceof String s) || !s.startsWith("[") || !s.endsWith("]")) return null;
    String body = s.substring(1, s.length() - 1).trim();
    if (body.isEmpty()) return new int[0];
    String[] parts = body.split(",");
    int[] out = new int[parts.length];
    try {
      for (int i = 0; i < parts.length; i++) out[i] = Integer.parseInt(parts[i].trim());
    } catch (NumberFormatException e) {
      return null;
    }
    return out;
  }

  /** The one node reading n, or null if n is read by several, or none, or is one of the graph's outputs. */
  private static GraphNode soleReader(GraphNode n, Graph g, IdentityHashMap<GraphNode, List<GraphNode>> readers) {
    List<GraphNode> r = readers.get(n);
    if (g.outputs().contains(n) || r == null || r.size() != 1) return null;
    GraphNode reader = r.get(0);
    int uses = 0;
    for (GraphNode in : reader.inputs) if (in == n) uses++;
    return uses == 1 && reader.kind() == GraphNode.Kind.OP ? reader : null;
  }

  private static boolean floating(GraphNode n) {
    return n.dtype() == DType.F32 || n.dtype() == DType.F64;
  }

  private static boolean sameType(GraphNode a, GraphNode b) {
    return a.dtype() == b.dtype() && Arrays.equals(a.shapeRef(), b.shapeRef());
  }
}
