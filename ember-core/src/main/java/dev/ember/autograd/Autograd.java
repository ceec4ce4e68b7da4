package dev.ember.autograd;

import dev.ember.tensor.Check;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/** Records the graph during the forward and runs the reverse pass. */
public final class Autograd {
  private Autograd() {}

  /**
   * Records {@code out} as produced by op {@code name} from {@code inputs}, if recording is on and
   * any input requires grad (PyTorch's rule: the output requires grad iff an input does). Returns
   * {@code out}.
   */
  public static Tensor record(String name, Tensor out, Backward backward, Tensor[] inputs, Object... extras) {
    if (!Grad.enabled()) return out;
    Tensor[] edges = null;
    for (int i = 0; i < inputs.length; i++) {
      Tensor t = inputs[i];
      if (t != null && t.requiresGrad()) {
        if (edges == null) edges = new Tensor[inputs.length];
        edges[i] = t;
      }
    }
    if (edges == null) return out;
    Ctx ctx = new Ctx(name, inputs, out, extras);
    out.setGradFn(new Node(name, backward, ctx, edges));
    return out;
  }

  public static Tensor record(String name, Tensor out, Backward backward, Tensor a) {
    return record(name, out, backward, new Tensor[] {a});
  }

  /**
   * Back-propagates {@code grad} (the gradient of some scalar with respect to {@code root}) to every
   * leaf that requires grad, accumulating into their {@code grad()}. Runs without recording.
   */
  public static void backward(Tensor root, Tensor grad, boolean retainGraph) {
    if (!root.requiresGrad()) {
      throw new IllegalStateException("backward: tensor " + Arrays.toString(root.shape())
          + " does not require grad and has no grad_fn; hint: create leaves with requiresGrad(true)"
          + " and do not compute under Grad.off()");
    }
    if (!Arrays.equals(root.shape(), grad.shape())) {
      throw Check.fail("backward", "gradient shape differs from the tensor's", "tensor", root, "grad", grad);
    }
    try (Grad ignored = Grad.off()) {
      run(root, grad, retainGraph);
    }
  }

  private static void run(Tensor root, Tensor grad, boolean retainGraph) {
    Node rootNode = root.gradFn();
    Adoption adoption = new Adoption(grad);
    if (rootNode == null) { // a leaf: adoption stays off (allowed is false), so the caller's tensor is copied
      accumulate(root, applyHooks(root, grad), adoption);
      return;
    }
    try {
      propagate(rootNode, root, grad, retainGraph, adoption);
    } finally {
      adoption.borrowed.clear();
    }
  }

  private static void propagate(Node rootNode, Tensor root, Tensor grad, boolean retainGraph, Adoption adoption) {
    List<Node> order = topologicalOrder(rootNode);
    adoption.allowed = root.gradHooks().isEmpty() && noHooks(order);
    // Inside a MemoryScope (and without hooks, which may keep what they see) the pass gets a scope of its
    // own: a gradient is handed back to the pool as soon as no pending input and no leaf holds its buffer,
    // so the pass reuses it instead of holding every gradient of the step until the step's scope closes.
    Recycler recycler = adoption.allowed && MemoryScope.active() ? new Recycler(MemoryScope.open(), adoption) : null;
    try {
      propagate(order, rootNode, root, grad, retainGraph, adoption, recycler);
      if (recycler != null) recycler.keepLeafGrads();
    } finally {
      if (recycler != null) recycler.pass.close();
    }
  }

  private static void propagate(List<Node> order, Node rootNode, Tensor root, Tensor grad, boolean retainGraph,
      Adoption adoption, Recycler recycler) {
    Map<Node, Tensor> pending = new IdentityHashMap<>();
    Map<Node, Tensor> owners = new IdentityHashMap<>();
    pending.put(rootNode, grad);
    owners.put(rootNode, root);
    for (Node node : order) {
      Tensor g = pending.remove(node);
      if (g == null) continue; // no gradient reached this node (e.g. all paths had null grads)
      if (recycler != null) recycler.unref(g);
      Tensor owner = owners.remove(node);
      if (owner != null) g = applyHooks(owner, g);
      if (node.ctx.released()) {
        throw new IllegalStateException(node.name() + ": trying to backward through the graph a second time"
            + " (its saved tensors were freed after the first backward); hint: call backward(retainGraph=true)"
            + " the first time");
      }
      Tensor[] grads;
      if (recycler == null) {
        grads = node.apply(g);
      } else {
        try (MemoryScope nodeScope = MemoryScope.open()) { // the backward function's temporaries go back at once
          grads = node.apply(g);
          for (Tensor t : grads) if (t != null) nodeScope.keep(t);
        }
      }
      if (!retainGraph) node.ctx.release();
      for (int i = 0; i < node.edges.length; i++) {
        Tensor input = node.edges[i];
        if (input == null || grads[i] == null) continue;
        Tensor gi = grads[i];
        if (!Arrays.equals(gi.shape(), input.shape())) {
          throw new IllegalStateException(node.name() + ": backward produced gradient " + Arrays.toString(gi.shape())
              + " for input " + i + " of shape " + Arrays.toString(input.shape()) + " (internal error)");
        }
        if (gi.dtype() != input.dtype()) {
          if (recycler != null) recycler.dead(gi);
          gi = gi.to(input.dtype());
        }
        Node next = input.gradFn();
        if (next == null) {
          accumulate(input, applyHooks(input, gi), adoption);
          if (recycler != null) {
            recycler.leaves.add(input);
            recycler.dead(gi); // adopted buffers are never released (Adoption.storages)
          }
        } else {
          Tensor prev = pending.get(next);
          Tensor sum = prev == null ? gi : prev.add(gi);
          pending.put(next, sum);
          owners.put(next, input);
          if (recycler != null) {
            recycler.ref(sum);
            if (prev != null) {
              recycler.unref(prev);
              recycler.dead(prev);
              recycler.dead(gi);
            }
          }
        }
      }
      if (recycler != null) {
        recycler.dead(g);
        recycler.releaseDead();
      }
      // The inputs are the graph's activations; a node that can no longer run backward must not
      // keep them reachable from a tensor the caller still holds (the loss of the last step).
      if (!retainGraph) node.releaseEdges();
    }
  }

  /**
   * Counts, per buffer, the pending gradients on it, and hands a gradient made in this pass back to
   * the pool once it is consumed and no pending gradient, leaf or the caller's root gradient shares
   * its buffer (a node's backward may pass its gradient on as it is, or as a view).
   */
  private static final class Recycler {
    final MemoryScope pass;
    final Adoption adoption;
    final IdentityHashMap<Storage, int[]> refs = new IdentityHashMap<>();
    final ArrayList<Tensor> candidates = new ArrayList<>();
    final java.util.Set<Tensor> leaves = java.util.Collections.newSetFromMap(new IdentityHashMap<>());

    Recycler(MemoryScope pass, Adoption adoption) {
      this.pass = pass;
      this.adoption = adoption;
    }

    void ref(Tensor t) {
      refs.computeIfAbsent(t.storage(), k -> new int[1])[0]++;
    }

    void unref(Tensor t) {
      int[] c = refs.get(t.storage());
      if (c != null && --c[0] == 0) refs.remove(t.storage());
    }

    void dead(Tensor t) {
      candidates.add(t);
    }

    void releaseDead() {
      for (Tensor t : candidates) { // releaseNow skips buffers the pass does not own (released ones included)
        Storage st = t.storage();
        if (!refs.containsKey(st) && !adoption.storages.containsKey(st)) pass.releaseNow(t);
      }
      candidates.clear();
    }

    /** A leaf made inside the enclosing scope keeps its gradient as long as that scope (a parameter's escaped already). */
    void keepLeafGrads() {
      for (Tensor leaf : leaves) {
        Tensor gr = leaf.grad();
        if (gr != null && pass.owns(gr)) pass.keep(gr);
      }
    }
  }

  private static Tensor applyHooks(Tensor t, Tensor g) {
    for (var hook : t.gradHooks()) {
      Tensor r = hook.apply(g);
      if (r != null) g = r;
    }
    return g;
  }

  /**
   * Adds {@code g} into {@code leaf.grad()}. A leaf without a gradient adopts {@code g} itself
   * instead of a copy when nothing else can see it: it is contiguous and spans its whole storage,
   * no tensor of the graph has a gradient hook (a hook may keep what it sees), the storage is not the caller's
   * root gradient and no other leaf adopted it. The same tensor may still be pending as the input
   * of a node not yet run (add passes its gradient to both operands), so until the pass ends an
   * adopted gradient is borrowed: a second contribution replaces it by a sum instead of adding in
   * place. After the pass every adopted gradient is the leaf's alone, as a copy would be; the copy
   * it saves is a full pass over every parameter per step.
   */
  private static void accumulate(Tensor leaf, Tensor g, Adoption adoption) {
    Tensor existing = leaf.grad();
    if (existing == null) {
      if (adoption.mayAdopt(g)) {
        leaf.setGrad(g);
        adoption.borrowed.put(leaf, Boolean.TRUE);
      } else {
        leaf.setGrad(g.cloneContiguous());
      }
    } else if (adoption.borrowed.remove(leaf) != null) {
      leaf.setGrad(existing.add(g));
    } else {
      existing.add_(g);
    }
  }

  private static boolean noHooks(List<Node> order) {
    for (Node n : order) {
      for (Tensor t : n.edges) {
        if (t != null && !t.gradHooks().isEmpty()) return false;
      }
    }
    return true;
  }

  /** Per-pass bookkeeping of the gradients leaves adopted without copying (see accumulate). */
  private static final class Adoption {
    final IdentityHashMap<Object, Boolean> storages = new IdentityHashMap<>();
    final IdentityHashMap<Tensor, Boolean> borrowed = new IdentityHashMap<>();
    /** False when any tensor of the graph has a gradient hook: a hook may keep the gradient it sees. */
    boolean allowed;

    Adoption(Tensor rootGrad) {
      storages.put(rootGrad.storage(), Boolean.TRUE);
    }

    boolean mayAdopt(Tensor g) {
      return allowed && g.spansStorage() && storages.put(g.storage(), Boolean.TRUE) == null;
    }
  }

  /** Nodes in an order where every node comes before the nodes it feeds gradients to (iterative DFS). */
  private static List<Node> topologicalOrder(Node root) {
    List<Node> post = new ArrayList<>();
    IdentityHashMap<Node, Boolean> seen = new IdentityHashMap<>();
    ArrayDeque<Object[]> stack = new ArrayDeque<>();
    stack.push(new Object[] {root, 0});
    seen.put(root, true);
    while (!stack.isEmpty()) {
      Object[] top = stack.peek();
      Node n = (Node) top[0];
      int i = (Integer) top[1];
      if (i < n.edges.length) {
        top[1] = i + 1;
        Tensor in = n.edges[i];
        Node child = in == null ? null : in.gradFn();
        if (child != null && seen.put(child, true) == null) stack.push(new Object[] {child, 0});
      } else {
        stack.pop();
        post.add(n);
      }
    }
    java.util.Collections.reverse(post);
    return post;
  }
}
