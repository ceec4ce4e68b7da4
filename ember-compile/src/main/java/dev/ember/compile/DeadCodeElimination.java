package dev.ember.compile;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/** Removes the nodes the output does not depend on (input nodes stay: they are the graph's signature). */
public final class DeadCodeElimination implements Pass {
  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, Boolean> live = new IdentityHashMap<>();
    live.put(g.output(), Boolean.TRUE);
    List<GraphNode> nodes = g.nodes();
    for (int i = nodes.size() - 1; i >= 0; i--) {
      GraphNode n = nodes.get(i);
      if (!live.containsKey(n)) continue;
      for (GraphNode in : n.inputs) if (in != null) live.put(in, Boolean.TRUE);
    }
    List<GraphNode> kept = new ArrayList<>();
    for (GraphNode n : nodes) if (live.containsKey(n) || n.kind() == GraphNode.Kind.INPUT) kept.add(n);
    return new Graph(kept, g.inputs(), g.output());
  }
}
