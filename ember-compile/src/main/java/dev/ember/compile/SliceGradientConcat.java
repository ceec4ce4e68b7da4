package dev.ember.compile;

import dev.ember.ops.MovementOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * For a training step's joint graph: the gradient of a tensor read as slices that tile it (self-attention's packed
 * q/k/v projection [N, L, 3E], {@code narrow}ed into q, k and v) arrives as a sum of {@code slice_backward} nodes,
 * each a zero tensor of the whole shape with one slice written, added together: k zero fills, k copies and k - 1 adds
 * over the whole tensor. When the slices cover the tensor once each, the pass writes the sum as {@code cat} of the slices'
 * gradients in order, then {@code add} of a zero (one pass each). The bits are the sum's: every element of it is one
 * slice's value plus zeros, which is that value with a negative zero made positive, as {@code + 0} makes it. The
 * narrowed forward values are then no longer read by an opaque backward, so they run without the tape.
 */
public final class SliceGradientConcat implements Pass {
  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, Integer> uses = new IdentityHashMap<>();
    for (GraphNode n : g.nodes()) for (GraphNode in : n.inputs) if (in != null) uses.merge(in, 1, Integer::sum);
    for (GraphNode o : g.outputs()) uses.merge(o, 1, Integer::sum);
    IdentityHashMap<GraphNode, GraphNode[]> replaced = new IdentityHashMap<>(); // a sum's root -> {cat, zero, add}
    for (GraphNode n : g.nodes()) {
      if (!isAdd(n) || partOfLargerSum(n, g, uses)) continue;
      List<GraphNode> leaves = new ArrayList<>();
      collect(n, n, uses, leaves);
      GraphNode[] r = concat(n, leaves, uses);
      if (r != null) replaced.put(n, r);
    }
    if (replaced.isEmpty()) return g;
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : g.nodes()) {
      GraphNode[] r = replaced.get(n);
      GraphNode c;
      if (r != null) {
        for (int i = 0; i < r.length - 1; i++) {
          out.add(copyOf(r[i], map));
          map.put(r[i], out.get(out.size() - 1));
        }
        c = copyOf(r[r.length - 1], map);
      } else {
        c = copyOf(n, map);
      }
      map.put(n, c);
      out.add(c);
    }
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : g.inputs()) ins.add(map.get(in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g.outputs()) outs.add(map.get(o));
    return new DeadCodeElimination().run(new Graph(out, ins, outs));
  }

  private static GraphNode copyOf(GraphNode n, IdentityHashMap<GraphNode, GraphNode> map) {
    List<GraphNode> ins = new ArrayList<>();
    for (GraphNode in : n.inputs) ins.add(in == null ? null : map.getOrDefault(in, in));
    return ins.equals(n.inputs) ? n : n.withInputs(ins);
  }

  private static boolean isAdd(GraphNode n) {
    return n.kind() == GraphNode.Kind.OP && n.op().equals("add") && n.attrs().isEmpty() && n.inputs.size() == 2
        && n.inputs.get(0) != null && n.inputs.get(1) != null && (n.dtype() == DType.F32 || n.dtype() == DType.F64);
  }

  /** Whether n's one reader is an add of the same type: then n is inside a larger sum, handled from its root. */
  private static boolean partOfLargerSum(GraphNode n, Graph g, IdentityHashMap<GraphNode, Integer> uses) {
    if (uses.getOrDefault(n, 0) != 1) return false;
    for (GraphNode m : g.nodes()) {
      if (m.inputs.contains(n)) return isAdd(m) && sameType(m, n);
    }
    return false;
  }

  /** The terms of the sum at {@code n}: adds of its type read only there are opened, anything else is a term. */
  private static void collect(GraphNode n, GraphNode root, IdentityHashMap<GraphNode, Integer> uses,
      List<GraphNode> terms) {
    if (isAdd(n) && sameType(n, root) && (n == root || uses.getOrDefault(n, 0) == 1)) {
      collect(n.inputs.get(0), root, uses, terms);
      collect(n.inputs.get(1), root, uses, terms);
    } else {
      terms.add(n);
    }
  }

  /**
   * The cat, the zero and the add replacing {@code root}, if its terms are slice_backward nodes (read only by the
   * sum) of narrows of one tensor along one dim that cover it once each; else null.
   */
  private static GraphNode[] concat(GraphNode root, List<GraphNode> terms, IdentityHashMap<GraphNode, Integer> uses) {
    if (terms.size() < 2) return null;
    GraphNode base = null;
    int dim = -1;
    Map<Integer, GraphNode> byStart = new java.util.TreeMap<>();
    Map<Integer, Integer> lengths = new java.util.HashMap<>();
    for (GraphNode t : terms) {
      if (t.kind() != GraphNode.Kind.OP || !t.op().equals("slice_backward") || uses.getOrDefault(t, 0) != 1
          || !(t.replay() instanceof Capture.OpaqueReplay o) || o.index() != 0 || t.inputs.size() != 2
          || !sameType(t, root)) {
        return null;
      }
      GraphNode narrow = t.inputs.get(1);
      GraphNode grad = t.inputs.get(0);
      if (narrow == null || grad == null || narrow.kind() != GraphNode.Kind.OP || !narrow.op().equals("narrow")
          || narrow.inputs.size() != 1 || !(narrow.attr("dim") instanceof Number dn)
          || !(narrow.attr("start") instanceof Number sn) || !(narrow.attr("length") instanceof Number ln)
          || grad.dtype() != root.dtype() || !Arrays.equals(grad.shapeRef(), narrow.shapeRef())) {
        return null;
      }
      int d = dn.intValue();
      int start = sn.intValue();
      int length = ln.intValue();
      GraphNode b = narrow.inputs.get(0);
      if (b == null || !Arrays.equals(b.shapeRef(), root.shapeRef()) || (base != null && (b != base || d != dim))) {
        return null;
      }
      base = b;
      dim = d;
      if (byStart.put(start, grad) != null) return null;
      lengths.put(start, length);
    }
    int at = 0; // the slices must tile [0, size) once each
    for (int start : byStart.keySet()) {
      if (start != at) return null;
      at += lengths.get(start);
    }
    if (at != root.shapeRef()[dim]) return null;
    List<GraphNode> parts = new ArrayList<>(byStart.values());
    int catDim = dim;
    GraphNode cat = GraphNode.op("cat", parts, GraphNode.attrs("dim", dim), root.shapeRef(), root.dtype(),
        in -> MovementOps.cat(List.of(in), catDim));
    GraphNode zero = GraphNode.constant(Tensor.zeros(root.dtype(), new int[0]));
    GraphNode add = GraphNode.op("add", List.of(cat, zero), Map.of(), root.shapeRef(), root.dtype(),
        in -> in[0].add(in[1]));
    return new GraphNode[] {cat, zero, add};
  }

  private static boolean sameType(GraphNode a, GraphNode b) {
    return a.dtype() == b.dtype() && Arrays.equals(a.shapeRef(), b.shapeRef());
  }
}
