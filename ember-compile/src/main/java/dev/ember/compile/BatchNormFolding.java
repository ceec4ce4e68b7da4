package dev.ember.compile;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;

/**
 * Folds an eval-mode {@code batch_norm} into the {@code conv2d} before it, when the batch norm is the convolution's
 * only reader: {@code W' = W * gamma / sqrt(var + eps)} per output channel and {@code b' = (b - mean) * gamma /
 * sqrt(var + eps) + beta} become constants of a single conv2d. One kernel instead of two; the values agree with
 * eager within float rounding (about 1e-6 relative), not bitwise. The folded weights are fixed when the pass runs:
 * for inference (a later change of the parameters or running statistics needs a new compile).
 */
public final class BatchNormFolding implements Pass {
  @Override
  public Graph run(Graph graph) {
    Graph g = graph.copy();
    IdentityHashMap<GraphNode, Integer> readers = new IdentityHashMap<>();
    for (GraphNode n : g.nodes()) for (GraphNode in : n.inputs) if (in != null) readers.merge(in, 1, Integer::sum);
    for (GraphNode o : g.outputs()) readers.merge(o, 1, Integer::sum);
    IdentityHashMap<GraphNode, GraphNode> replaced = new IdentityHashMap<>();
    List<GraphNode> out = new ArrayList<>();
    for (GraphNode n : g.nodes()) {
      List<GraphNode> ins = new ArrayList<>();
      for (GraphNode in : n.inputs) ins.add(in == null ? null : replaced.getOrDefault(in, in));
      GraphNode c = ins.equals(n.inputs) ? n : n.withInputs(ins);
      GraphNode folded = fold(c, readers);
      if (folded != null) {
        out.addAll(folded.inputs.subList(1, 3)); // the new weight and bias constants
        out.add(folded);
        replaced.put(n, folded);
      } else {
        out.add(c);
        if (c != n) replaced.put(n, c);
      }
    }
    List<GraphNode> inputs = new ArrayList<>();
    for (GraphNode in : g.inputs()) inputs.add(replaced.getOrDefault(in, in));
    List<GraphNode> outs = new ArrayList<>();
    for (GraphNode o : g.outputs()) outs.add(replaced.getOrDefault(o, o));
    return new DeadCodeElimination().run(new Graph(out, inputs, outs));
  }

  /** The conv2d that replaces batch norm node {@code bn}, or null if it does not fold. */
  private static GraphNode fold(GraphNode bn, IdentityHashMap<GraphNode, Integer> readers) {
    if (bn.kind() != GraphNode.Kind.OP || !bn.op().equals("batch_norm") || Boolean.TRUE.equals(bn.attr("training"))) {
      return null;
    }
    GraphNode conv = bn.inputs.get(0);
    if (conv.kind() != GraphNode.Kind.OP || !conv.op().equals("conv2d") || conv.attr("activation") != null
        || readers.getOrDefault(conv, 0) != 1) return null;
    GraphNode w = conv.inputs.get(1);
    GraphNode b = conv.inputs.get(2);
    GraphNode mean = bn.inputs.get(1);
    GraphNode var = bn.inputs.get(2);
    if (!isFixed(w) || (b != null && !isFixed(b)) || !isFixed(mean) || !isFixed(var)) return null;
    GraphNode gamma = bn.inputs.get(3);
    GraphNode beta = bn.inputs.get(4);
    if ((gamma != null && !isFixed(gamma)) || (beta != null && !isFixed(beta))) return null;
    double eps = (Double) bn.attr("eps");
    try (Grad off = Grad.off()) {
      Tensor scale = var.value().add(eps).rsqrt();
      if (gamma != null) scale = scale.mul(gamma.value());
      int outC = w.shape()[0];
      Tensor w2 = w.value().mul(scale.reshape(outC, 1, 1, 1)).contiguous();
      Tensor bias = b == null ? mean.value().neg() : b.value().sub(mean.value());
      Tensor b2 = bias.mul(scale);
      if (beta != null) b2 = b2.add(beta.value());
      List<GraphNode> ins = new ArrayList<>(conv.inputs);
      ins.set(1, GraphNode.constant(w2));
      ins.set(2, GraphNode.constant(b2.contiguous()));
      return conv.withInputs(ins);
    }
  }

  private static boolean isFixed(GraphNode n) {
    return n.kind() == GraphNode.Kind.PARAMETER || n.kind() == GraphNode.Kind.CONSTANT;
  }
}
