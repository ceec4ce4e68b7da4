package dev.ember.autograd;

import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayDeque;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * What a recorded graph keeps alive for its backward, for tests that compare memory: the distinct storages its nodes
 * reference (inputs, saved tensors, outputs), less those of the leaves (parameters and inputs, alive anyway).
 */
public final class TapeStorages {
  private final Set<Storage> storages;

  private TapeStorages(Set<Storage> storages) {
    this.storages = storages;
  }

  /** The activation storages of the graph that produced {@code root}. */
  public static TapeStorages of(Tensor root) {
    IdentityHashMap<Storage, Boolean> all = new IdentityHashMap<>();
    IdentityHashMap<Storage, Boolean> leaves = new IdentityHashMap<>();
    IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
    ArrayDeque<Node> stack = new ArrayDeque<>();
    if (root.gradFn() != null) stack.push(root.gradFn());
    all.put(root.storage(), true);
    while (!stack.isEmpty()) {
      Node n = stack.pop();
      if (seen.put(n, true) != null) continue;
      for (int i = 0; i < n.edges.length; i++) {
        Tensor t = n.edges[i];
        if (t == null) continue;
        if (n.next[i] == null) {
          leaves.put(t.storage(), true);
        } else {
          all.put(t.storage(), true);
          stack.push(n.next[i]);
        }
      }
      for (int i = 0; i < n.ctx.inputCount(); i++) {
        Tensor t = n.ctx.rawInput(i);
        if (t != null) all.put(t.storage(), true);
      }
      if (n.ctx.rawOutput() != null) all.put(n.ctx.rawOutput().storage(), true);
    }
    for (Storage s : leaves.keySet()) all.remove(s);
    return new TapeStorages(all.keySet());
  }

  public int count() {
    return storages.size();
  }

  public long bytes() {
    long b = 0;
    for (Storage s : storages) b += (long) s.size() * s.dtype().itemSize();
    return b;
  }
}
