package dev.ember.compile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * Computes each distinct expression once: an op node with the same op, the same input nodes and equal attributes as
 * an earlier one is replaced by it (random ops excepted: two dropouts are two draws); parameter nodes of the same
 * name, and constant nodes of the same tensor, become one. Bitwise: the merged nodes ran the same entry point on
 * the same values.
 */
public final class CommonSubexpressionElimination extends Rewriter {
  private final Map<List<Object>, GraphNode> seen = new HashMap<>();
  private final IdentityHashMap<Object, GraphNode> constants = new IdentityHashMap<>();

  @Override
  GraphNode rewrite(GraphNode n, List<GraphNode> emitted) {
    if (n.kind() == GraphNode.Kind.CONSTANT || n.kind() == GraphNode.Kind.PARAMETER) {
      GraphNode first = constants.putIfAbsent(n.value(), n);
      return first == null ? n : first;
    }
    if (n.isRandom()) return n;
    List<Object> key = new ArrayList<>();
    key.add(n.op());
    for (GraphNode in : n.inputs) key.add(in == null ? null : new Identity(in));
    n.attrs().forEach((k, v) -> {
      key.add(k);
      key.add(v instanceof int[] a ? Arrays.toString(a) : v);
    });
    GraphNode first = seen.putIfAbsent(key, n);
    return first == null ? n : first;
  }

  @Override
  public Graph run(Graph graph) {
    seen.clear();
    constants.clear();
    return super.run(graph);
  }

  /** A node compared by identity inside a key. */
  private record Identity(GraphNode node) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Identity i && i.node == node;
    }

    @Override
    public int hashCode() {
      return System.identityHashCode(node);
    }
  }
}
