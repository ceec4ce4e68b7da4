package dev.ember.nn.functional;

import static dev.ember.nn.functional.FixtureRunner.check;
import static dev.ember.nn.functional.FixtureRunner.one;

import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * conv1d, conv2d (stride, padding incl. 'same' with odd and even kernels, dilation, groups,
 * depthwise, 1x1, padding modes, unbatched), conv_transpose2d and the padding modes against PyTorch
 * 1.13: outputs and the input, weight and bias gradients (conv/make_conv_fixtures.py writes the
 * fixtures; the arguments below repeat the script's).
 */
class ConvolutionFixtureTest {
  private static final int[] I1 = {1};
  private static final int[] I0 = {0};

  private static int[] a(int... v) {
    return v;
  }

  @Test
  void conv2dMatchesTorch() {
    check("c2_basic", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"))));
    check("c2_stride_pad", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), a(2, 3),
        a(1, 2), I1, 1)));
    check("c2_dilation", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(1),
        a(2, 1), 1)));
    check("c2_groups", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(1), I1, 2)));
    check("c2_1x1", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"))));
    check("c2_nobias", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), null, a(1, 2), I0, I1, 1)));
    check("c2_unbatched", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(1), I1,
        1)));
  }

  @Test
  void depthwiseConv2dMatchesTorch() {
    check("c2_depthwise", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), a(2), a(1), I1,
        3)));
    check("c2_depthwise_dil", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(2),
        a(2), 4)));
  }

  @Test
  void samePaddingMatchesTorchForOddAndEvenKernels() {
    check("c2_same_odd", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, "same", I1,
        1)));
    check("c2_same_even", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, "same", I1,
        1)));
    check("c2_same_dil", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, "same", a(2),
        1)));
    check("c2_valid", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, "valid", I1,
        1)));
    check("c1_same_even", t -> one(Convolution.conv1d(t.get("input"), t.get("weight"), t.get("bias"), 1, "same", 1,
        1)));
  }

  @Test
  void paddingModesMatchTorch() {
    check("c2_reflect", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(1, 2), I1, 1,
        "reflect")));
    check("c2_replicate", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), a(2), a(2), I1,
        1, "replicate")));
    check("c2_circular", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, a(1, 2), I1,
        1, "circular")));
    check("c2_reflect_same", t -> one(Convolution.conv2d(t.get("input"), t.get("weight"), t.get("bias"), I1, "same",
        I1, 1, "reflect")));
    check("c1_reflect", t -> one(Convolution.conv1d(t.get("input"), t.get("weight"), t.get("bias"), 1, 2, 1, 1,
        "reflect")));
  }

  @Test
  void conv1dMatchesTorch() {
    check("c1_basic", t -> one(Convolution.conv1d(t.get("input"), t.get("weight"), t.get("bias"), 2, 1, 1, 1)));
    check("c1_dil_groups", t -> one(Convolution.conv1d(t.get("input"), t.get("weight"), t.get("bias"), 1, 0, 3, 2)));
    check("c1_depthwise", t -> one(Convolution.conv1d(t.get("input"), t.get("weight"), t.get("bias"), 1, 1, 1, 3)));
  }

  @Test
  void convTranspose2dMatchesTorch() {
    check("ct_basic", t -> one(Convolution.convTranspose2d(t.get("input"), t.get("weight"), t.get("bias"))));
    check("ct_stride", t -> one(Convolution.convTranspose2d(t.get("input"), t.get("weight"), t.get("bias"), a(2),
        a(1), a(1), 1, I1)));
    check("ct_groups", t -> one(Convolution.convTranspose2d(t.get("input"), t.get("weight"), t.get("bias"), a(2, 1),
        a(0, 1), a(1, 0), 2, a(1, 2))));
    check("ct_1x1", t -> one(Convolution.convTranspose2d(t.get("input"), t.get("weight"), t.get("bias"))));
    check("ct_unbatched", t -> one(Convolution.convTranspose2d(t.get("input"), t.get("weight"), t.get("bias"), a(2),
        I0, I0, 1, I1)));
  }

  @Test
  void padModesMatchTorch() {
    for (String mode : new String[] {"constant", "reflect", "replicate", "circular"}) {
      check("pad2_" + mode, t -> one(Padding.pad(t.get("input"), a(2, 1, 1, 3), mode)));
      check("pad1_" + mode, t -> one(Padding.pad(t.get("input"), a(1, 3), mode)));
    }
  }

}
