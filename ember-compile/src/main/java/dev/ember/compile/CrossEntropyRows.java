package dev.ember.compile;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * For a training step's joint graph: a float32 {@code cross_entropy} of [N, C] logits against class indices (no
 * class weights, no label smoothing, mean or sum) whose gradient the graph takes ({@code cross_entropy_backward})
 * becomes three plain nodes, {@code log_softmax} of the logits, the loss from it ({@code nll_loss}) and the
 * gradient from it ({@code cross_entropy_backward(g, logp, target)}), each a few row loops over [N, C]. The traced
 * op runs the loss on the tape so that the opaque backward node can ask its autograd node for the gradient; here
 * nothing records: no autograd node, no saved-tensor closure, no bookkeeping for an optional weight, a mask or a
 * second device, and the targets are read once per node. On mlp_mnist's [32, 10] logits (1 thread, in the step,
 * fastest of 500 steps on a 2-core host at load 9-10) the pair took 10.2-13 us (6.5-8.3 forward on the tape,
 * 3.4-4.8 backward), the three nodes 7.3-8.5 (log_softmax 3.6-4.2 of it: 320 {@code Math.exp}, eager's kernel).
 *
 * <p>Bitwise: the nodes run eager's fused cross entropy's arithmetic in its order ({@code Losses.crossEntropy}'s
 * common case): the same log-softmax kernel; per row {@code -logp[i, y_i]} (times 0 where the target is
 * {@code ignore_index}) rounded to the dtype, summed by the same reduction and divided by the number of counted
 * targets; the gradient's coefficient {@code g} (times the mask) times {@code 1/counted} by the same tensor ops,
 * {@code exp(logp)} by the same kernel over the whole tensor, each element times its row's coefficient and, at the
 * target, plus its negation, in double and rounded to float as eager's host loop. A target out of range throws
 * eager's {@code cross_entropy} error (the loss node runs the op itself on it).
 */
public final class CrossEntropyRows implements Pass {
  /** Past this many logits eager scales the rows by a broadcast multiply; the node does the same there. */
  private static final int HOST_ROWS_MAX = 4096;

  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, List<GraphNode>> readers = g.readers();
    IdentityHashMap<GraphNode, GraphNode[]> split = new IdentityHashMap<>(); // cross_entropy -> {logp, loss}
    IdentityHashMap<GraphNode, GraphNode> grads = new IdentityHashMap<>(); // its backward -> the gradient node
    for (GraphNode n : g.nodes()) {
      if (!applies(n)) continue;
      List<GraphNode> backward = new ArrayList<>();
      for (GraphNode r : readers.getOrDefault(n, List.of())) {
        if (r.kind() == GraphNode.Kind.OP && r.op().equals("cross_entropy_backward") && r.inputs.size() == 2
            && r.inputs.get(1) == n && r.inputs.get(0) != n && Integer.valueOf(0).equals(r.attr("input"))) {
          backward.add(r);
        }
      }
      if (backward.isEmpty()) continue;
      GraphNode logits = n.inputs.get(0);
      GraphNode target = n.inputs.get(1);
      int ignore = (Integer) n.attr("ignore_index");
      Reduction reduction = (Reduction) n.attr("reduction");
      Map<String, Object> attrs = new LinkedHashMap<>();
      attrs.put("ignore_index", ignore);
      attrs.put("reduction", reduction);
      GraphNode logp = GraphNode.op("log_softmax", List.of(logits), GraphNode.attrs("dim", 1), logits.shapeRef(),
          logits.dtype(), in -> in[0].logSoftmax(1));
      GraphNode loss = GraphNode.op("nll_loss", List.of(logp, target, logits), attrs, n.shapeRef(), n.dtype(),
          in -> loss(in[0], in[1], in[2], ignore, reduction));
      split.put(n, new GraphNode[] {logp, loss});
      for (GraphNode b : backward) {
        grads.put(b, GraphNode.op("cross_entropy_backward", java.util.Arrays.asList(b.inputs.get(0), logp, target,
            logits), attrs, b.shapeRef(), b.dtype(), in -> grad(in[0], in[1], in[2], in[3], ignore, reduction)));
      }
    }
    if (split.isEmpty()) return g;
    IdentityHashMap<GraphNode, GraphNode> map = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : g.nodes()) {
      GraphNode[] parts = split.get(n);
      GraphNode r = parts != null ? parts[1] : grads.getOrDefault(n, n);
      if (parts != null) {
        out.add(parts[0].withInputs(remap(parts[0].inputs, map)));
        map.put(parts[0], out.getLast());
      }
      GraphNode c = r.withInputs(remap(r.inputs, map));
      map.put(n, c);
      map.put(r, c);
      out.add(c);
    }
    List<GraphNode> inputs = remap(g.inputs(), map);
    List<GraphNode> outs = remap(g.outputs(), map);
    return new DeadCodeElimination().run(new Graph(out, inputs, outs));
  }

  private static List<GraphNode> remap(List<GraphNode> nodes, IdentityHashMap<GraphNode, GraphNode> map) {
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode in : nodes) out.add(in == null ? null : map.getOrDefault(in, in));
    return out;
  }

  /** A cross_entropy this pass takes: float32 [N, C] logits, [N] integer targets, no weight, no smoothing. */
  private static boolean applies(GraphNode n) {
    if (n.kind() != GraphNode.Kind.OP || !n.op().equals("cross_entropy") || n.inputs.size() != 3
        || n.inputs.get(2) != null || !(n.attr("ignore_index") instanceof Integer)
        || !(n.attr("reduction") instanceof Reduction r) || r == Reduction.NONE
        || !(n.attr("label_smoothing") instanceof Double s) || s != 0.0) {
      return false;
    }
    GraphNode x = n.inputs.get(0);
    GraphNode y = n.inputs.get(1);
    return x != null && y != null && x.dtype() == DType.F32 && x.shapeRef().length == 2
        && (y.dtype() == DType.I64 || y.dtype() == DType.I32) && y.shapeRef().length == 1
        && y.shapeRef()[0] == x.shapeRef()[0] && n.dtype() == DType.F32 && n.shapeRef().length == 0;
  }

  /** The targets of one call: class indices (0 where ignored), the mask (null when none is ignored), the count. */
  private record Targets(int[] index, Tensor mask, long counted) {}

  /**
   * The targets as eager's cross entropy reads them, or null when one is out of range (the caller then runs the op,
   * which throws its error) or the values are not where the row loops can read them.
   */
  private static Targets targets(Tensor logp, Tensor y, int ignore) {
    if (!logp.device().isCpu() || !logp.isContiguous() || logp.dtype() != DType.F32) return null;
    int classes = logp.shapeRef()[1];
    long[] v = y.toLongArray();
    int[] index = new int[v.length];
    double[] mask = null;
    long counted = 0;
    for (int i = 0; i < v.length; i++) {
      if (v[i] == ignore) {
        if (mask == null) {
          mask = new double[v.length];
          java.util.Arrays.fill(mask, 0, i, 1);
        }
        continue;
      }
      if (v[i] < 0 || v[i] >= classes) return null;
      index[i] = (int) v[i];
      if (mask != null) mask[i] = 1;
      counted++;
    }
    Tensor m = null;
    if (mask != null) {
      m = Tensor.empty(DType.F32, v.length);
      for (int i = 0; i < v.length; i++) m.storage().setDouble(i, mask[i]);
    }
    return new Targets(index, m, counted);
  }

  /** The loss: the mean (or sum) over rows of {@code -logp[i, y_i]}, as eager's cross entropy computes it. */
  static Tensor loss(Tensor logp, Tensor y, Tensor logits, int ignore, Reduction reduction) {
    Targets t = targets(logp, y, ignore);
    if (t == null) {
      try (Grad off = Grad.off()) {
        return F.crossEntropy(logits, y, null, ignore, reduction, 0.0);
      }
    }
    int n = logp.shapeRef()[0];
    int cols = logp.shapeRef()[1];
    float[] lp = logp.storage().floats();
    int lo = logp.offset();
    Tensor per = Tensor.empty(DType.F32, n);
    float[] p = per.storage().floats();
    int po = per.offset();
    float[] m = t.mask() == null ? null : t.mask().storage().floats();
    for (int i = 0; i < n; i++) {
      double v = -(double) lp[lo + i * cols + t.index()[i]];
      p[po + i] = (float) (m == null ? v : v * m[i]);
    }
    Tensor sum = per.sum();
    return reduction == Reduction.SUM ? sum : sum.div((double) t.counted());
  }

  /** The gradient of the loss with respect to the logits: {@code c_i * (exp(logp) - onehot(y_i))}, eager's bits. */
  static Tensor grad(Tensor g, Tensor logp, Tensor y, Tensor logits, int ignore, Reduction reduction) {
    Targets t = targets(logp, y, ignore);
    if (t == null || g.dtype() != DType.F32 || !g.device().isCpu() || g.requiresGrad()) {
      return viaOp(g, logits, y, ignore, reduction);
    }
    double scale = reduction == Reduction.MEAN ? (t.counted() == 0 ? 0 : 1.0 / t.counted()) : 1.0;
    Tensor coef = t.mask() == null ? g : t.mask().mul(g);
    if (scale != 1) coef = coef.mul(scale);
    int n = logp.shapeRef()[0];
    int cols = logp.shapeRef()[1];
    Tensor e = logp.exp();
    double[] c = coef.toDoubleArray();
    float[] es = e.storage().floats();
    int eo = e.offset();
    if ((long) n * cols <= HOST_ROWS_MAX) {
      for (int i = 0; i < n; i++) {
        double ci = c[c.length == 1 ? 0 : i];
        for (int j = 0, k = eo + i * cols; j < cols; j++, k++) es[k] = (float) (es[k] * ci);
      }
    } else {
      e.mul_(coef.dim() == 0 ? coef.reshape(1, 1).expand(n, 1) : coef.reshape(n, 1));
    }
    for (int i = 0; i < n; i++) {
      int k = eo + i * cols + t.index()[i];
      es[k] = (float) (es[k] + -c[c.length == 1 ? 0 : i]);
    }
    return e;
  }

  /**
   * The gradient by eager's op itself, on the tape from the logits (its autograd node's rule, as the traced graph's
   * opaque backward node ran it), for inputs the row loops do not take: another device, dtype or layout.
   */
  private static Tensor viaOp(Tensor g, Tensor logits, Tensor y, int ignore, Reduction reduction) {
    Tensor x = logits.detach().requiresGrad(true);
    try (Grad on = Grad.on()) {
      return Autograd.backwardOf(F.crossEntropy(x, y, null, ignore, reduction, 0.0), g)[0];
    }
  }
}
