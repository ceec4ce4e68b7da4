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
  private final Map<List<Object>, Node> seen = new HashMap<>();
  private final IdentityHashMap<Object, Node> constants = new IdentityHashMap<>();

  @Override
  Node rewrite(Node n, List<Node> emitted) {
    if (n.kind() == Node.Kind.CONSTANT || n.kind() == Node.Kind.PARAMETER) {
      Node first = constants.putIfAbsent(n.value(), n);
      return first == null ? n : first;
    }
    if (n.isRandom()) return n;
    List<Object> key = new ArrayList<>();
    key.add(n.op());
    for (Node in : n.inputs) key.add(in == null ? null : new Identity(in));
    n.attrs().forEach((k, v) -> {
      key.add(k);
      key.add(v instanceof int[] a ? Arrays.toString(a) : v);
    });
    Node first = seen.putIfAbsent(key, n);
    return first == null ? n : first;
  }

  @Override
  public Graph run(Graph graph) {
    seen.clear();
    constants.clear();
    return super.run(graph);
  }

  /** A node compared by identity inside a key. */
  private record Identity(Node node) {
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
