package dev.ember.compile;

import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * A traced forward (or a training step's forward and backward): its nodes in an order where each node comes after
 * its inputs, its input nodes, and the nodes whose values it returns (one for a forward; the loss and the gradients
 * for a {@link TrainingStep}'s joint graph). Graphs are immutable for their users: {@link Pass passes} return new
 * ones. {@link #run} evaluates the nodes in order, each op through its own entry point, so the same kernels run as
 * in eager mode.
 */
public final class Graph {
  private final List<GraphNode> nodes;
  private final List<GraphNode> inputs;
  private final List<GraphNode> outputs;

  /**
   * A graph of {@code nodes} (each after its inputs; every input node among them) returning {@code output}.
   *
   * @throws IllegalArgumentException if a node reads a node not before it, or the output is not a node
   */
  public Graph(List<GraphNode> nodes, List<GraphNode> inputs, GraphNode output) {
    this(nodes, inputs, List.of(output));
  }

  /**
   * A graph of {@code nodes} (each after its inputs; every input node among them) returning {@code outputs} (at
   * least one; a node may be returned more than once).
   *
   * @throws IllegalArgumentException if a node reads a node not before it, or an output is not a node
   */
  public Graph(List<GraphNode> nodes, List<GraphNode> inputs, List<GraphNode> outputs) {
    this.nodes = List.copyOf(nodes);
    this.inputs = List.copyOf(inputs);
    this.outputs = List.copyOf(outputs);
    if (this.outputs.isEmpty()) throw new IllegalArgumentException("Graph: no outputs");
    IdentityHashMap<GraphNode, Boolean> seen = new IdentityHashMap<>();
    Map<String, Integer> used = new java.util.HashMap<>();
    int slot = 0;
    for (GraphNode n : this.nodes) {
      for (GraphNode in : n.inputs) {
        if (in != null && !seen.containsKey(in)) {
          throw new IllegalArgumentException("Graph: node " + n.op() + " reads a node that does not come before it");
        }
      }
      if (seen.put(n, Boolean.TRUE) != null) throw new IllegalArgumentException("Graph: node " + n.op() + " twice");
      n.slot = slot++;
      String base = switch (n.kind()) {
        case INPUT -> "x" + n.target();
        case PARAMETER -> n.target().replace('.', '_');
        case CONSTANT -> "const";
        case OP -> n.op();
      };
      int k = used.merge(base, 1, Integer::sum);
      n.name = n.kind() == GraphNode.Kind.INPUT || n.kind() == GraphNode.Kind.PARAMETER ? base : base + "_" + (k - 1);
    }
    for (GraphNode in : this.inputs) {
      if (!seen.containsKey(in)) throw new IllegalArgumentException("Graph: input " + in.target() + " is not a node");
    }
    for (GraphNode out : this.outputs) {
      if (!seen.containsKey(out)) throw new IllegalArgumentException("Graph: an output is not a node");
    }
  }

  /** All nodes, each after its inputs. */
  public List<GraphNode> nodes() {
    return nodes;
  }

  /** The input nodes, by position. */
  public List<GraphNode> inputs() {
    return inputs;
  }

  /**
   * The node whose value a one-output graph returns.
   *
   * @throws IllegalStateException for a graph of several outputs (see {@link #outputs()})
   */
  public GraphNode output() {
    if (outputs.size() != 1) {
      throw new IllegalStateException("Graph.output(): the graph has " + outputs.size() + " outputs; use outputs()");
    }
    return outputs.get(0);
  }

  /** The nodes whose values the graph returns, in order. */
  public List<GraphNode> outputs() {
    return outputs;
  }

  /** A graph of the same nodes and inputs returning {@code newOutputs} (nodes of this graph) instead. */
  Graph withOutputs(List<GraphNode> newOutputs) {
    return new Graph(nodes, inputs, newOutputs);
  }

  /** Number of op nodes: the kernels the graph launches (before fusion, one per op). */
  public int opCount() {
    int k = 0;
    for (GraphNode n : nodes) if (n.kind() == GraphNode.Kind.OP) k++;
    return k;
  }

  /**
   * Runs the graph on {@code args} (one per input node): each op node through its entry point, in order. The
   * autograd tape records the ops as in eager mode, so a loss computed from the result can be differentiated.
   *
   * @throws dev.ember.tensor.TensorArgumentException if the number of arguments, or a shape or dtype, differs
   *     from the traced inputs'
   */
  public Tensor run(Tensor... args) {
    if (outputs.size() != 1) {
      throw new IllegalStateException("Graph.run: the graph has " + outputs.size() + " outputs; use runAll");
    }
    return runAll(args)[0];
  }

  /**
   * Runs the graph as {@link #run} does and returns the value of each output, in order.
   *
   * @throws dev.ember.tensor.TensorArgumentException if the number of arguments, or a shape or dtype, differs
   *     from the traced inputs'
   */
  public Tensor[] runAll(Tensor... args) {
    return runTimed(null, args);
  }

  /** {@link #runAll}, adding each op node's nanoseconds to {@code nanos[slot]} when nanos is not null. */
  Tensor[] runTimed(long[] nanos, Tensor... args) {
    checkArgs(args);
    Tensor[] env = new Tensor[nodes.size()];
    for (int i = 0; i < args.length; i++) env[inputs.get(i).slot] = args[i];
    for (GraphNode n : nodes) {
      switch (n.kind()) {
        case INPUT -> { }
        case PARAMETER, CONSTANT -> env[n.slot] = n.value();
        case OP -> {
          Tensor[] in = new Tensor[n.inputs.size()];
          for (int i = 0; i < in.length; i++) {
            GraphNode src = n.inputs.get(i);
            in[i] = src == null ? null : env[src.slot];
          }
          if (nanos == null) {
            env[n.slot] = n.run(in);
          } else {
            long t0 = System.nanoTime();
            env[n.slot] = n.run(in);
            nanos[n.slot] += System.nanoTime() - t0;
          }
        }
      }
    }
    Tensor[] out = new Tensor[outputs.size()];
    for (int i = 0; i < out.length; i++) out[i] = env[outputs.get(i).slot];
    return out;
  }

  /**
   * Checks {@code args} against the input nodes: their number, and each one's dtype and shape.
   *
   * @throws dev.ember.tensor.TensorArgumentException naming the first argument that does not fit
   */
  void checkArgs(Tensor[] args) {
    if (args.length != inputs.size()) {
      throw Check.fail("Graph.run", "expected " + inputs.size() + " inputs, got " + args.length);
    }
    for (int i = 0; i < args.length; i++) {
      GraphNode in = inputs.get(i);
      if (!fits(args[i], in)) {
        throw Check.fail("Graph.run", "input " + i + " must be " + in.type(), "input", args[i]);
      }
    }
  }

  /** Whether tensor t fits input node {@code in}: its dtype, its shape (any size in a symbolic batch dim). */
  private static boolean fits(Tensor t, GraphNode in) {
    int[] s = t.shapeRef();
    int[] want = in.shapeRef();
    int[] perBatch = in.perBatchRef();
    if (t.dtype() != in.dtype() || s.length != want.length) return false;
    for (int d = 0; d < s.length; d++) {
      if (s[d] != want[d] && (perBatch == null || perBatch[d] == 0)) return false;
    }
    return true;
  }

  /**
   * The graph as text, one line per node as torch.fx prints it, e.g.
   * {@code %linear_0 : f32[32, 128] = linear(%reshape_0, %1_weight, %1_bias)}, then {@code return %...}.
   */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    for (GraphNode n : nodes) {
      sb.append('%').append(n.name).append(" : ").append(n.type()).append(" = ");
      switch (n.kind()) {
        case INPUT -> sb.append("input(").append(n.target()).append(')');
        case PARAMETER -> sb.append("parameter(").append(n.target()).append(')');
        case CONSTANT -> sb.append("constant").append(n.value().numel() == 1 ? "(" + n.value().cpu().item() + ")" : "");
        case OP -> {
          StringJoiner args = new StringJoiner(", ", n.op() + "(", ")");
          for (GraphNode in : n.inputs) args.add(in == null ? "None" : "%" + in.name);
          n.attrs().forEach((k, v) -> args.add(k + "=" + GraphNode.attrString(v)));
          sb.append(args);
        }
      }
      sb.append('\n');
    }
    if (outputs.size() == 1) return sb.append("return %").append(outputs.get(0).name).append('\n').toString();
    StringJoiner ret = new StringJoiner(", ", "return (", ")\n");
    for (GraphNode o : outputs) ret.add("%" + o.name);
    return sb.append(ret).toString();
  }

  /** Each node's readers: the nodes that take it as an input, in node order (once per input slot that reads it). */
  IdentityHashMap<GraphNode, List<GraphNode>> readers() {
    IdentityHashMap<GraphNode, List<GraphNode>> readers = new IdentityHashMap<>();
    for (GraphNode n : nodes) {
      for (GraphNode in : n.inputs) if (in != null) readers.computeIfAbsent(in, k -> new ArrayList<>()).add(n);
    }
    return readers;
  }

  /** A copy with fresh nodes (same ops, attributes, parameters and constants), for a pass to rewrite. */
  Graph copy() {
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : nodes) {
      List<GraphNode> ins = new ArrayList<>();
      for (GraphNode in : n.inputs) ins.add(in == null ? null : map.get(in));
      GraphNode c = n.withInputs(ins);
      map.put(n, c);
      out.add(c);
    }
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : inputs) ins.add(map.get(in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : outputs) outs.add(map.get(o));
    return new Graph(out, ins, outs);
  }
}
