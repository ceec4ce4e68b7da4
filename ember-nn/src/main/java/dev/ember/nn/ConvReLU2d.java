package dev.ember.nn;

import dev.ember.autograd.Grad;
import dev.ember.tensor.Tensor;

/**
 * A Conv2d followed by ReLU as one module, as PyTorch's {@code nn.intrinsic.ConvReLU2d}: the result of
 * {@link Fuse#fuse}. The convolution is child "0", so its parameters read {@code 0.weight}, {@code 0.bias}.
 * Without the tape the ReLU is applied in place to the convolution's fresh output (no second tensor);
 * with it, conv then relu as two recorded ops.
 */
public class ConvReLU2d extends Module {
  private final Conv2d conv;

  public ConvReLU2d(Conv2d conv) {
    this.conv = registerModule("0", conv);
  }

  public Conv2d conv() {
    return conv;
  }

  @Override
  public Tensor forward(Tensor x) {
    Tensor y = conv.call(x);
    return Grad.enabled() ? y.relu() : y.relu_();
  }
}
