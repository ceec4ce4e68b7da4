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
  abstract Node rewrite(Node n, List<Node> emitted);

  @Override
  public Graph run(Graph graph) {
    IdentityHashMap<Node, Node> map = new IdentityHashMap<>();
    List<Node> out = new ArrayList<>();
    IdentityHashMap<Node, Boolean> emitted = new IdentityHashMap<>();
    for (Node n : graph.nodes()) {
      List<Node> ins = new ArrayList<>();
      for (Node in : n.inputs) ins.add(in == null ? null : map.get(in));
      Node c = n.withInputs(ins);
      Node r = n.kind() == Node.Kind.INPUT ? c : rewrite(c, out);
      if (emitted.put(r, Boolean.TRUE) == null) out.add(r);
      map.put(n, r);
    }
    List<Node> ins = new ArrayList<>();
    for (Node in : graph.inputs()) ins.add(map.get(in));
    return new DeadCodeElimination().run(new Graph(out, ins, map.get(graph.output())));
  }
}
