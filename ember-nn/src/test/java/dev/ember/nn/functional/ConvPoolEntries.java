package dev.ember.nn.functional;

import static dev.ember.ops.OpInfo.op;

import dev.ember.ops.OpInfo;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import java.util.List;
import java.util.function.Function;

/**
 * nn op-table entries for convolution, padding, pooling and interpolation. Variants of one op are named
 * {@code op:variant}. Interpolation has no oracle here: its values are checked against PyTorch in
 * PoolingFixtureTest.
 */
final class ConvPoolEntries {
  private ConvPoolEntries() {}

  private static final int[] Z = {0};
  private static final int[] ONE = {1};

  private static int[] a(int... v) {
    return v;
  }

  private static Arr bias(List<Arr> l) {
    return l.size() > 2 ? l.get(2) : null;
  }

  /** A conv2d entry with padding filled in {@code mode}; its oracle pads first, then convolves unpadded. */
  private static OpInfo conv2d(String variant, int[] s, int[] p, int[] d, int groups, String mode, String... shapes) {
    int[] pp = NnRef.pair(p);
    return op("conv2d:" + variant).fn(l -> Convolution.conv2d(l.get(0), l.get(1), l.get(2), s, p, d, groups, mode))
        .ref(l -> mode.equals("zeros")
            ? NnRef.conv2d(l.get(0), l.get(1), bias(l), NnRef.pair(s), a(pp[0], pp[0], pp[1], pp[1]), NnRef.pair(d),
                groups)
            : NnRef.conv2d(NnRef.pad(l.get(0), a(pp[1], pp[1], pp[0], pp[0]), mode, 0), l.get(1), bias(l),
                NnRef.pair(s), a(0, 0, 0, 0), NnRef.pair(d), groups))
        .shapes(shapes);
  }

  private static Arr unsqueeze0(Arr x) {
    int[] s = new int[x.rank() + 1];
    s[0] = 1;
    System.arraycopy(x.shape(), 0, s, 1, x.rank());
    return new Arr(x.data(), s);
  }

  private static Arr squeeze0(Arr x) {
    return new Arr(x.data(), java.util.Arrays.copyOfRange(x.shape(), 1, x.rank()));
  }

  private static Function<List<Arr>, Arr> maxPool(boolean oneD, int[] k, int[] s, int[] p, int[] d, boolean ceil) {
    return l -> NnRef.as4d(l.get(0), oneD, x -> NnRef.pool2d(x, k, s, p, d, ceil, true, false, null));
  }

  private static Function<List<Arr>, Arr> avgPool(boolean oneD, int[] k, int[] s, int[] p, boolean ceil,
      boolean countPad, Integer divisor) {
    return l -> NnRef.as4d(l.get(0), oneD, x -> NnRef.pool2d(x, k, s, p, a(1, 1), ceil, false, countPad, divisor));
  }

  private static Function<List<Arr>, Arr> adaptive(int oh, int ow, boolean max) {
    return l -> NnRef.as4d(l.get(0), false, x -> NnRef.adaptivePool2d(x, oh, ow, max));
  }

  static void add(List<OpInfo> t) {
    // ---------------------------------------------------------------- conv2d
    t.add(op("conv2d").fn(l -> Convolution.conv2d(l.get(0), l.get(1), l.get(2)))
        .ref(l -> NnRef.conv2d(l.get(0), l.get(1), l.get(2), a(1, 1), a(0, 0, 0, 0), a(1, 1), 1))
        .shapes("[2, 3, 5, 4] x [2, 3, 3, 2] x [2]", "[3, 4, 3, 3] x [2, 4, 1, 1] x [2]")
        .error(l -> Convolution.conv2d(l.get(0), l.get(1), null, a(1), a(0), a(1), 2), "[1, 3, 5, 5] x [4, 2, 3, 3]",
            "conv2d: input channels (3) must equal weight.size(1) * groups (2 * 2 = 4): input=[1, 3, 5, 5], "
                + "weight=[4, 2, 3, 3]")
        .error(l -> Convolution.conv2d(l.get(0), l.get(1), null, a(1), a(1), a(1), 1), "[1, 1, 2, 2] x [1, 1, 5, 5]",
            "conv2d: kernel size (dilated) [5, 5] is larger than the padded input [4, 4]: input=[1, 1, 2, 2], "
                + "weight=[1, 1, 5, 5]")
        .error("[1, 1, 3, 3] x [2, 1, 1, 1] x [3]",
            "conv2d: bias must have out_channels = 2 elements: input=[1, 1, 3, 3], weight=[2, 1, 1, 1], bias=[3]")
        .error(l -> Convolution.conv2d(l.get(0), l.get(1), null), "[3, 5] x [1, 3, 1, 1]",
            "conv2d: expected a 3-d (unbatched) or 4-d (batched) input, got rank 2: input=[3, 5], "
                + "weight=[1, 3, 1, 1]"));
    t.add(conv2d("stride_pad", a(2, 3), a(1, 2), a(1), 1, "zeros", "[2, 2, 6, 7] x [3, 2, 3, 3] x [3]"));
    t.add(conv2d("dilation", a(1), a(1), a(2, 3), 1, "zeros", "[1, 2, 7, 6] x [2, 2, 2, 3] x [2]"));
    t.add(conv2d("groups", a(1, 2), a(1), a(1), 2, "zeros", "[2, 4, 5, 5] x [6, 2, 3, 3] x [6]")
        .error(l -> Convolution.conv2d(l.get(0), l.get(1), null, a(1), a(0), a(1), 4), "[1, 4, 5, 5] x [6, 1, 3, 3]",
            "conv2d: out_channels (weight.size(0) = 6) must be divisible by groups (4): input=[1, 4, 5, 5], "
                + "weight=[6, 1, 3, 3]"));
    t.add(conv2d("depthwise", a(2), a(1), a(1), 3, "zeros", "[2, 3, 6, 5] x [3, 1, 3, 3] x [3]"));
    t.add(conv2d("depthwise_x2_dilated", a(1, 2), a(2, 1), a(2), 2, "zeros", "[2, 2, 7, 7] x [4, 1, 2, 3] x [4]"));
    t.add(conv2d("reflect", a(1), a(2, 1), a(1), 1, "reflect", "[2, 2, 5, 4] x [3, 2, 3, 3] x [3]"));
    t.add(conv2d("replicate_strided", a(2), a(1), a(1), 1, "replicate", "[1, 2, 5, 5] x [2, 2, 3, 2] x [2]"));
    t.add(conv2d("circular", a(1), a(1, 2), a(1), 1, "circular", "[1, 2, 4, 5] x [2, 2, 2, 3] x [2]"));
    // 'same' with an even kernel pads one less before than after, as PyTorch
    t.add(op("conv2d:same_even_kernel").fn(l -> Convolution.conv2d(l.get(0), l.get(1), l.get(2), a(1), "same",
            a(1, 2), 1))
        .ref(l -> NnRef.conv2d(l.get(0), l.get(1), l.get(2), a(1, 1), a(1, 2, 1, 1), a(1, 2), 1))
        .shapes("[1, 2, 5, 6] x [2, 2, 4, 2] x [2]")
        .error(l -> Convolution.conv2d(l.get(0), l.get(1), null, a(2), "same", a(1), 1), "[1, 1, 5, 5] x [1, 1, 3, 3]",
            "conv2d: padding='same' is not supported for strided convolutions (stride [2, 2]): "
                + "input=[1, 1, 5, 5], weight=[1, 1, 3, 3]"));
    t.add(op("conv2d:unbatched_no_bias").fn(l -> Convolution.conv2d(l.get(0), l.get(1), null))
        .ref(l -> squeeze0(NnRef.conv2d(unsqueeze0(l.get(0)), l.get(1), null, a(1, 1), a(0, 0, 0, 0), a(1, 1), 1)))
        .shapes("[2, 4, 4] x [3, 2, 2, 2]"));

    // ---------------------------------------------------------------- conv1d
    t.add(op("conv1d").fn(l -> Convolution.conv1d(l.get(0), l.get(1), l.get(2)))
        .ref(l -> NnRef.conv1d(l.get(0), l.get(1), l.get(2), 1, a(0, 0), 1, 1))
        .shapes("[2, 3, 6] x [4, 3, 3] x [4]")
        .error(l -> Convolution.conv1d(l.get(0), l.get(1), null, 1, 1, 2, 1), "[2, 1, 4] x [1, 1, 4]",
            "conv1d: kernel size (dilated) [7] is larger than the padded input [6]: input=[2, 1, 4], "
                + "weight=[1, 1, 4]"));
    t.add(op("conv1d:stride_pad").fn(l -> Convolution.conv1d(l.get(0), l.get(1), l.get(2), 2, 1, 1, 1))
        .ref(l -> NnRef.conv1d(l.get(0), l.get(1), l.get(2), 2, a(1, 1), 1, 1)).shapes("[2, 3, 9] x [4, 3, 3] x [4]"));
    t.add(op("conv1d:dilation_groups").fn(l -> Convolution.conv1d(l.get(0), l.get(1), l.get(2), 1, 2, 2, 2))
        .ref(l -> NnRef.conv1d(l.get(0), l.get(1), l.get(2), 1, a(2, 2), 2, 2)).shapes("[2, 4, 8] x [2, 2, 3] x [2]"));
    t.add(op("conv1d:depthwise").fn(l -> Convolution.conv1d(l.get(0), l.get(1), l.get(2), 1, 1, 1, 3))
        .ref(l -> NnRef.conv1d(l.get(0), l.get(1), l.get(2), 1, a(1, 1), 1, 3)).shapes("[2, 3, 7] x [6, 1, 3] x [6]"));
    t.add(op("conv1d:reflect_same").fn(l -> Convolution.conv1d(l.get(0), l.get(1), l.get(2), 1, "same", 1, 1,
            "reflect"))
        .ref(l -> NnRef.conv1d(NnRef.pad(l.get(0), a(1, 2), "reflect", 0), l.get(1), l.get(2), 1, a(0, 0), 1, 1))
        .shapes("[2, 2, 6] x [3, 2, 4] x [3]"));

    // ---------------------------------------------------------------- conv_transpose2d
    t.add(op("conv_transpose2d").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1), l.get(2)))
        .ref(l -> NnRef.convTranspose2d(l.get(0), l.get(1), l.get(2), a(1, 1), a(0, 0), a(0, 0), 1, a(1, 1)))
        .shapes("[2, 3, 3, 4] x [3, 2, 2, 3] x [2]")
        .error(l -> Convolution.convTranspose2d(l.get(0), l.get(1), null), "[1, 3, 2, 2] x [4, 2, 3, 3]",
            "conv_transpose2d: input channels (3) must equal weight.size(0) (4): input=[1, 3, 2, 2], "
                + "weight=[4, 2, 3, 3]")
        .error(l -> Convolution.convTranspose2d(l.get(0), l.get(1), null, a(1), a(0), a(1), 1, a(1)),
            "[1, 2, 2, 2] x [2, 2, 3, 3]", "conv_transpose2d: output_padding must be smaller than either stride or "
                + "dilation (output_padding=[1, 1], stride=[1, 1], dilation=[1, 1]): input=[1, 2, 2, 2], "
                + "weight=[2, 2, 3, 3]"));
    t.add(op("conv_transpose2d:stride_pad_output_pad").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1),
            l.get(2), a(2, 3), a(1), a(1, 2), 1, a(1)))
        .ref(l -> NnRef.convTranspose2d(l.get(0), l.get(1), l.get(2), a(2, 3), a(1, 1), a(1, 2), 1, a(1, 1)))
        .shapes("[2, 2, 3, 3] x [2, 3, 3, 3] x [3]"));
    t.add(op("conv_transpose2d:groups_dilation").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1), l.get(2),
            a(1), a(1), a(0), 2, a(2)))
        .ref(l -> NnRef.convTranspose2d(l.get(0), l.get(1), l.get(2), a(1, 1), a(1, 1), a(0, 0), 2, a(2, 2)))
        .shapes("[1, 4, 4, 3] x [4, 2, 2, 2] x [4]"));
    // stride dividing the kernel, 8+ channels: the F32 samples run by output phase (PhaseTransposedConv)
    t.add(op("conv_transpose2d:phase_k4_s2_p1").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1), l.get(2),
            a(2), a(1), a(0), 1, a(1)))
        .ref(l -> NnRef.convTranspose2d(l.get(0), l.get(1), l.get(2), a(2, 2), a(1, 1), a(0, 0), 1, a(1, 1)))
        .shapes("[2, 8, 3, 4] x [8, 8, 4, 4] x [8]"));
    t.add(op("conv_transpose2d:phase_k6_s3_p2_output_pad").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1),
            l.get(2), a(3), a(2), a(1), 1, a(1)))
        .ref(l -> NnRef.convTranspose2d(l.get(0), l.get(1), l.get(2), a(3, 3), a(2, 2), a(1, 1), 1, a(1, 1)))
        .shapes("[1, 8, 3, 2] x [8, 9, 6, 6] x [9]"));
    t.add(op("conv_transpose2d:unbatched_1x1").fn(l -> Convolution.convTranspose2d(l.get(0), l.get(1), null))
        .ref(l -> squeeze0(NnRef.convTranspose2d(unsqueeze0(l.get(0)), l.get(1), null, a(1, 1), a(0, 0), a(0, 0), 1,
            a(1, 1))))
        .shapes("[3, 2, 3] x [3, 2, 1, 1]"));

    // ---------------------------------------------------------------- pad
    for (String mode : new String[] {"constant", "reflect", "replicate", "circular"}) {
      OpInfo two = op("pad:" + mode + "_2d").unary(x -> Padding.pad(x, a(2, 1, 1, 2), mode))
          .ref(l -> NnRef.pad(l.get(0), a(2, 1, 1, 2), mode, 0)).shapes("[2, 3, 4]");
      if (mode.equals("reflect")) {
        two.error(l -> Padding.pad(l.get(0), a(3, 0), "reflect"), "[1, 2, 3]",
            "pad: reflect padding (3, 0) must be smaller than dim 2 (size 3): input=[1, 2, 3]");
      }
      t.add(two);
      t.add(op("pad:" + mode + "_1d").unary(x -> Padding.pad(x, a(3, 2), mode))
          .ref(l -> NnRef.pad(l.get(0), a(3, 2), mode, 0)).shapes("[2, 2, 4]"));
    }
    t.add(op("pad").unary(x -> Padding.pad(x, a(-1, 2), "constant", 1.5))
        .ref(l -> NnRef.pad(l.get(0), a(-1, 2), "constant", 1.5)).shapes("[2, 5]"));

    // ---------------------------------------------------------------- max pooling
    t.add(op("max_pool2d").unary(x -> Pooling.maxPool2d(x, 2))
        .ref(maxPool(false, a(2, 2), a(2, 2), a(0, 0), a(1, 1), false)).shapes("[2, 3, 6, 6]")
        .error(l -> Pooling.maxPool2d(l.get(0), 3), "[1, 1, 2, 2]", "max_pool2d: output size (0, 0) is too small: "
            + "the kernel (3, 3) is larger than the padded input (2, 2): input=[1, 1, 2, 2]")
        .error(l -> Pooling.maxPool2d(l.get(0), a(3), null, a(2), ONE, false), "[1, 1, 8, 8]",
            "max_pool2d: padding should be at most half of kernel_size, got padding=(2, 2) and kernel_size=(3, 3): "
                + "input=[1, 1, 8, 8]")
        .error(l -> Pooling.maxPool2d(l.get(0), 2), "[4, 5]",
            "max_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got rank 2: input=[4, 5]")
        .error(l -> Pooling.maxPool2d(l.get(0).to(DType.I64), 2), "[1, 1, 4, 4]",
            "max_pool2d: expected a floating-point tensor, got int64: x=[1, 1, 4, 4]; hint: convert with "
                + "x.to(DType.F32)"));
    t.add(op("max_pool2d:k3_s2_p1_ceil").unary(x -> Pooling.maxPool2d(x, a(3), a(2), a(1), ONE, true))
        .ref(maxPool(false, a(3, 3), a(2, 2), a(1, 1), a(1, 1), true))
        .shapes("[2, 2, 7, 8]"));
    t.add(op("max_pool2d:dilated_overlapping").unary(x -> Pooling.maxPool2d(x, a(3, 2), a(1, 1), a(1, 1), a(2, 1),
        false)).ref(maxPool(false, a(3, 2), a(1, 1), a(1, 1), a(2, 1), false)).shapes("[1, 2, 7, 6]"));
    t.add(op("max_pool2d:unbatched").unary(x -> Pooling.maxPool2d(x, a(2), a(1), Z, ONE, false))
        .ref(maxPool(false, a(2, 2), a(1, 1), a(0, 0), a(1, 1), false)).shapes("[3, 5, 5]"));
    t.add(op("max_pool2d:with_indices").unary(x -> Pooling.maxPool2dWithIndices(x, a(3), a(2), a(1), ONE, false)
        .values()).ref(maxPool(false, a(3, 3), a(2, 2), a(1, 1), a(1, 1), false)).shapes("[1, 2, 6, 7]"));
    t.add(op("max_pool1d").unary(x -> Pooling.maxPool1d(x, 3, 2, 1, 2, true))
        .ref(maxPool(true, a(1, 3), a(1, 2), a(0, 1), a(1, 2), true)).shapes("[2, 3, 11]")
        .error(l -> Pooling.maxPool1d(l.get(0), 2), "[2, 3, 4, 5]",
            "max_pool1d: expected a 2-d [C, L] or 3-d [N, C, L] input, got rank 4: input=[2, 3, 4, 5]"));
    t.add(op("max_pool1d:unbatched").unary(x -> Pooling.maxPool1d(x, 2))
        .ref(maxPool(true, a(1, 2), a(1, 2), a(0, 0), a(1, 1), false)).shapes("[3, 8]"));

    // ---------------------------------------------------------------- average pooling
    t.add(op("avg_pool2d").unary(x -> Pooling.avgPool2d(x, 2))
        .ref(avgPool(false, a(2, 2), a(2, 2), a(0, 0), false, true, null)).shapes("[2, 3, 6, 6]")
        .error(l -> Pooling.avgPool2d(l.get(0), a(2), null, Z, false, true, 0), "[1, 1, 4, 4]",
            "avg_pool2d: divisor_override must not be zero: input=[1, 1, 4, 4]"));
    t.add(op("avg_pool2d:pad_ceil_count").unary(x -> Pooling.avgPool2d(x, a(3), a(2), a(1), true, true, null))
        .ref(avgPool(false, a(3, 3), a(2, 2), a(1, 1), true, true, null))
        .shapes("[2, 2, 7, 8]"));
    t.add(op("avg_pool2d:pad_ceil_no_count").unary(x -> Pooling.avgPool2d(x, a(3), a(2), a(1), true, false, null))
        .ref(avgPool(false, a(3, 3), a(2, 2), a(1, 1), true, false, null))
        .shapes("[2, 2, 7, 8]"));
    t.add(op("avg_pool2d:divisor_override").unary(x -> Pooling.avgPool2d(x, a(3, 2), a(1, 2), a(1, 1), false, true,
        7)).ref(avgPool(false, a(3, 2), a(1, 2), a(1, 1), false, true, 7)).shapes("[1, 2, 5, 6]"));
    t.add(op("avg_pool1d").unary(x -> Pooling.avgPool1d(x, 4, 3, 2, true, false))
        .ref(avgPool(true, a(1, 4), a(1, 3), a(0, 2), true, false, null)).shapes("[2, 2, 11]")
        .error(l -> Pooling.avgPool1d(l.get(0), 5), "[1, 2, 3]", "avg_pool1d: output size 0 is too small: the kernel "
            + "5 is larger than the padded input 3: input=[1, 2, 3]"));
    t.add(op("avg_pool1d:unbatched").unary(x -> Pooling.avgPool1d(x, 2, 1, 1, false, true))
        .ref(avgPool(true, a(1, 2), a(1, 1), a(0, 1), false, true, null)).shapes("[3, 7]"));

    // ---------------------------------------------------------------- adaptive pooling
    t.add(op("adaptive_avg_pool2d").unary(x -> Pooling.adaptiveAvgPool2d(x, 3)).ref(adaptive(3, 3, false))
        .shapes("[2, 2, 7, 7]")
        .error(l -> Pooling.adaptiveAvgPool2d(l.get(0), 2), "[1, 1, 1, 4, 4]", "adaptive_avg_pool2d: expected a 3-d "
            + "[C, H, W] or 4-d [N, C, H, W] input, got rank 5: input=[1, 1, 1, 4, 4]"));
    t.add(op("adaptive_avg_pool2d:unbatched_5x9_to_3x4").unary(x -> Pooling.adaptiveAvgPool2d(x, 3, 4))
        .ref(adaptive(3, 4, false))
        .shapes("[2, 5, 9]"));
    t.add(op("adaptive_avg_pool2d:up").unary(x -> Pooling.adaptiveAvgPool2d(x, 5, 6)).ref(adaptive(5, 6, false))
        .shapes("[1, 2, 3, 4]"));
    t.add(op("adaptive_max_pool2d").unary(x -> Pooling.adaptiveMaxPool2d(x, 3)).ref(adaptive(3, 3, true))
        .shapes("[2, 2, 7, 7]")
        .error(l -> Pooling.adaptiveMaxPool2d(l.get(0), 0, 2), "[1, 1, 4, 4]",
            "adaptive_max_pool2d: output_size must be positive, got 0: input=[1, 1, 4, 4]"));
    t.add(op("adaptive_max_pool2d:5x9_to_3x4").unary(x -> Pooling.adaptiveMaxPool2d(x, 3, 4)).ref(adaptive(3, 4, true))
        .shapes("[1, 2, 5, 9]"));
    t.add(op("adaptive_max_pool2d:up").unary(x -> Pooling.adaptiveMaxPool2d(x, 5, 6)).ref(adaptive(5, 6, true))
        .shapes("[1, 2, 3, 4]"));

    // ---------------------------------------------------------------- interpolate (tape names per kernel)
    t.add(op("upsample_nearest2d").unary(x -> Upsampling.interpolate(x, 2, "nearest")).shapes("[2, 2, 3, 4]")
        .error(l -> Upsampling.interpolate(l.get(0), 2, "bicubic"), "[1, 2, 3, 3]",
            "interpolate: mode must be 'nearest' or 'bilinear', got 'bicubic': input=[1, 2, 3, 3]")
        .error(l -> Upsampling.interpolate(l.get(0), null, null, "nearest", null, null), "[1, 2, 3, 3]",
            "interpolate: either size or scale_factor must be given: input=[1, 2, 3, 3]"));
    t.add(op("upsample_nearest2d:odd_scales").unary(x -> Upsampling.interpolate(x, null, new double[] {1.7, 2.2},
        "nearest", null, null)).shapes("[1, 2, 3, 5]"));
    t.add(op("upsample_nearest1d").unary(x -> Upsampling.interpolate(x, a(3), "nearest")).shapes("[2, 2, 7]")
        .error(l -> Upsampling.interpolate(l.get(0), 2, "nearest"), "[2, 3]", "interpolate: mode 'nearest' needs a "
            + "3-d [N, C, L] or 4-d [N, C, H, W] input, got rank 2: input=[2, 3]"));
    t.add(op("upsample_nearest1d:scale_2.2").unary(x -> Upsampling.interpolate(x, 2.2, "nearest")).shapes("[1, 2, 3]"));
    for (boolean ac : new boolean[] {false, true}) {
      OpInfo size = op("upsample_bilinear2d:size_ac=" + ac).unary(x -> Upsampling.interpolate(x, a(7, 9), null,
          "bilinear", ac, null)).shapes("[2, 2, 4, 5]");
      if (!ac) {
        size.error(l -> Upsampling.interpolate(l.get(0), 2, "bilinear"), "[1, 2, 3]",
            "interpolate: mode 'bilinear' needs a 4-d [N, C, H, W] input, got rank 3: input=[1, 2, 3]");
      }
      t.add(size);
      t.add(op("upsample_bilinear2d:down_ac=" + ac).unary(x -> Upsampling.interpolate(x, a(3, 5), null, "bilinear",
          ac, null)).shapes("[1, 2, 7, 8]"));
      t.add(op("upsample_bilinear2d:scale_ac=" + ac).unary(x -> Upsampling.interpolate(x, null,
          new double[] {1.5, 2.3}, "bilinear", ac, null)).shapes("[1, 2, 4, 5]"));
    }
  }
}
