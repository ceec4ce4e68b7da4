package dev.ember.nn;

import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * 2-d transposed convolution, as {@code nn.ConvTranspose2d}: weight [in, out / groups, kH, kW],
 * bias [out]; output size {@code (in - 1) * stride - 2 * padding + dilation * (k - 1) +
 * outputPadding + 1}. Initialised as PyTorch, with fan_in = out / groups * kH * kW (computed on the
 * weight's dims, see {@link ConvBase}). Defaults: stride 1, padding 0, output padding 0, groups 1,
 * bias, dilation 1; only zero padding.
 */
public class ConvTranspose2d extends ConvBase {

  public ConvTranspose2d(int inChannels, int outChannels, int kernelSize) {
    this(inChannels, outChannels, kernelSize, 1, 0);
  }

  public ConvTranspose2d(int inChannels, int outChannels, int kernelSize, int stride, int padding) {
    this(inChannels, outChannels, new int[] {kernelSize, kernelSize}, new int[] {stride, stride},
        new int[] {padding, padding}, new int[2], 1, true, new int[] {1, 1}, Generator.global());
  }

  /** Every argument, in PyTorch's order. */
  public ConvTranspose2d(int inChannels, int outChannels, int[] kernelSize, int[] stride, int[] padding,
      int[] outputPadding, int groups, boolean bias, int[] dilation, Generator gen) {
    super("ConvTranspose2d", inChannels, outChannels, kernelSize, stride, padding, null, dilation, outputPadding,
        groups, bias, "zeros", true, gen);
  }

  @Override
  public Tensor forward(Tensor x) {
    return Convolution.convTranspose2d(x, weight(), bias(), stride, padding, outputPadding, groups, dilation);
  }

  /**
   * The forward with the output padding chosen so that the output's spatial size is
   * {@code outputSize} (H, W), as PyTorch's {@code forward(input, output_size)}: each must lie in
   * [smallest, smallest + max(stride, dilation) - 1].
   */
  public Tensor forward(Tensor x, int[] outputSize) {
    if (outputSize.length != 2 || x.dim() < 3) {
      throw Check.fail("ConvTranspose2d", "output_size must have 2 values (H, W) and the input rank 3 or 4",
          "input", x);
    }
    int[] op = new int[2];
    for (int i = 0; i < 2; i++) {
      int in = x.size(x.dim() - 2 + i);
      int min = (in - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernelSize[i] - 1) + 1;
      int max = min + Math.max(stride[i], dilation[i]) - 1;
      if (outputSize[i] < min || outputSize[i] > max) {
        throw Check.fail("ConvTranspose2d", "requested output size " + java.util.Arrays.toString(outputSize)
            + " is outside the valid range [" + min + ", " + max + "] in dim " + i, "input", x);
      }
      op[i] = outputSize[i] - min;
    }
    return Convolution.convTranspose2d(x, weight(), bias(), stride, padding, op, groups, dilation);
  }
}
