package dev.ember.nn;

import dev.ember.nn.functional.Convolution;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * 1-d convolution over [N, C, L] (or unbatched [C, L]) inputs, as {@code nn.Conv1d}: weight
 * [out, in / groups, k], bias [out]. Padding is a size or "same"/"valid", filled in
 * {@code paddingMode} (zeros, reflect, replicate, circular). Initialised as PyTorch (see
 * {@link ConvBase}). Defaults: stride 1, padding 0, dilation 1, groups 1, bias, zeros.
 */
public class Conv1d extends ConvBase {

  public Conv1d(int inChannels, int outChannels, int kernelSize) {
    this(inChannels, outChannels, kernelSize, 1, 0);
  }

  public Conv1d(int inChannels, int outChannels, int kernelSize, int stride, int padding) {
    this(inChannels, outChannels, kernelSize, stride, padding, 1, 1, true, "zeros", Generator.global());
  }

  /** Every argument, with a numeric padding. */
  public Conv1d(int inChannels, int outChannels, int kernelSize, int stride, int padding, int dilation, int groups,
      boolean bias, String paddingMode, Generator gen) {
    super("Conv1d", inChannels, outChannels, new int[] {kernelSize}, new int[] {stride}, new int[] {padding}, null,
        new int[] {dilation}, new int[1], groups, bias, paddingMode, false, gen);
  }

  /** Every argument, with the padding as "same" or "valid". */
  public Conv1d(int inChannels, int outChannels, int kernelSize, int stride, String padding, int dilation, int groups,
      boolean bias, String paddingMode, Generator gen) {
    super("Conv1d", inChannels, outChannels, new int[] {kernelSize}, new int[] {stride}, null, padding,
        new int[] {dilation}, new int[1], groups, bias, paddingMode, false, gen);
  }

  @Override
  public Tensor forward(Tensor x) {
    if (paddingString != null) {
      return Convolution.conv1d(x, weight(), bias(), stride[0], paddingString, dilation[0], groups, paddingMode);
    }
    return Convolution.conv1d(x, weight(), bias(), stride[0], padding[0], dilation[0], groups, paddingMode);
  }
}
