package dev.ember.compile;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/** Removes the nodes no output depends on (input nodes stay: they are the graph's signature). */
public final class DeadCodeElimination implements Pass {
  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, Boolean> live = new IdentityHashMap<>();
    for (GraphNode o : g.outputs()) live.put(o, Boolean.TRUE);
    List<GraphNode> nodes = g.nodes();
    for (int i = nodes.size() - 1; i >= 0; i--) {
      GraphNode n = nodes.get(i);
      if (!live.containsKey(n)) continue;
      for (GraphNode in : n.inputs) if (in != null) live.put(in, Boolean.TRUE);
    }
    List<GraphNode> kept = new ArrayList<>();
    for (GraphNode n : nodes) if (live.containsKey(n) || n.kind() == GraphNode.Kind.INPUT) kept.add(n);
    return new Graph(kept, g.inputs(), g.outputs());
  }
}
