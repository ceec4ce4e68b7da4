package dev.ember.compile;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * Computes at compile time each op whose inputs are all constants (random ops excepted), replacing it with a
 * constant node. Parameters are not constants (training changes them). Bitwise: the value is what the same entry
 * point computes at run time.
 */
public final class ConstantFolding extends Rewriter {
  @Override
  GraphNode rewrite(GraphNode n, List<GraphNode> emitted) {
    if (n.kind() != GraphNode.Kind.OP || n.isRandom()) return n;
    Tensor[] in = new Tensor[n.inputs.size()];
    boolean any = false;
    for (int i = 0; i < in.length; i++) {
      GraphNode src = n.inputs.get(i);
      if (src == null) continue;
      if (src.kind() != GraphNode.Kind.CONSTANT) return n;
      in[i] = src.value();
      any = true;
    }
    if (!any) return n;
    try (Grad off = Grad.off()) {
      return GraphNode.constant(n.run(in));
    }
  }
}
