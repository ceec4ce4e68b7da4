package dev.ember.compile;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * The walk most passes share: visits a graph's nodes in order, each with its inputs already replaced by what the
 * pass made of them, and lets the pass keep the node, or replace it with another (new or earlier) node.
 */
abstract class Rewriter implements Pass {
  /** What node {@code n} (its inputs already rewritten) becomes: itself, an earlier node, or a new one. */
  abstract GraphNode rewrite(GraphNode n, List<GraphNode> emitted);

  @Override
  public Graph run(Graph graph) {
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    IdentityHashMap<GraphNode, Boolean> emitted = new IdentityHashMap<>();
    for (GraphNode n : graph.nodes()) {
      List<GraphNode> ins = new ArrayList<>();
      for (GraphNode in : n.inputs) ins.add(in == null ? null : map.get(in));
      GraphNode c = n.withInputs(ins);
      GraphNode r = n.kind() == GraphNode.Kind.INPUT ? c : rewrite(c, out);
      if (emitted.put(r, Boolean.TRUE) == null) out.add(r);
      map.put(n, r);
    }
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : graph.inputs()) ins.add(map.get(in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : graph.outputs()) outs.add(map.get(o));
    return new DeadCodeElimination().run(new Graph(out, ins, outs));
  }
}
