package dev.ember.compile;

import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.Tensor;

/**
 * A joint graph's weight gradient g^T x (an {@code mm_tn} node: g [m, out], x [m, in], float32 on the CPU) handed
 * to the optimizer {@linkplain Deferred deferred} by {@link TrainingStep#step(Tensor, Tensor,
 * dev.ember.optim.Optimizer)}: an optimizer that consumes it in blocks updates each block of rows while the GEMM
 * has just left it in cache, so the gradient is never written whole and read back. Unlike eager's deferred
 * gradients, g and x are the graph's own values, alive until the step ends: nothing is copied, which is what made
 * deferral cost more than it saved below 4 MB weights in eager mode. Any other read computes the product whole. Both
 * give the bits of the node ({@code mm(g^T, x)}): the same GEMM, and {@code matmulRows} hands over sgemm's rows.
 */
final class GraphWeightGrad {
  private GraphWeightGrad() {}

  /** The deferred g^T x for the node's arguments {@code in} = (g, x), as a contiguous [out, in] tensor. */
  static Tensor of(Tensor[] in) {
    return LinalgOps.deferredWeightGrad(in[0], in[1], false);
  }

  /** Whether a node's value can be handed over this way: a float32 g^T x of 2-d CPU tensors, within int range. */
  static boolean applies(GraphNode node) {
    if (node.kind() != GraphNode.Kind.OP || !node.op().equals("mm_tn")
        || node.dtype() != dev.ember.tensor.DType.F32 || node.shapeRef().length != 2) {
      return false;
    }
    for (GraphNode in : node.inputs) {
      if (in == null || in.dtype() != dev.ember.tensor.DType.F32 || in.shapeRef().length != 2) return false;
    }
    return (long) node.shapeRef()[0] * node.shapeRef()[1] <= Integer.MAX_VALUE;
  }
}
