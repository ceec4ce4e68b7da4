package dev.ember.compile;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * One graph for every batch size, from two traces at batch sizes b1 != b2: the graphs must be the same but for
 * dims that are the same multiple of the batch in both (k * b1 and k * b2). Such a dim becomes symbolic; a
 * reshape, view or expand whose target scales in exactly one dim gets -1 there (the size is inferred at run time).
 * Every other op runs as traced: its attributes, all its non-tensor arguments, are the same in both traces, so they
 * do not depend on the batch. A constant whose shape or value depends on the batch (the count a mean over the
 * batch divides by), or a dim that changes otherwise, makes the graphs not generalize.
 */
final class BatchGeneralization {
  private BatchGeneralization() {}

  /** Why two traces do not generalize. */
  static final class NotGeneric extends Exception {
    NotGeneric(String reason) {
      super(reason, null, false, false);
    }
  }

  static Graph generalize(Graph g1, int b1, Graph g2, int b2) throws NotGeneric {
    List<GraphNode> n1 = g1.nodes();
    List<GraphNode> n2 = g2.nodes();
    if (n1.size() != n2.size()) throw new NotGeneric("the traces have " + n1.size() + " and " + n2.size() + " nodes");
    List<GraphNode> out = new ArrayList<>();
    for (int i = 0; i < n1.size(); i++) {
      GraphNode a = n1.get(i);
      GraphNode b = n2.get(i);
      if (a.kind() != b.kind() || !a.op().equals(b.op()) || a.inputs.size() != b.inputs.size()) {
        throw new NotGeneric("node " + i + " is " + a.op() + " in one trace and " + b.op() + " in the other");
      }
      List<GraphNode> ins = new ArrayList<>();
      for (int k = 0; k < a.inputs.size(); k++) {
        GraphNode x = a.inputs.get(k);
        GraphNode y = b.inputs.get(k);
        if ((x == null) != (y == null) || (x != null && x.slot != y.slot)) {
          throw new NotGeneric("node " + i + " (" + a.op() + ") reads other nodes in the two traces");
        }
        ins.add(x == null ? null : out.get(x.slot));
      }
      int[] s1 = a.shape();
      int[] s2 = b.shape();
      if (s1.length != s2.length) throw new NotGeneric(a.op() + " has rank " + s1.length + " and " + s2.length);
      int[] perBatch = new int[s1.length];
      boolean scales = false;
      for (int d = 0; d < s1.length; d++) {
        if (s1[d] == s2[d]) continue;
        if (s1[d] % b1 != 0 || s2[d] % b2 != 0 || s1[d] / b1 != s2[d] / b2) {
          throw new NotGeneric(a.op() + " dim " + d + " is " + s1[d] + " at batch " + b1 + " and " + s2[d]
              + " at batch " + b2);
        }
        perBatch[d] = s1[d] / b1;
        scales = true;
      }
      if (scales && (a.kind() == GraphNode.Kind.CONSTANT || a.kind() == GraphNode.Kind.PARAMETER)) {
        throw new NotGeneric("a constant's shape depends on the batch size (" + Arrays.toString(s1) + ", "
            + Arrays.toString(s2) + ")");
      }
      if (a.kind() == GraphNode.Kind.CONSTANT && (a.dtype() != b.dtype()
          || !Arrays.equals(a.value().toDoubleArray(), b.value().toDoubleArray()))) {
        throw new NotGeneric("a constant's value depends on the batch size (" + a.type() + ")");
      }
      if (a.kind() == GraphNode.Kind.PARAMETER && !Objects.equals(a.target(), b.target())) {
        throw new NotGeneric("node " + i + " is parameter " + a.target() + " and " + b.target());
      }
      boolean shaped = a.op().equals("reshape") || a.op().equals("view") || a.op().equals("expand");
      if (!shaped && !sameAttrs(a, b)) {
        throw new NotGeneric(a.op() + " has attributes " + a.attrs() + " and " + b.attrs());
      }
      GraphNode c;
      if (!scales) {
        c = a.withInputs(ins);
      } else if (shaped) {
        int scaled = 0;
        for (int k : perBatch) if (k != 0) scaled++;
        if (scaled != 1) throw new NotGeneric(a.op() + " to " + Arrays.toString(s1) + ": more than one dim scales");
        int[] target = s1.clone();
        for (int d = 0; d < target.length; d++) if (perBatch[d] != 0) target[d] = -1;
        c = a.withBatch(ins, perBatch, switch (a.op()) {
          case "reshape" -> t -> t[0].reshape(target);
          case "view" -> t -> t[0].view(target);
          default -> t -> t[0].expand(target);
        });
      } else {
        c = a.withBatch(ins, perBatch, a::run);
      }
      out.add(c);
    }
    List<GraphNode> inputs = new ArrayList<>();
    for (GraphNode in : g1.inputs()) inputs.add(out.get(in.slot));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g1.outputs()) outs.add(out.get(o.slot));
    return new Graph(out, inputs, outs);
  }

  private static boolean sameAttrs(GraphNode a, GraphNode b) {
    if (!a.attrs().keySet().equals(b.attrs().keySet())) return false;
    for (String k : a.attrs().keySet()) {
      Object x = a.attr(k);
      Object y = b.attr(k);
      if (!(x instanceof int[] u && y instanceof int[] v ? Arrays.equals(u, v) : Objects.equals(x, y))) return false;
    }
    return true;
  }
}
