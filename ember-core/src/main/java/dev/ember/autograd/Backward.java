package dev.ember.autograd;

import dev.ember.tensor.Tensor;

/**
 * The gradient rule of one op: given the op's context and the gradient of its output, the
 * gradients of its inputs (null for inputs that take none). Written with tensor ops, so it runs
 * on every backend.
 */
@FunctionalInterface
public interface Backward {
  Tensor[] apply(Ctx ctx, Tensor grad);
}
