package dev.ember.autograd;

import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * The memory policy of one backward pass, which {@link GraphWalk} calls at fixed points. This base policy decides
 * only whether a leaf may adopt a gradient instead of a copy; {@link Recycling} also hands each gradient made in
 * the pass back to the pool as soon as nothing holds its buffer.
 */
class GradMemory implements AutoCloseable {
  /** Storages adopted by a leaf in this pass, and the caller's root gradient's: none may be adopted (again). */
  private final IdentityHashMap<Object, Boolean> storages = new IdentityHashMap<>();
  /** False when any tensor of the graph has a gradient hook: a hook may keep the gradient it sees. */
  private final boolean adoption;

  private GradMemory(Tensor rootGrad, boolean adoption) {
    storages.put(rootGrad.storage(), Boolean.TRUE);
    this.adoption = adoption;
  }

  /** Leaves get copies of their gradients (a root that is a leaf itself, or a graph with gradient hooks). */
  static GradMemory copying(Tensor rootGrad) {
    return new GradMemory(rootGrad, false);
  }

  /**
   * The policy of a pass from a root gradient over a graph with or without gradient hooks: copies with hooks;
   * adoption without; inside a {@link MemoryScope} (and without hooks, which may keep what they see) also a scope
   * of the pass's own, so that a gradient is handed back to the pool as soon as no pending input and no leaf holds
   * its buffer, and the pass reuses it instead of holding every gradient of the step until the step's scope closes.
   */
  static GradMemory forPass(Tensor rootGrad, boolean hooks) {
    if (hooks) return copying(rootGrad);
    return MemoryScope.active() ? new Recycling(rootGrad) : new GradMemory(rootGrad, true);
  }

  /**
   * Whether a leaf without a gradient may take {@code g} itself: nothing else can see it (it is contiguous and
   * spans its whole storage, no tensor of the graph has a gradient hook, the storage is not the caller's root
   * gradient and no other leaf adopted it). A yes records the storage as adopted.
   */
  boolean mayAdopt(Tensor g) {
    return adoption && g.spansStorage() && storages.put(g.storage(), Boolean.TRUE) == null;
  }

  /** Whether a leaf adopted {@code s} in this pass (or it is the root gradient's). */
  final boolean adopted(Storage s) {
    return storages.containsKey(s);
  }

  /**
   * {@code g} is the gradient of a boundary tensor of a {@link GraphWalk#capture} pass, returned to its caller:
   * never handed back to the pool by this pass, nor adopted by a leaf.
   */
  void captured(Tensor g) {
    storages.put(g.storage(), Boolean.TRUE);
  }

  /** Runs {@code node}'s backward on its gradient {@code g}. */
  Tensor[] apply(Node node, Tensor g) {
    return node.apply(g);
  }

  /** {@code g}, pending for a node, was taken to run that node. */
  void taken(Tensor g) {}

  /** {@code g} was replaced by a copy in another dtype. */
  void dropped(Tensor g) {}

  /** {@code g} was accumulated into {@code leaf}'s gradient. */
  void accumulated(Tensor leaf, Tensor g) {}

  /** {@code sum} is now pending for a node: {@code prev} (null if none) plus {@code g}, or {@code g} alone. */
  void pending(Tensor sum, Tensor prev, Tensor g) {}

  /** The node that took {@code g} has handed its gradients on. */
  void nodeDone(Tensor g) {}

  /** Every node has run. */
  void passDone() {}

  /** Ends the pass, whether it completed or threw. */
  @Override
  public void close() {}

  /**
   * Counts, per buffer, the pending gradients on it, and hands a gradient made in this pass back to
   * the pool once it is consumed and no pending gradient, leaf or the caller's root gradient shares
   * its buffer (a node's backward may pass its gradient on as it is, or as a view).
   */
  private static final class Recycling extends GradMemory {
    final MemoryScope pass = MemoryScope.open();
    final IdentityHashMap<Storage, int[]> refs = new IdentityHashMap<>();
    final ArrayList<Tensor> candidates = new ArrayList<>();
    final Set<Tensor> leaves = Collections.newSetFromMap(new IdentityHashMap<>());
    final ArrayList<Tensor> captured = new ArrayList<>();

    Recycling(Tensor rootGrad) {
      super(rootGrad, true);
    }

    @Override
    Tensor[] apply(Node node, Tensor g) {
      try (MemoryScope nodeScope = MemoryScope.open()) { // the backward function's temporaries go back at once
        Tensor[] grads = node.apply(g);
        for (Tensor t : grads) if (t != null) nodeScope.keep(t);
        return grads;
      }
    }

    @Override
    void taken(Tensor g) {
      unref(g);
    }

    @Override
    void dropped(Tensor g) {
      candidates.add(g);
    }

    @Override
    void captured(Tensor g) {
      super.captured(g);
      captured.add(g);
    }

    @Override
    void accumulated(Tensor leaf, Tensor g) {
      leaves.add(leaf);
      candidates.add(g); // adopted buffers are never released (see adopted)
    }

    @Override
    void pending(Tensor sum, Tensor prev, Tensor g) {
      ref(sum);
      if (prev != null) {
        unref(prev);
        candidates.add(prev);
        candidates.add(g);
      }
    }

    @Override
    void nodeDone(Tensor g) {
      candidates.add(g);
      for (Tensor t : candidates) { // releaseNow skips buffers the pass does not own (released ones included)
        Storage st = t.storage();
        if (!refs.containsKey(st) && !adopted(st)) pass.releaseNow(t);
      }
      candidates.clear();
    }

    /**
     * A leaf made inside the enclosing scope keeps its gradient as long as that scope (a parameter's escaped
     * already).
     */
    @Override
    void passDone() {
      for (Tensor leaf : leaves) {
        Tensor gr = leaf.grad();
        if (gr != null && pass.owns(gr)) pass.keep(gr);
      }
      for (Tensor g : captured) if (pass.owns(g)) pass.keep(g);
    }

    @Override
    public void close() {
      pass.close();
    }

    private void ref(Tensor t) {
      refs.computeIfAbsent(t.storage(), k -> new int[1])[0]++;
    }

    private void unref(Tensor t) {
      int[] c = refs.get(t.storage());
      if (c != null && --c[0] == 0) refs.remove(t.storage());
    }
  }
}
