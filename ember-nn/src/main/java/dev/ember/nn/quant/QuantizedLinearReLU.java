package dev.ember.nn.quant;

import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Tensor;

/**
 * {@link QuantizedLinear} with the ReLU fused into requantization, as {@code torch.ao.nn.intrinsic.quantized.LinearReLU}:
 * the int8 output is clamped below at its zero point (real 0), so there is no pass over the output for the ReLU.
 */
public class QuantizedLinearReLU extends QuantizedLinear {
  public QuantizedLinearReLU(QTensor weight, Tensor bias, QParams input, QParams output) {
    super("QuantizedLinearReLU", weight, bias, input, output, true);
  }
}
