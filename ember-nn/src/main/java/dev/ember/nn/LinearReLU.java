package dev.ember.nn;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;

/**
 * A Linear followed by ReLU as one module, as PyTorch's {@code nn.intrinsic.LinearReLU}: the result of
 * {@link Fuse#fuse}. The Linear is child "0", so its parameters read {@code 0.weight}, {@code 0.bias}.
 * Without the tape the ReLU is applied in place to the GEMM's fresh output (no second tensor): the
 * GEMM's epilogue only adds the bias, and a ReLU flag there would widen the matmul SPI every backend
 * implements for one pass over an output that is still in cache. With the tape, linear then relu as two
 * recorded ops.
 */
public class LinearReLU extends Module {
  private final Linear linear;

  public LinearReLU(Linear linear) {
    this.linear = registerModule("0", linear);
  }

  public Linear linear() {
    return linear;
  }

  @Override
  public Tensor forward(Tensor x) {
    Tensor y = linear.call(x);
    return Grad.enabled() ? y.relu() : y.relu_();
  }
}
