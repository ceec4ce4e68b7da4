package dev.ember.autograd;

import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The reverse pass over a recorded graph: the nodes in topological order, each node's incoming gradients summed,
 * gradient hooks applied, and leaves' gradients accumulated. A leaf's hooks, as a node's, run once on the total of
 * the pass (see {@link #hookedLeaves}). What becomes of the gradients' memory (adopted by a leaf or copied, handed
 * back to the pool once consumed) is its {@link GradMemory}'s business, called at fixed points of the walk.
 */
final class GraphWalk {
  private final GradMemory memory;
  private final boolean retainGraph;
  /**
   * Leaves whose gradient is a tensor of this pass they adopted (the value: that tensor): a second contribution
   * replaces it by a sum.
   */
  private final IdentityHashMap<Tensor, Tensor> borrowed = new IdentityHashMap<>();
  /**
   * Every gradient adopted by a pass still running, on any thread: another pass on a shared leaf (threads running
   * backward on one model, as PyTorch allows) sums onto it out of place, since the pass that lent it may still read
   * it as a node's pending input.
   */
  private static final java.util.Set<Tensor> LENT = java.util.Collections.newSetFromMap(
      new java.util.concurrent.ConcurrentHashMap<>());
  /** For {@link #capture}: the tensors whose gradients are collected (by slot) instead of passed on; else null. */
  private final Map<Tensor, Integer> boundary;
  private final Tensor[] captured;
  /**
   * For a {@link #capture} pass given the scope that owns the recomputed activations: per buffer of that scope, how
   * many nodes still to run hold it; null otherwise.
   */
  private IdentityHashMap<Storage, int[]> holders;
  private MemoryScope activations;
  /**
   * For a pass in which leaves have gradient hooks, per such leaf: its contributions summed in the order they
   * arrive, and the edges to it still to run. When the last has run, the hooks run once on the sum, which is then
   * accumulated (as PyTorch's AccumulateGrad node). Null when no leaf of the pass has a hook: each contribution is
   * then accumulated as it arrives, an order (and bits) the sums of a hooked leaf do not change for the others.
   */
  private IdentityHashMap<Tensor, LeafTotal> hookedLeaves;

  private static final class LeafTotal {
    int edgesLeft;
    Tensor sum;
  }

  private GraphWalk(GradMemory memory, boolean retainGraph) {
    this(memory, retainGraph, null, null);
  }

  private GraphWalk(GradMemory memory, boolean retainGraph, Map<Tensor, Integer> boundary, Tensor[] captured) {
    this.memory = memory;
    this.retainGraph = retainGraph;
    this.boundary = boundary;
    this.captured = captured;
  }

  /** Back-propagates {@code grad} from {@code root} (recording is off). */
  static void run(Tensor root, Tensor grad, boolean retainGraph) {
    Node rootNode = root.gradFn();
    if (rootNode == null) { // a leaf: nothing may be adopted, so the caller's tensor is copied
      new GraphWalk(GradMemory.copying(grad), retainGraph).accumulate(root, applyHooks(root, grad));
      postAccumulate(root);
      return;
    }
    Order order = topologicalOrder(rootNode);
    boolean hooks = !root.gradHooks().isEmpty() || !noHooks(order.nodes);
    try (GradMemory memory = GradMemory.forPass(grad, hooks)) {
      GraphWalk walk = new GraphWalk(memory, retainGraph);
      if (hooks) walk.countHookedLeaves(order.nodes);
      try {
        walk.propagate(order, rootNode, root, grad);
      } finally {
        walk.returnLent();
      }
    }
  }

  /**
   * Back-propagates {@code grad} from {@code root} (recording is off) down to the {@code boundary} tensors and no
   * further: the gradient of boundary tensor {@code t} is returned in slot {@code boundary.get(t)} (null if none
   * reached it; the contributions summed in the order they arrive), not accumulated, not passed to its producer
   * and without its hooks, which the enclosing pass applies. The nodes run are released. How a checkpoint's
   * backward differentiates its recomputed segment.
   */
  static Tensor[] capture(Tensor root, Tensor grad, Map<Tensor, Integer> boundary, int slots) {
    return capture(root, grad, boundary, slots, null);
  }

  /**
   * {@link #capture(Tensor, Tensor, Map, int)}, handing each buffer of {@code activations} (the scope the graph was
   * recorded in; null: none) that the graph's nodes hold back to the pool once the last node holding it has run and
   * no gradient of the pass is on it: the recomputed segment's activations go as the backward consumes them.
   * Nothing else may use those buffers afterwards (the root included).
   */
  static Tensor[] capture(Tensor root, Tensor grad, Map<Tensor, Integer> boundary, int slots,
      MemoryScope activations) {
    Tensor[] captured = new Tensor[slots];
    Node rootNode = root.gradFn();
    Integer slot = boundary.get(root);
    if (slot != null) {
      captured[slot] = grad;
    } else if (rootNode != null) {
      List<Node> beyond = new ArrayList<>(); // the producers of the boundary tensors: not to be entered
      for (Tensor t : boundary.keySet()) if (t.gradFn() != null) beyond.add(t.gradFn());
      Order order = topologicalOrder(rootNode, beyond);
      boolean hooks = !noHooks(order.nodes);
      try (GradMemory memory = GradMemory.forPass(grad, hooks)) {
        GraphWalk walk = new GraphWalk(memory, false, boundary, captured);
        if (hooks) walk.countHookedLeaves(order.nodes);
        if (activations != null) walk.countHolders(order.nodes, activations);
        try {
          walk.propagate(order, rootNode, root, grad);
        } finally {
          walk.returnLent();
        }
      }
    }
    return captured;
  }

  /**
   * The pass proper. A node's pending gradient and the tensor whose hooks it gets ({@code owners}) live in arrays
   * indexed by the node's slot in {@code order} (not in identity maps: their probe loops, inlined at each use, made
   * this method's C2 code three times the size, issue #40).
   */
  private void propagate(Order order, Node rootNode, Tensor root, Tensor grad) {
    Node[] nodes = order.nodes;
    Tensor[] pending = new Tensor[order.slots];
    Tensor[] owners = new Tensor[order.slots];
    pending[0] = grad; // the root is first in the order
    owners[0] = root;
    for (int at = 0; at < nodes.length; at++) {
      Node node = nodes[at];
      Tensor g = pending[at];
      if (g == null) { // no gradient reached this node (e.g. all paths had null grads)
        if (hookedLeaves != null) leafEdgesRun(node);
        continue;
      }
      pending[at] = null;
      memory.taken(g);
      Tensor owner = owners[at];
      owners[at] = null;
      if (owner != null) g = applyHooks(owner, g);
      if (node.ctx.released()) {
        throw new IllegalStateException(node.name() + ": trying to backward through the graph a second time"
            + " (its saved tensors were freed after the first backward); hint: call backward(retainGraph=true)"
            + " the first time");
      }
      List<Tensor> held = holders == null ? null : heldBuffers(node);
      Tensor[] grads = memory.apply(node, g);
      int[] slots = order.next[at];
      if (Tracing.active()) Tracing.backward(node.name(), node.ctx.rawOutput(), g, node.edges, grads);
      if (!retainGraph) node.ctx.release();
      for (int i = 0; i < node.edges.length; i++) {
        Tensor input = node.edges[i];
        if (input == null || grads[i] == null) continue;
        if (boundary != null && capture(node, i, input, grads[i])) continue;
        Tensor gi = grads[i];
        if (!Arrays.equals(gi.shape(), input.shape())) {
          throw new IllegalStateException(node.name() + ": backward produced gradient " + Arrays.toString(gi.shape())
              + " for input " + i + " of shape " + Arrays.toString(input.shape()) + " (internal error)");
        }
        if (gi.dtype() != input.dtype()) {
          memory.dropped(gi);
          gi = gi.to(input.dtype());
        }
        Node next = node.next[i];
        if (next == null) {
          LeafTotal total = hookedLeaves == null ? null : hookedLeaves.get(input);
          if (total != null) {
            total.sum = total.sum == null ? gi : total.sum.add(gi);
          } else {
            accumulate(input, gi);
            memory.accumulated(input, gi);
            postAccumulate(input);
          }
        } else {
          int slot = slots[i];
          Tensor prev = pending[slot];
          Tensor sum = prev == null ? gi : prev.add(gi);
          pending[slot] = sum;
          if (input.gradFn() == next) owners[slot] = input; // hooks see the tensor's current history only
          memory.pending(sum, prev, gi);
        }
      }
      if (hookedLeaves != null) leafEdgesRun(node);
      memory.nodeDone(g);
      if (held != null) releaseHeld(held, pending);
      // The inputs are the graph's activations; a node that can no longer run backward must not
      // keep them reachable from a tensor the caller still holds (the loss of the last step).
      if (!retainGraph) node.releaseEdges();
    }
    memory.passDone();
  }

  /**
   * For a {@link #capture} pass: if {@code input} (edge {@code i} of {@code node}, which gave it {@code g}) is a
   * boundary tensor, adds {@code g} (in the tensor's dtype) to its slot and says so.
   */
  private boolean capture(Node node, int i, Tensor input, Tensor g) {
    Integer slot = boundary.get(input);
    if (slot == null) return false;
    if (!Arrays.equals(g.shape(), input.shape())) {
      throw new IllegalStateException(node.name() + ": backward produced gradient " + Arrays.toString(g.shape())
          + " for input " + i + " of shape " + Arrays.toString(input.shape()) + " (internal error)");
    }
    if (g.dtype() != input.dtype()) {
      memory.dropped(g);
      g = g.to(input.dtype());
    }
    captured[slot] = captured[slot] == null ? g : captured[slot].add(g);
    memory.captured(captured[slot]);
    return true;
  }

  /**
   * Counts, for {@link #hookedLeaves}, the edges of {@code order}'s nodes to each leaf with gradient hooks (a
   * {@link #capture} pass's boundary tensors aside: the enclosing pass applies their hooks).
   */
  private void countHookedLeaves(Node[] order) {
    IdentityHashMap<Tensor, LeafTotal> leaves = new IdentityHashMap<>();
    for (Node n : order) {
      for (int i = 0; i < n.edges.length; i++) {
        Tensor t = n.edges[i];
        if (t == null || n.next[i] != null || t.gradHooks().isEmpty()) continue;
        if (boundary != null && boundary.containsKey(t)) continue;
        leaves.computeIfAbsent(t, k -> new LeafTotal()).edgesLeft++;
      }
    }
    hookedLeaves = leaves.isEmpty() ? null : leaves;
  }

  /**
   * {@code node} has run (or was skipped, no gradient having reached it): a hooked leaf whose last edge it was gets
   * its total, hooked, accumulated.
   */
  private void leafEdgesRun(Node node) {
    for (int i = 0; i < node.edges.length; i++) {
      Tensor leaf = node.edges[i];
      LeafTotal total = leaf == null || node.next[i] != null ? null : hookedLeaves.get(leaf);
      if (total == null || --total.edgesLeft > 0 || total.sum == null) continue;
      accumulate(leaf, applyHooks(leaf, total.sum));
      memory.accumulated(leaf, total.sum);
      postAccumulate(leaf);
    }
  }

  /** One tensor per buffer of {@link #activations} that {@code node} holds for its backward. */
  private List<Tensor> heldBuffers(Node node) {
    List<Tensor> out = new ArrayList<>();
    IdentityHashMap<Storage, Boolean> seen = new IdentityHashMap<>();
    Ctx ctx = node.ctx;
    if (ctx.released()) return out;
    for (int i = 0; i < ctx.inputCount(); i++) addHeld(ctx.rawInput(i), seen, out);
    addHeld(ctx.rawOutput(), seen, out);
    for (Object e : ctx.rawExtras()) if (e instanceof Tensor t) addHeld(t, seen, out);
    return out;
  }

  private void addHeld(Tensor t, IdentityHashMap<Storage, Boolean> seen, List<Tensor> out) {
    if (t != null && activations.owns(t) && seen.put(t.storage(), Boolean.TRUE) == null) out.add(t);
  }

  private void countHolders(Node[] order, MemoryScope scope) {
    activations = scope;
    holders = new IdentityHashMap<>();
    for (Node n : order) {
      for (Tensor t : heldBuffers(n)) holders.computeIfAbsent(t.storage(), k -> new int[1])[0]++;
    }
  }

  /** {@code node} has run: the buffers only it still held go back to the pool, unless a gradient is on them. */
  private void releaseHeld(List<Tensor> held, Tensor[] pending) {
    for (Tensor t : held) {
      Storage st = t.storage();
      int[] c = holders.get(st);
      if (c == null || --c[0] > 0) continue;
      holders.remove(st);
      boolean inUse = false;
      for (Tensor p : pending) inUse |= p != null && p.storage() == st;
      for (Tensor p : captured) inUse |= p != null && p.storage() == st;
      if (!inUse) activations.releaseNow(t);
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
   * Adds {@code g} into {@code leaf.grad()}. A leaf without a gradient adopts {@code g} itself instead of a copy
   * when the memory policy {@linkplain GradMemory#mayAdopt allows} it. The same tensor may still be pending as the
   * input of a node not yet run (add passes its gradient to both operands), so until the pass ends an adopted
   * gradient is borrowed: a second contribution replaces it by a sum instead of adding in place. After the pass
   * every adopted gradient is the leaf's alone, as a copy would be; the copy it saves is a full pass over every
   * parameter per step.
   */
  private void accumulate(Tensor leaf, Tensor g) {
    synchronized (leaf) { // passes on several threads sharing a leaf: each contribution read-modify-written whole
      Tensor existing = leaf.grad();
      Tensor lent = existing == null ? null : borrowed.remove(leaf);
      if (existing == null) {
        if (memory.mayAdopt(g)) {
          leaf.setGrad(g);
          borrowed.put(leaf, g);
          LENT.add(g);
        } else {
          leaf.setGrad(g.cloneContiguous());
        }
      } else if (lent != null || Tracing.active() || LENT.contains(existing)) { // a traced pass: the sum as an op
        if (lent != null) LENT.remove(lent);
        leaf.setGrad(existing.add(g));
      } else {
        existing.add_(g);
      }
    }
  }

  /** At the end of a pass: what it adopted is its leaves' alone from now on (see {@link #LENT}). */
  private void returnLent() {
    for (Tensor t : borrowed.values()) LENT.remove(t);
    borrowed.clear();
  }

  private static void postAccumulate(Tensor leaf) {
    for (var hook : leaf.postAccumulateGradHooks()) hook.accept(leaf);
  }

  private static boolean noHooks(Node[] order) {
    for (Node n : order) {
      for (Tensor t : n.edges) {
        if (t != null && !t.gradHooks().isEmpty()) return false;
      }
    }
    return true;
  }

  /**
   * A pass's nodes in topological order, and where each node's gradients go: {@code next[at][i]} is the slot of
   * {@code nodes[at].next[i]} (unused where that is null). The nodes' slots are their positions; an excluded node
   * an edge leads to has a slot past them ({@code slots} in all), which collects what would flow into it and is
   * never run, as an identity map's entry for it would be.
   */
  private record Order(Node[] nodes, int[][] next, int slots) {}

  /** A node on the depth-first walk's stack: the next edge to follow, and the slot records of its children. */
  private static final class Frame {
    final Node node;
    final int[] mark;
    final int[][] children;
    int edge;

    Frame(Node node, int[] mark) {
      this.node = node;
      this.mark = mark;
      this.children = new int[node.next.length][];
    }
  }

  /**
   * Nodes in an order where every node comes before the nodes it feeds gradients to (iterative DFS), neither
   * entering the {@code excluded} nodes nor going past them.
   */
  private static Order topologicalOrder(Node root) {
    return topologicalOrder(root, List.of());
  }

  private static Order topologicalOrder(Node root, List<Node> excluded) {
    // per node seen, one int: its index in post order once finished, ON_STACK until then, or for an excluded
    // node EXCLUDED - k (k: its last index in the excluded list; the slots of duplicates' earlier indices unused)
    List<Node> post = new ArrayList<>();
    IdentityHashMap<Node, int[]> seen = new IdentityHashMap<>();
    for (int k = 0; k < excluded.size(); k++) seen.put(excluded.get(k), new int[] {EXCLUDED - k});
    ArrayDeque<Frame> stack = new ArrayDeque<>();
    int[] rootMark = {ON_STACK};
    stack.push(new Frame(root, rootMark));
    seen.put(root, rootMark);
    List<int[][]> childrenByPost = new ArrayList<>();
    while (!stack.isEmpty()) {
      Frame top = stack.peek();
      Node n = top.node;
      int i = top.edge;
      if (i < n.edges.length) {
        top.edge = i + 1;
        Node child = n.next[i];
        if (child != null) {
          int[] mark = seen.get(child); // not putIfAbsent: IdentityHashMap inherits Map's, a get and a put
          if (mark == null) {
            mark = new int[] {ON_STACK};
            seen.put(child, mark);
            stack.push(new Frame(child, mark));
          }
          top.children[i] = mark;
        }
      } else {
        stack.pop();
        top.mark[0] = post.size();
        post.add(n);
        childrenByPost.add(top.children);
      }
    }
    int count = post.size();
    Node[] nodes = new Node[count];
    int[][] next = new int[count][];
    for (int k = 0; k < count; k++) {
      int at = count - 1 - k; // reversed post order
      nodes[at] = post.get(k);
      int[][] children = childrenByPost.get(k);
      int[] slots = new int[children.length];
      for (int i = 0; i < children.length; i++) {
        if (children[i] == null) continue;
        int mark = children[i][0];
        if (mark == ON_STACK) throw new IllegalStateException("autograd graph has a cycle (internal error)");
        slots[i] = mark >= 0 ? count - 1 - mark : count + (EXCLUDED - mark);
      }
      next[at] = slots;
    }
    return new Order(nodes, next, count + excluded.size());
  }

  private static final int ON_STACK = -1;
  private static final int EXCLUDED = -2;
}
