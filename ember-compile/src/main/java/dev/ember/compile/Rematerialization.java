package dev.ember.compile;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * For a training step's joint graph (its first output the loss, every forward node before the loss node, the
 * backward after it): a cheap elementwise result of the forward that the backward reads is computed again, right
 * before its first backward reader, from its input when that input is kept for the backward anyway (read after
 * the loss too) or always there (a parameter, an input or a constant). The forward's value then dies in the
 * forward, and the step keeps one tensor fewer from forward to backward (a ReLU's output: the linear before it is
 * what its backward reads). The op runs again on the same input, so the values are the same bits. A graph whose
 * loss is not a node before some of its readers is left as it is.
 */
public final class Rematerialization implements Pass {
  /** Elementwise ops of one input, a pass each, deterministic: what is recomputed. */
  static final Set<String> CHEAP = Set.of("relu", "leaky_relu", "sigmoid", "tanh", "gelu", "gelu_tanh", "silu",
      "neg", "abs", "exp", "square", "elu", "softplus", "mish", "hardswish", "hardsigmoid");

  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    List<GraphNode> nodes = g.nodes();
    int loss = nodes.indexOf(g.outputs().get(0));
    if (loss < 0) return g;
    IdentityHashMap<GraphNode, Boolean> readLate = new IdentityHashMap<>(); // read by a node after the loss
    for (int i = loss + 1; i < nodes.size(); i++) {
      for (GraphNode in : nodes.get(i).inputs) if (in != null) readLate.put(in, Boolean.TRUE);
    }
    for (GraphNode o : g.outputs()) if (o != g.outputs().get(0)) readLate.put(o, Boolean.TRUE);
    // the recomputed copy of each forward node, inserted before the node of that index
    IdentityHashMap<GraphNode, GraphNode> copy = new IdentityHashMap<>();
    java.util.Map<Integer, List<GraphNode>> insert = new java.util.HashMap<>();
    for (int i = 0; i < loss; i++) {
      GraphNode e = nodes.get(i);
      if (e.kind() != GraphNode.Kind.OP || !CHEAP.contains(e.op()) || e.isRandom() || e.inputs.size() != 1
          || !readLate.containsKey(e) || isOutput(g, e)) continue;
      GraphNode x = e.inputs.get(0);
      boolean kept = x != null && (x.kind() != GraphNode.Kind.OP || readLate.containsKey(x));
      if (!kept) continue;
      int first = -1;
      for (int k = loss + 1; k < nodes.size() && first < 0; k++) if (nodes.get(k).inputs.contains(e)) first = k;
      if (first < 0) continue;
      GraphNode c = e.withInputs(List.of(x));
      copy.put(e, c);
      insert.computeIfAbsent(first, k -> new ArrayList<>()).add(c);
    }
    if (copy.isEmpty()) return g;
    List<GraphNode> out = new ArrayList<>();
    for (int i = 0; i < nodes.size(); i++) {
      List<GraphNode> add = insert.get(i);
      if (add != null) out.addAll(add);
      GraphNode n = nodes.get(i);
      if (i > loss) {
        for (int k = 0; k < n.inputs.size(); k++) {
          GraphNode r = copy.get(n.inputs.get(k));
          if (r != null) n.inputs.set(k, r);
        }
      }
      out.add(n);
    }
    return new Graph(out, g.inputs(), g.outputs());
  }

  private static boolean isOutput(Graph g, GraphNode n) {
    for (GraphNode o : g.outputs()) if (o == n) return true;
    return false;
  }

  /**
   * Bytes of the forward values a joint graph keeps for its backward: the distinct op and input nodes before the
   * loss that a node after it reads, at their dtype's size. An {@code attention_core} that its backward reads keeps
   * more in its autograd node: its inputs (the projections) and the probabilities [H, N, L, S] and scaled q its rule
   * reads, counted too.
   */
  static long keptBytes(Graph g) {
    List<GraphNode> nodes = g.nodes();
    int loss = nodes.indexOf(g.outputs().get(0));
    if (loss < 0) return 0;
    IdentityHashMap<GraphNode, Boolean> kept = new IdentityHashMap<>();
    for (int i = loss + 1; i < nodes.size(); i++) {
      for (GraphNode in : nodes.get(i).inputs) {
        if (in != null && in.kind() == GraphNode.Kind.OP && nodes.indexOf(in) < loss) kept.put(in, Boolean.TRUE);
      }
    }
    long bytes = 0;
    for (GraphNode n : new ArrayList<>(kept.keySet())) {
      if (!n.op().equals("attention_core")) continue;
      for (GraphNode in : n.inputs) if (in != null && in.kind() == GraphNode.Kind.OP) kept.put(in, Boolean.TRUE);
      boolean batchFirst = Boolean.TRUE.equals(n.attr("batch_first"));
      int[] q = n.shapeRef();
      int s = n.inputs.size() == 2 ? q[batchFirst ? 1 : 0] : n.inputs.get(1).shapeRef()[batchFirst ? 1 : 0];
      bytes += ((long) (Integer) n.attr("heads") * q[0] * q[1] * s + numel(n)) * n.dtype().itemSize();
    }
    for (GraphNode n : kept.keySet()) bytes += numel(n) * n.dtype().itemSize();
    return bytes;
  }

  private static long numel(GraphNode n) {
    long numel = 1;
    for (int d : n.shapeRef()) numel *= d;
    return numel;
  }
}
