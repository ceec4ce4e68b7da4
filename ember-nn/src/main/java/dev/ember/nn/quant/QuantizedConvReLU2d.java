package dev.ember.nn.quant;

import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;

/**
 * {@link QuantizedConv2d} with the ReLU fused into requantization, as
 * {@code torch.ao.nn.intrinsic.quantized.ConvReLU2d}: the int8 output is clamped below at its zero point (real 0).
 */
public class QuantizedConvReLU2d extends QuantizedConv2d {
  public QuantizedConvReLU2d(QTensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups,
      QParams input, QParams output) {
    super("QuantizedConvReLU2d", weight, bias, stride, padding, dilation, groups, input, output, true);
  }
}
