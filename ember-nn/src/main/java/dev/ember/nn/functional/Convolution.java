package dev.ember.nn.functional;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * 1-d and 2-d convolutions and the 2-d transposed convolution, as {@code F.conv1d},
 * {@code F.conv2d} and {@code F.conv_transpose2d}. Inputs are [N, C, L] / [N, C, H, W] or unbatched
 * [C, L] / [C, H, W]; weights are [O, C/groups, (kH,) kW] ([C, O/groups, kH, kW] for the transposed
 * convolution). Per-dimension arguments ({@code stride}, {@code padding}, {@code dilation},
 * {@code outputPadding}) are arrays of one value (used for every dimension) or one per dimension.
 * {@code padding} may also be {@code "valid"} (none) or {@code "same"} (output size = input size,
 * stride 1 only; when the total d*(k-1) is odd the extra element goes on the right/bottom, as
 * PyTorch). A {@code paddingMode} other than {@code "zeros"} ({@code "reflect"}, {@code "replicate"},
 * {@code "circular"}) pads a copy with {@link Padding#pad} first, as {@code nn.Conv2d} does.
 * The arithmetic runs in the backend's {@link ConvolutionKernels}; the backward is not itself recorded
 * (first-order gradients only).
 */
public final class Convolution {
  private Convolution() {}

  private static final int[] ONE = {1};
  private static final int[] ZERO = {0};

  // ================================================================== conv2d

  /** conv2d with stride 1, no padding, dilation 1, one group. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias) {
    return conv2d(input, weight, bias, ONE, ZERO, ONE, 1);
  }

  /** conv2d with zero padding of {@code padding} on both sides of each spatial dim. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation,
      int groups) {
    return conv2d(input, weight, bias, stride, padding, dilation, groups, "zeros");
  }

  /** conv2d with {@code padding} "valid" or "same". */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation,
      int groups) {
    return conv2d(input, weight, bias, stride, padding, dilation, groups, "zeros");
  }

  /** conv2d whose padding is filled in {@code paddingMode} (zeros, reflect, replicate, circular). */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation,
      int groups, String paddingMode) {
    Tensor out = conv2dUntraced(input, weight, bias, stride, padding, dilation, groups, paddingMode);
    return Tracing.active() ? Tracing.op("conv2d", out,
        new Tensor[] {input, weight, bias}, new Object[] {"stride", Arrays.toString(stride),
        "padding", Arrays.toString(padding), "dilation", Arrays.toString(dilation), "groups", groups,
        "padding_mode", paddingMode},
        in -> conv2d(in[0], in[1], in[2], stride, padding, dilation, groups, paddingMode)) : out;
  }

  private static Tensor conv2dUntraced(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation,
      int groups, String paddingMode) {
    String op = "conv2d";
    int[] p = pair(op, "padding", padding, 0);
    return conv(op, 2, input, weight, bias, pair(op, "stride", stride, 1), new int[] {p[0], p[0], p[1], p[1]},
        pair(op, "dilation", dilation, 1), groups, paddingMode, false);
  }

  /** conv2d with {@code padding} "valid" or "same", filled in {@code paddingMode}. */
  public static Tensor conv2d(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation,
      int groups, String paddingMode) {
    Tensor out = conv2dUntraced(input, weight, bias, stride, padding, dilation, groups, paddingMode);
    return Tracing.active() ? Tracing.op("conv2d", out,
        new Tensor[] {input, weight, bias}, new Object[] {"stride", Arrays.toString(stride),
        "padding", padding, "dilation", Arrays.toString(dilation), "groups", groups, "padding_mode", paddingMode},
        in -> conv2d(in[0], in[1], in[2], stride, padding, dilation, groups, paddingMode)) : out;
  }

  private static Tensor conv2dUntraced(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding, int[] dilation,
      int groups, String paddingMode) {
    String op = "conv2d";
    int[] s = pair(op, "stride", stride, 1);
    int[] d = pair(op, "dilation", dilation, 1);
    int[] k = weight.dim() == 4 ? new int[] {weight.size(2), weight.size(3)} : new int[] {1, 1};
    return conv(op, 2, input, weight, bias, s, stringPadding(op, padding, s, d, k, input, weight), d, groups,
        paddingMode, false);
  }

  /**
   * relu(conv2d(...)) with the ReLU fused into the convolution kernel's output epilogue when the tape is off
   * (inference): no second pass over the output and no second tensor, bitwise equal to conv2d then relu. With
   * the tape on, or on a backend without the epilogue, it is conv2d then relu as two ops.
   */
  public static Tensor conv2dRelu(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
      int[] dilation, int groups, String paddingMode) {
    String op = "conv2d";
    int[] p = pair(op, "padding", padding, 0);
    return conv(op, 2, input, weight, bias, pair(op, "stride", stride, 1), new int[] {p[0], p[0], p[1], p[1]},
        pair(op, "dilation", dilation, 1), groups, paddingMode, true);
  }

  /** {@link #conv2dRelu(Tensor, Tensor, Tensor, int[], int[], int[], int, String)} with "valid" or "same" padding. */
  public static Tensor conv2dRelu(Tensor input, Tensor weight, Tensor bias, int[] stride, String padding,
      int[] dilation, int groups, String paddingMode) {
    String op = "conv2d";
    int[] s = pair(op, "stride", stride, 1);
    int[] d = pair(op, "dilation", dilation, 1);
    int[] k = weight.dim() == 4 ? new int[] {weight.size(2), weight.size(3)} : new int[] {1, 1};
    return conv(op, 2, input, weight, bias, s, stringPadding(op, padding, s, d, k, input, weight), d, groups,
        paddingMode, true);
  }

  // ================================================================== conv1d

  /** conv1d with stride 1, no padding, dilation 1, one group. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias) {
    return conv1d(input, weight, bias, 1, 0, 1, 1, "zeros");
  }

  /** conv1d with zero padding of {@code padding} on both sides. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation,
      int groups) {
    return conv1d(input, weight, bias, stride, padding, dilation, groups, "zeros");
  }

  /** conv1d whose padding is filled in {@code paddingMode}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation,
      int groups, String paddingMode) {
    Tensor out = conv1dUntraced(input, weight, bias, stride, padding, dilation, groups, paddingMode);
    return Tracing.active() ? Tracing.op("conv1d", out, new Tensor[] {input, weight, bias},
        new Object[] {"stride", stride, "padding", padding, "dilation", dilation, "groups", groups,
        "padding_mode", paddingMode},
        in -> conv1d(in[0], in[1], in[2], stride, padding, dilation, groups, paddingMode)) : out;
  }

  private static Tensor conv1dUntraced(Tensor input, Tensor weight, Tensor bias, int stride, int padding, int dilation,
      int groups, String paddingMode) {
    check1d("conv1d", "stride", stride, 1);
    check1d("conv1d", "padding", padding, 0);
    check1d("conv1d", "dilation", dilation, 1);
    return conv("conv1d", 1, input, weight, bias, new int[] {1, stride}, new int[] {0, 0, padding, padding},
        new int[] {1, dilation}, groups, paddingMode, false);
  }

  /** conv1d with {@code padding} "valid" or "same". */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation,
      int groups) {
    return conv1d(input, weight, bias, stride, padding, dilation, groups, "zeros");
  }

  /** conv1d with {@code padding} "valid" or "same", filled in {@code paddingMode}. */
  public static Tensor conv1d(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation,
      int groups, String paddingMode) {
    Tensor out = conv1dUntraced(input, weight, bias, stride, padding, dilation, groups, paddingMode);
    return Tracing.active() ? Tracing.op("conv1d", out, new Tensor[] {input, weight, bias},
        new Object[] {"stride", stride, "padding", padding, "dilation", dilation, "groups", groups,
        "padding_mode", paddingMode},
        in -> conv1d(in[0], in[1], in[2], stride, padding, dilation, groups, paddingMode)) : out;
  }

  private static Tensor conv1dUntraced(Tensor input, Tensor weight, Tensor bias, int stride, String padding, int dilation,
      int groups, String paddingMode) {
    String op = "conv1d";
    check1d(op, "stride", stride, 1);
    check1d(op, "dilation", dilation, 1);
    int k = weight.dim() == 3 ? weight.size(2) : 1;
    int[] pads = stringPadding(op, padding, new int[] {1, stride}, new int[] {1, dilation}, new int[] {1, k}, input,
        weight);
    return conv(op, 1, input, weight, bias, new int[] {1, stride}, pads, new int[] {1, dilation}, groups, paddingMode,
        false);
  }

  // ================================================================== transposed

  /** conv_transpose2d with stride 1, no padding, one group. */
  public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias) {
    return convTranspose2d(input, weight, bias, ONE, ZERO, ZERO, 1, ONE);
  }

  /**
   * The transposed convolution (the gradient of conv2d with respect to its input): output size
   * {@code (in - 1) * stride - 2 * padding + dilation * (k - 1) + outputPadding + 1} per dim.
   * {@code outputPadding} must be smaller than the stride or the dilation of its dim.
   */
  public static Tensor convTranspose2d(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
      int[] outputPadding, int groups, int[] dilation) {
    Tensor out = convTranspose2dUntraced(input, weight, bias, stride, padding, outputPadding, groups, dilation);
    return Tracing.active() ? Tracing.op("conv_transpose2d", out, new Tensor[] {input, weight, bias},
        new Object[] {"stride", Arrays.toString(stride), "padding", Arrays.toString(padding),
        "output_padding", Arrays.toString(outputPadding), "groups", groups, "dilation", Arrays.toString(dilation)},
        in -> convTranspose2d(in[0], in[1], in[2], stride, padding, outputPadding, groups, dilation)) : out;
  }

  private static Tensor convTranspose2dUntraced(Tensor input, Tensor weight, Tensor bias, int[] stride, int[] padding,
      int[] outputPadding, int groups, int[] dilation) {
    String op = "conv_transpose2d";
    int[] s = pair(op, "stride", stride, 1);
    int[] p = pair(op, "padding", padding, 0);
    int[] op2 = pair(op, "output_padding", outputPadding, 0);
    int[] d = pair(op, "dilation", dilation, 1);
    Tensor[] ac = HalfCompute.lowered(op, input, weight, bias);
    input = ac[0];
    weight = ac[1];
    bias = ac[2];
    Check.floating(op, input);
    boolean unbatched = input.dim() == 3;
    if (input.dim() != 3 && input.dim() != 4) {
      throw Check.fail(op, "expected a 3-d (unbatched) or 4-d (batched) input, got rank " + input.dim(),
          "input", input, "weight", weight);
    }
    Tensor x = unbatched ? input.unsqueeze(0) : input;
    checkWeight(op, 4, input, weight, bias);
    if (HalfCompute.applies(input)) {
      if (HalfCompute.direct(op, input, input.device().backend().convolution().readsHalf())) {
        try (Autocast off = Autocast.disable()) { // the kernels read the halves: no widening, one rounding
          return convTranspose2dKernels(op, unbatched, x, input, weight, bias, s, p, op2, d, groups);
        }
      }
      return HalfCompute.like(op, input, t -> convTranspose2d(t[0], t[1], t[2], s, p, op2, groups, d), input, weight,
          bias);
    }
    return convTranspose2dKernels(op, unbatched, x, input, weight, bias, s, p, op2, d, groups);
  }

  private static Tensor convTranspose2dKernels(String op, boolean unbatched, Tensor x, Tensor input, Tensor weight,
      Tensor bias, int[] s, int[] p, int[] op2, int[] d, int groups) {
    int cin = x.size(1);
    if (groups <= 0) throw Check.fail(op, "groups must be positive, got " + groups, "input", input, "weight", weight);
    if (weight.size(0) != cin) {
      throw Check.fail(op, "input channels (" + cin + ") must equal weight.size(0) (" + weight.size(0) + ")",
          "input", input, "weight", weight);
    }
    if (cin % groups != 0) {
      throw Check.fail(op, "in_channels (" + cin + ") must be divisible by groups (" + groups + ")",
          "input", input, "weight", weight);
    }
    int o = weight.size(1) * groups;
    if (bias != null && bias.size(0) != o) {
      throw Check.fail(op, "bias must have out_channels = weight.size(1) * groups = " + o + " elements",
          "input", input, "weight", weight, "bias", bias);
    }
    for (int i = 0; i < 2; i++) {
      if (op2[i] >= s[i] && op2[i] >= d[i]) {
        throw Check.fail(op, "output_padding must be smaller than either stride or dilation (output_padding="
            + Arrays.toString(op2) + ", stride=" + Arrays.toString(s) + ", dilation=" + Arrays.toString(d) + ")",
            "input", input, "weight", weight);
      }
    }
    int kh = weight.size(2);
    int kw = weight.size(3);
    int h = x.size(2);
    int w = x.size(3);
    int oh = (h - 1) * s[0] - 2 * p[0] + d[0] * (kh - 1) + op2[0] + 1;
    int ow = (w - 1) * s[1] - 2 * p[1] + d[1] * (kw - 1) + op2[1] + 1;
    if (oh <= 0 || ow <= 0) {
      throw Check.fail(op, "output size [" + oh + ", " + ow + "] is too small (padding " + Arrays.toString(p)
          + " removes the whole output)", "input", input, "weight", weight);
    }
    ConvGeometry g = new ConvGeometry(oh, ow, kh, kw, s[0], s[1], p[0], p[1], d[0], d[1], h, w);
    Tensor xc = x.contiguous();
    Tensor wc = weight.contiguous();
    ConvolutionKernels kernels = xc.device().backend().convolution();
    int n = xc.size(0);
    // no zero fill where the kernels write every element (the phase path: 2 MB of output and 1 MB of dx per call
    // at N=16 64x16x16 -> 32 k4 s2)
    boolean writesAll = kernels.transposedWritesAll(xc, wc, groups, g);
    Tensor out = writesAll ? xc.newEmpty(n, o, oh, ow) : xc.newZeros(n, o, oh, ow);
    kernels.transposedForward(xc, wc, bias, groups, g, out);
    out = Autograd.record(op, out, (ctx, gr) -> {
      Tensor gc = gr.contiguous();
      Tensor dx = gradient(ctx.edgeNeeded(0), ctx.in(0), writesAll);
      Tensor dw = gradient(ctx.edgeNeeded(1), ctx.in(1), writesAll);
      kernels.transposedBackward(ctx.in(0), ctx.in(1), gc, groups, g, dx, dw);
      Tensor db = ctx.edgeNeeded(2) ? biasGradient(kernels.channelSums(gc, n, o, oh * ow), gc) : null;
      return new Tensor[] {dx, dw, db};
    }, new Tensor[] {xc, wc, bias});
    return unbatched ? out.squeeze(0) : out;
  }

  // ================================================================== shared

  /**
   * The convolution behind conv1d (dims = 1, viewed as 2-d with a unit height) and conv2d.
   * {@code pads} = (top, bottom, left, right). With {@code relu} the result is relu(conv), the ReLU fused
   * into the kernel when the tape is off.
   */
  private static Tensor conv(String op, int dims, Tensor input, Tensor weight, Tensor bias, int[] s, int[] pads,
      int[] d, int groups, String paddingMode, boolean relu) {
    Tensor[] ac = HalfCompute.lowered(op, input, weight, bias); // autocast: F32 operands in low precision
    input = ac[0];
    weight = ac[1];
    bias = ac[2];
    Check.floating(op, input);
    boolean unbatched = input.dim() == dims + 1;
    if (input.dim() != dims + 1 && input.dim() != dims + 2) {
      throw Check.fail(op, "expected a " + (dims + 1) + "-d (unbatched) or " + (dims + 2) + "-d (batched) input, got rank "
          + input.dim(), "input", input, "weight", weight);
    }
    checkWeight(op, dims + 2, input, weight, bias);
    if (HalfCompute.applies(input)) {
      // a padded copy (reflect, replicate, circular) stays widened: its gradient sums the kernels' dx, which the
      // widened path rounds once after that sum
      boolean padsCopy = !paddingMode.equalsIgnoreCase("zeros") && (pads[0] | pads[1] | pads[2] | pads[3]) != 0;
      if (!padsCopy && HalfCompute.direct(op, input, input.device().backend().convolution().readsHalf())) {
        try (Autocast off = Autocast.disable()) { // the kernels read the halves: no widening, one rounding
          return convKernels(op, dims, unbatched, input, weight, bias, s, pads, d, groups, paddingMode, relu);
        }
      }
      int[] pads0 = pads;
      // relu commutes with the one rounding to the half dtype, so fusing it before the rounding gives the same bits
      return HalfCompute.like(op, input, t -> conv(op, dims, t[0], t[1], t[2], s, pads0, d, groups, paddingMode,
          relu), input, weight, bias);
    }
    return convKernels(op, dims, unbatched, input, weight, bias, s, pads, d, groups, paddingMode, relu);
  }

  /** {@link #conv} past its dtype dispatch: the checks and the kernels, on operands of one dtype. */
  private static Tensor convKernels(String op, int dims, boolean unbatched, Tensor input, Tensor weight, Tensor bias,
      int[] s, int[] pads, int[] d, int groups, String paddingMode, boolean relu) {
    Tensor x = unbatched ? input.unsqueeze(0) : input;
    int c = x.size(1);
    int o = weight.size(0);
    if (groups <= 0) throw Check.fail(op, "groups must be positive, got " + groups, "input", input, "weight", weight);
    if (o % groups != 0) {
      throw Check.fail(op, "out_channels (weight.size(0) = " + o + ") must be divisible by groups (" + groups + ")",
          "input", input, "weight", weight);
    }
    if (c != weight.size(1) * groups) {
      throw Check.fail(op, "input channels (" + c + ") must equal weight.size(1) * groups (" + weight.size(1) + " * "
          + groups + " = " + weight.size(1) * groups + ")", "input", input, "weight", weight);
    }
    if (bias != null && bias.size(0) != o) {
      throw Check.fail(op, "bias must have out_channels = " + o + " elements", "input", input, "weight", weight,
          "bias", bias);
    }
    String mode = paddingMode.toLowerCase(Locale.ROOT);
    if (!mode.equals("zeros") && !mode.equals("reflect") && !mode.equals("replicate") && !mode.equals("circular")) {
      throw Check.fail(op, "unknown padding_mode '" + paddingMode + "' (expected zeros, reflect, replicate or circular)",
          "input", input);
    }
    if (dims == 1) {
      x = x.unsqueeze(2);
      weight = weight.unsqueeze(2);
    }
    if (!mode.equals("zeros") && (pads[0] | pads[1] | pads[2] | pads[3]) != 0) {
      int[] fpad = dims == 1 ? new int[] {pads[2], pads[3]} : new int[] {pads[2], pads[3], pads[0], pads[1]};
      Tensor padded = Padding.pad(dims == 1 ? x.squeeze(2) : x, fpad, mode);
      x = dims == 1 ? padded.unsqueeze(2) : padded;
      pads = new int[4];
    }
    int kh = weight.size(2);
    int kw = weight.size(3);
    int h = x.size(2);
    int w = x.size(3);
    int eh = d[0] * (kh - 1) + 1;
    int ew = d[1] * (kw - 1) + 1;
    int ph = h + pads[0] + pads[1];
    int pw = w + pads[2] + pads[3];
    if (eh > ph || ew > pw) {
      String k = dims == 1 ? "[" + ew + "]" : "[" + eh + ", " + ew + "]";
      String pin = dims == 1 ? "[" + pw + "]" : "[" + ph + ", " + pw + "]";
      throw Check.fail(op, "kernel size (dilated) " + k + " is larger than the padded input " + pin, "input", input,
          "weight", dims == 1 ? weight.squeeze(2) : weight);
    }
    int oh = (ph - eh) / s[0] + 1;
    int ow = (pw - ew) / s[1] + 1;
    ConvGeometry g = new ConvGeometry(h, w, kh, kw, s[0], s[1], pads[0], pads[2], d[0], d[1], oh, ow);
    Tensor xc = x.contiguous();
    Tensor wc = weight.contiguous();
    ConvolutionKernels kernels = xc.device().backend().convolution();
    int n = xc.size(0);
    if (relu && !Grad.enabled()) { // inference: the ReLU in the kernel's epilogue, nothing to record
      Tensor out = xc.newEmpty(n, o, oh, ow);
      if (!kernels.forwardRelu(xc, wc, bias, groups, g, out)) {
        kernels.forward(xc, wc, bias, groups, g, out, null);
        out.relu_();
      }
      // recording is off, so this records nothing; a checkpoint's first forward still sees the inputs
      out = Autograd.record(op, out, (ctx, gr) -> {
        throw new IllegalStateException(op + ": a fused conv+relu output was recorded with the tape off");
      }, new Tensor[] {xc, wc, bias});
      if (dims == 1) out = out.squeeze(2);
      return unbatched ? out.squeeze(0) : out;
    }
    // the column matrices are kept for the weight gradient only when there will be one
    SavedColumns cols = Grad.enabled() && weight.requiresGrad() ? kernels.newSavedColumns() : null;
    // the kernels write every output element: no zero-fill of a pooled array
    Tensor out = xc.newEmpty(n, o, oh, ow);
    kernels.forward(xc, wc, bias, groups, g, out, cols);
    out = Autograd.record(op, out, (ctx, gr) -> {
      Tensor gc = gr.contiguous();
      Tensor dx = gradient(ctx.edgeNeeded(0), ctx.in(0));
      Tensor dw = gradient(ctx.edgeNeeded(1), ctx.in(1));
      kernels.backward(ctx.in(0), ctx.in(1), gc, groups, g, dx, dw, cols);
      Tensor db = ctx.edgeNeeded(2) ? biasGradient(kernels.channelSums(gc, n, o, oh * ow), gc) : null;
      return new Tensor[] {dx, dw, db};
    }, new Tensor[] {xc, wc, bias});
    if (relu) out = out.relu(); // with the tape: the plain recorded ops
    if (dims == 1) out = out.squeeze(2);
    return unbatched ? out.squeeze(0) : out;
  }

  /**
   * The bias gradient from its per-channel sums, in gOut's dtype and on its device: through F32 when that is half,
   * as the widened path's F32 gradient rounded to the half bias.
   */
  private static Tensor biasGradient(double[] sums, Tensor gOut) {
    Tensor db = Tensor.of(sums);
    if (gOut.dtype().isHalf()) db = db.to(DType.F32);
    return db.to(gOut.dtype()).to(gOut.device());
  }

  /** A zero-filled gradient shaped as {@code t} when {@code needed}, else null. */
  private static Tensor gradient(boolean needed, Tensor t) {
    return gradient(needed, t, false);
  }

  /** A gradient shaped as {@code t} when {@code needed}: zero-filled, or unfilled where the kernel writes it all. */
  private static Tensor gradient(boolean needed, Tensor t, boolean writesAll) {
    if (!needed) return null;
    return writesAll ? t.newEmpty(t.shapeRef()) : t.newZeros(t.shapeRef());
  }

  private static void checkWeight(String op, int rank, Tensor input, Tensor weight, Tensor bias) {
    for (Tensor t : new Tensor[] {weight, bias}) {
      if (t != null && t.device() != input.device()) {
        throw Check.fail(op, "tensors are on different devices (" + input.device() + " vs " + t.device() + ")",
            "input", input, t == weight ? "weight" : "bias", t);
      }
    }
    if (weight.dim() != rank) {
      throw Check.fail(op, "expected a " + rank + "-d weight, got rank " + weight.dim(), "input", input, "weight",
          weight);
    }
    if (weight.dtype() != input.dtype()) {
      throw Check.fail(op, "weight has dtype " + weight.dtype().torchName() + ", input has "
          + input.dtype().torchName(), "input", input, "weight", weight);
    }
    for (int i = 2; i < rank; i++) {
      if (weight.size(i) <= 0) throw Check.fail(op, "kernel sizes must be positive", "weight", weight);
    }
    if (bias == null) return;
    if (bias.dim() != 1) throw Check.fail(op, "bias must be 1-d", "weight", weight, "bias", bias);
    if (bias.dtype() != input.dtype()) {
      throw Check.fail(op, "bias has dtype " + bias.dtype().torchName() + ", input has " + input.dtype().torchName(),
          "input", input, "bias", bias);
    }
  }

  /** (top, bottom, left, right) for padding "valid" or "same". */
  private static int[] stringPadding(String op, String padding, int[] s, int[] d, int[] k, Tensor input,
      Tensor weight) {
    switch (padding.toLowerCase(Locale.ROOT)) {
      case "valid":
        return new int[4];
      case "same": {
        if (s[0] != 1 || s[1] != 1) {
          throw Check.fail(op, "padding='same' is not supported for strided convolutions (stride "
              + (op.equals("conv1d") ? s[1] : Arrays.toString(s)) + ")", "input", input, "weight", weight);
        }
        int th = d[0] * (k[0] - 1);
        int tw = d[1] * (k[1] - 1);
        return new int[] {th / 2, th - th / 2, tw / 2, tw - tw / 2};
      }
      default:
        throw Check.fail(op, "padding must be 'valid', 'same' or sizes, got '" + padding + "'", "input", input);
    }
  }

  /** A per-dimension argument as two values (one value means the same for both). */
  static int[] pair(String op, String name, int[] v, int min) {
    if (v == null || (v.length != 1 && v.length != 2)) {
      throw Check.fail(op, name + " must have 1 or 2 values, got " + (v == null ? "null" : Arrays.toString(v)));
    }
    int[] r = v.length == 1 ? new int[] {v[0], v[0]} : v.clone();
    for (int x : r) {
      if (x < min) throw Check.fail(op, name + " must be >= " + min + ", got " + Arrays.toString(v));
    }
    return r;
  }

  private static void check1d(String op, String name, int v, int min) {
    if (v < min) throw Check.fail(op, name + " must be >= " + min + ", got " + v);
  }
}
