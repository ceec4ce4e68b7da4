package dev.ember.compile;

import java.util.Arrays;
import java.util.IdentityHashMap;

/**
 * For a training step's joint graph: a {@code relu_backward(g, x)} whose x also feeds a {@code relu(x)} of the graph
 * reads that relu's output instead ({@code relu(x) > 0} exactly where {@code x > 0}, NaN included, so the gradient
 * has the same bits). The backward then keeps the activation the next layer reads anyway instead of the
 * pre-activation as well, so {@link Rematerialization} has nothing to recompute, and the pre-activation's only
 * reader is the relu: {@link EpilogueFusion} folds it into its {@code linear} (one pass fewer forward, and the
 * recomputed relu in the backward gone). On the mlp_mnist step at batch 32: 14 ops after the passes, 12 with it.
 */
public final class ReluGradFromOutput implements Pass {
  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, GraphNode> reluOf = new IdentityHashMap<>(); // x -> the first relu(x)
    for (GraphNode n : g.nodes()) {
      if (n.kind() != GraphNode.Kind.OP) continue;
      if (n.op().equals("relu") && n.inputs.size() == 1) {
        GraphNode x = n.inputs.get(0);
        if (x != null && sameType(n, x)) reluOf.putIfAbsent(x, n);
      } else if (n.op().equals("relu_backward") && n.inputs.size() == 2) {
        GraphNode r = reluOf.get(n.inputs.get(1));
        if (r != null && sameType(r, n)) n.inputs.set(1, r);
      }
    }
    return g;
  }

  private static boolean sameType(GraphNode a, GraphNode b) {
    return a.dtype() == b.dtype() && Arrays.equals(a.shapeRef(), b.shapeRef());
  }
}
