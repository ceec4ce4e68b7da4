package dev.ember.nn;

import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Tensor;

/**
 * A Conv2d followed by ReLU as one module, as PyTorch's {@code nn.intrinsic.ConvReLU2d}: the result of
 * {@link Fuse#fuse}. The convolution is child "0", so its parameters read {@code 0.weight}, {@code 0.bias}.
 * Without the tape the ReLU runs in the convolution kernel's output epilogue
 * ({@link Convolution#conv2dRelu}: no pass over the output, no second tensor); with it, conv then relu as
 * two recorded ops. Forward hooks on the inner Conv2d do not run (it is not called); hooks on this module do.
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
    if (conv.paddingString != null) {
      return Convolution.conv2dRelu(x, conv.weight(), conv.bias(), conv.stride, conv.paddingString, conv.dilation,
          conv.groups, conv.paddingMode);
    }
    return Convolution.conv2dRelu(x, conv.weight(), conv.bias(), conv.stride, conv.padding, conv.dilation, conv.groups,
        conv.paddingMode);
  }
}
