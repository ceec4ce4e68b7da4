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
 * A traced forward: its nodes in an order where each node comes after its inputs, its input nodes, and the node
 * whose value it returns. Graphs are immutable for their users: {@link Pass passes} return new ones. {@link #run}
 * evaluates the nodes in order, each op through its own entry point, so the same kernels run as in eager mode.
 */
public final class Graph {
  private final List<Node> nodes;
  private final List<Node> inputs;
  private final Node output;

  /**
   * A graph of {@code nodes} (each after its inputs; every input node among them) returning {@code output}.
   *
   * @throws IllegalArgumentException if a node reads a node not before it, or the output is not a node
   */
  public Graph(List<Node> nodes, List<Node> inputs, Node output) {
    this.nodes = List.copyOf(nodes);
    this.inputs = List.copyOf(inputs);
    this.output = output;
    IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
    Map<String, Integer> used = new java.util.HashMap<>();
    int slot = 0;
    for (Node n : this.nodes) {
      for (Node in : n.inputs) {
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
      n.name = n.kind() == Node.Kind.INPUT || n.kind() == Node.Kind.PARAMETER ? base : base + "_" + (k - 1);
    }
    for (Node in : this.inputs) {
      if (!seen.containsKey(in)) throw new IllegalArgumentException("Graph: input " + in.target() + " is not a node");
    }
    if (!seen.containsKey(output)) throw new IllegalArgumentException("Graph: the output is not a node");
  }

  /** All nodes, each after its inputs. */
  public List<Node> nodes() {
    return nodes;
  }

  /** The input nodes, by position. */
  public List<Node> inputs() {
    return inputs;
  }

  public Node output() {
    return output;
  }

  /** Number of op nodes: the kernels the graph launches (before fusion, one per op). */
  public int opCount() {
    int k = 0;
    for (Node n : nodes) if (n.kind() == Node.Kind.OP) k++;
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
    if (args.length != inputs.size()) {
      throw Check.fail("Graph.run", "expected " + inputs.size() + " inputs, got " + args.length);
    }
    Tensor[] env = new Tensor[nodes.size()];
    for (int i = 0; i < args.length; i++) {
      Node in = inputs.get(i);
      if (!fits(args[i], in)) {
        throw Check.fail("Graph.run", "input " + i + " must be " + in.type(), "input", args[i]);
      }
      env[in.slot] = args[i];
    }
    for (Node n : nodes) {
      switch (n.kind()) {
        case INPUT -> { }
        case PARAMETER, CONSTANT -> env[n.slot] = n.value();
        case OP -> {
          Tensor[] in = new Tensor[n.inputs.size()];
          for (int i = 0; i < in.length; i++) {
            Node src = n.inputs.get(i);
            in[i] = src == null ? null : env[src.slot];
          }
          env[n.slot] = n.run(in);
        }
      }
    }
    return env[output.slot];
  }

  /** Whether tensor t fits input node {@code in}: its dtype, its shape (any size in a symbolic batch dim). */
  private static boolean fits(Tensor t, Node in) {
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
    for (Node n : nodes) {
      sb.append('%').append(n.name).append(" : ").append(n.type()).append(" = ");
      switch (n.kind()) {
        case INPUT -> sb.append("input(").append(n.target()).append(')');
        case PARAMETER -> sb.append("parameter(").append(n.target()).append(')');
        case CONSTANT -> sb.append("constant").append(n.value().numel() == 1 ? "(" + n.value().cpu().item() + ")" : "");
        case OP -> {
          StringJoiner args = new StringJoiner(", ", n.op() + "(", ")");
          for (Node in : n.inputs) args.add(in == null ? "None" : "%" + in.name);
          n.attrs().forEach((k, v) -> args.add(k + "=" + Node.attrString(v)));
          sb.append(args);
        }
      }
      sb.append('\n');
    }
    return sb.append("return %").append(output.name).append('\n').toString();
  }

  /** A copy with fresh nodes (same ops, attributes, parameters and constants), for a pass to rewrite. */
  Graph copy() {
    IdentityHashMap<Node, Node> map = new IdentityHashMap<>();
    List<Node> out = new ArrayList<>();
    for (Node n : nodes) {
      List<Node> ins = new ArrayList<>();
      for (Node in : n.inputs) ins.add(in == null ? null : map.get(in));
      Node c = n.withInputs(ins);
      map.put(n, c);
      out.add(c);
    }
    List<Node> ins = new ArrayList<>();
    for (Node in : inputs) ins.add(map.get(in));
    return new Graph(out, ins, map.get(output));
  }
}
