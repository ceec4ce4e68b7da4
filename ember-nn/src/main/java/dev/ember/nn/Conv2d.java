package dev.ember.nn;

import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * 2-d convolution over [N, C, H, W] (or unbatched [C, H, W]) inputs, as {@code nn.Conv2d}: weight
 * [out, in / groups, kH, kW], bias [out]. Padding is per-side sizes or "same"/"valid", filled in
 * {@code paddingMode} (zeros, reflect, replicate, circular). Initialised as PyTorch (see
 * {@link ConvBase}). Defaults: stride 1, padding 0, dilation 1, groups 1, bias, zeros.
 */
public class Conv2d extends ConvBase {

  public Conv2d(int inChannels, int outChannels, int kernelSize) {
    this(inChannels, outChannels, kernelSize, 1, 0);
  }

  public Conv2d(int inChannels, int outChannels, int kernelSize, int stride, int padding) {
    this(inChannels, outChannels, new int[] {kernelSize, kernelSize}, new int[] {stride, stride},
        new int[] {padding, padding}, new int[] {1, 1}, 1, true, "zeros", Generator.global());
  }

  /** Every argument, with the padding as (height, width) sizes. */
  public Conv2d(int inChannels, int outChannels, int[] kernelSize, int[] stride, int[] padding, int[] dilation,
      int groups, boolean bias, String paddingMode, Generator gen) {
    super("Conv2d", inChannels, outChannels, kernelSize, stride, padding, null, dilation, new int[2], groups, bias,
        paddingMode, false, gen);
  }

  /** Every argument, with the padding as "same" or "valid". */
  public Conv2d(int inChannels, int outChannels, int[] kernelSize, int[] stride, String padding, int[] dilation,
      int groups, boolean bias, String paddingMode, Generator gen) {
    super("Conv2d", inChannels, outChannels, kernelSize, stride, null, padding, dilation, new int[2], groups, bias,
        paddingMode, false, gen);
  }

  @Override
  public Tensor forward(Tensor x) {
    if (paddingString != null) {
      return Convolution.conv2d(x, weight(), bias(), stride, paddingString, dilation, groups, paddingMode);
    }
    return Convolution.conv2d(x, weight(), bias(), stride, padding, dilation, groups, paddingMode);
  }
}
