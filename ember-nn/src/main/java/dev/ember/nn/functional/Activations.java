package dev.ember.nn.functional;

import dev.ember.autograd.Autograd;
import dev.ember.ops.ElementwiseOps;
import dev.ember.tensor.Tensor;

/**
 * Activation functions (PyTorch's torch.nn.functional names and defaults). Those the core defines
 * as ops call them; Hardswish is a composition of differentiable core ops. The {@code inplace} forms (PyTorch's
 * {@code inplace=True}, or the trailing-underscore names) write the result into x and return x; they are recorded
 * for autograd as the core's in-place ops (x must not be a leaf that requires grad, or a view of one).
 */
public final class Activations {
  private Activations() {}

  public static Tensor relu(Tensor x) {
    return x.relu();
  }

  /** F.relu(x, inplace): see {@link Tensor#relu_()}. */
  public static Tensor relu(Tensor x, boolean inplace) {
    return inplace ? x.relu_() : x.relu();
  }

  public static Tensor relu_(Tensor x) {
    return x.relu_();
  }

  public static Tensor leakyRelu(Tensor x, double negativeSlope, boolean inplace) {
    return inplace ? leakyRelu_(x, negativeSlope) : leakyRelu(x, negativeSlope);
  }

  public static Tensor leakyRelu_(Tensor x, double negativeSlope) {
    return ElementwiseOps.leakyRelu_(x, negativeSlope);
  }

  public static Tensor leakyRelu(Tensor x, double negativeSlope) {
    return ElementwiseOps.leakyRelu(x, negativeSlope);
  }

  public static Tensor leakyRelu(Tensor x) {
    return leakyRelu(x, 0.01);
  }

  public static Tensor elu(Tensor x, double alpha) {
    return ElementwiseOps.elu(x, alpha);
  }

  public static Tensor elu(Tensor x, double alpha, boolean inplace) {
    return inplace ? elu_(x, alpha) : elu(x, alpha);
  }

  public static Tensor elu_(Tensor x, double alpha) {
    return ElementwiseOps.elu_(x, alpha);
  }

  public static Tensor elu(Tensor x) {
    return elu(x, 1.0);
  }

  /** Exact GELU (erf form) or, with {@code tanhApproximation}, PyTorch's approximate='tanh'. */
  public static Tensor gelu(Tensor x, boolean tanhApproximation) {
    return ElementwiseOps.gelu(x, tanhApproximation);
  }

  public static Tensor gelu(Tensor x) {
    return gelu(x, false);
  }

  public static Tensor silu(Tensor x) {
    return ElementwiseOps.silu(x);
  }

  public static Tensor silu(Tensor x, boolean inplace) {
    return inplace ? ElementwiseOps.silu_(x) : silu(x);
  }

  /** x * tanh(softplus(x)). */
  public static Tensor mish(Tensor x) {
    return ElementwiseOps.mish(x);
  }

  public static Tensor mish(Tensor x, boolean inplace) {
    return inplace ? ElementwiseOps.mish_(x) : mish(x);
  }

  public static Tensor sigmoid(Tensor x) {
    return x.sigmoid();
  }

  public static Tensor tanh(Tensor x) {
    return x.tanh();
  }

  /** log(1 + exp(beta x)) / beta, and x itself where beta x > threshold (PyTorch: beta 1, threshold 20). */
  public static Tensor softplus(Tensor x, double beta, double threshold) {
    if (!(beta > 0)) throw new IllegalArgumentException("softplus: beta must be > 0, got " + beta);
    Tensor y = ElementwiseOps.softplus(x, beta);
    if (threshold == 20) return y; // the core kernel's own threshold
    return ElementwiseOps.where(x.mul(beta).gt(threshold), x, y);
  }

  public static Tensor softplus(Tensor x) {
    return softplus(x, 1, 20);
  }

  /** x * relu6(x + 3) / 6. */
  public static Tensor hardswish(Tensor x) {
    return x.mul(x.add(3).clamp(0, 6)).div(6);
  }

  public static Tensor hardswish(Tensor x, boolean inplace) {
    return inplace ? hardswish_(x) : hardswish(x);
  }

  /**
   * Hardswish written into x. While recording, the composite reads a copy of x (its backward needs the old
   * values, which the write replaces) and x takes the result by a differentiable {@code copy_}.
   */
  public static Tensor hardswish_(Tensor x) {
    boolean record = Autograd.inPlace("hardswish_", x);
    return x.copy_(hardswish(record ? x.clone() : x));
  }

  public static Tensor softmax(Tensor x, int dim) {
    return x.softmax(dim);
  }

  public static Tensor logSoftmax(Tensor x, int dim) {
    return x.logSoftmax(dim);
  }
}
