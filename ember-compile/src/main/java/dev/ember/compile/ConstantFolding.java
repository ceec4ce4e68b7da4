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
  Node rewrite(Node n, List<Node> emitted) {
    if (n.kind() != Node.Kind.OP || n.isRandom()) return n;
    Tensor[] in = new Tensor[n.inputs.size()];
    boolean any = false;
    for (int i = 0; i < in.length; i++) {
      Node src = n.inputs.get(i);
      if (src == null) continue;
      if (src.kind() != Node.Kind.CONSTANT) return n;
      in[i] = src.value();
      any = true;
    }
    if (!any) return n;
    try (Grad off = Grad.off()) {
      return Node.constant(n.run(in));
    }
  }
}
