package dev.ember.nn;

import dev.ember.nn.init.Init;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * What the convolution layers share, as PyTorch's {@code _ConvNd}: hyperparameters, the weight and
 * optional bias, PyTorch's default initialisation (kaiming_uniform(a = sqrt 5) on the weight, i.e.
 * U(-1/sqrt(fan_in), 1/sqrt(fan_in)), and the bias from the same range, with fan_in = weight.size(1)
 * * kernel elements; for a transposed convolution that is out_channels / groups * kernel elements)
 * and the printed form.
 */
abstract class ConvBase extends Module {
  final int inChannels;
  final int outChannels;
  final int[] kernelSize;
  final int[] stride;
  final int[] padding;
  /** "same" or "valid" when the padding was given as a string, else null. */
  final String paddingString;
  final int[] dilation;
  final int[] outputPadding;
  final int groups;
  final String paddingMode;

  ConvBase(String op, int inChannels, int outChannels, int[] kernelSize, int[] stride, int[] padding,
      String paddingString, int[] dilation, int[] outputPadding, int groups, boolean bias, String paddingMode,
      boolean transposed, Generator gen) {
    int nd = kernelSize.length;
    if (inChannels <= 0 || outChannels <= 0) {
      throw new IllegalArgumentException(op + ": in_channels and out_channels must be positive, got " + inChannels
          + " and " + outChannels);
    }
    if (groups <= 0 || inChannels % groups != 0 || outChannels % groups != 0) {
      throw new IllegalArgumentException(op + ": in_channels (" + inChannels + ") and out_channels (" + outChannels
          + ") must be divisible by groups (" + groups + ")");
    }
    check(op, "kernel_size", kernelSize, nd, 1);
    check(op, "stride", stride, nd, 1);
    check(op, "dilation", dilation, nd, 1);
    check(op, "output_padding", outputPadding, nd, 0);
    if (paddingString == null) {
      check(op, "padding", padding, nd, 0);
    } else {
      String p = paddingString.toLowerCase(Locale.ROOT);
      if (!p.equals("same") && !p.equals("valid")) {
        throw new IllegalArgumentException(op + ": padding must be 'same', 'valid' or sizes, got '" + paddingString
            + "'");
      }
      if (p.equals("same") && Arrays.stream(stride).anyMatch(s -> s != 1)) {
        throw new IllegalArgumentException(op + ": padding='same' is not supported for strided convolutions (stride "
            + Reprs.tuple(stride) + ")");
      }
      paddingString = p;
    }
    String mode = paddingMode.toLowerCase(Locale.ROOT);
    if (!mode.equals("zeros") && !mode.equals("reflect") && !mode.equals("replicate") && !mode.equals("circular")) {
      throw new IllegalArgumentException(op + ": padding_mode must be zeros, reflect, replicate or circular, got '"
          + paddingMode + "'");
    }
    if (transposed && !mode.equals("zeros")) {
      throw new IllegalArgumentException(op + ": only the zeros padding mode is supported, got '" + paddingMode + "'");
    }
    this.inChannels = inChannels;
    this.outChannels = outChannels;
    this.kernelSize = kernelSize.clone();
    this.stride = stride.clone();
    this.padding = padding == null ? new int[nd] : padding.clone();
    this.paddingString = paddingString;
    this.dilation = dilation.clone();
    this.outputPadding = outputPadding.clone();
    this.groups = groups;
    this.paddingMode = mode;
    int[] shape = new int[2 + nd];
    shape[0] = transposed ? inChannels : outChannels;
    shape[1] = transposed ? outChannels / groups : inChannels / groups;
    System.arraycopy(kernelSize, 0, shape, 2, nd);
    Tensor w = Tensor.empty(shape);
    Init.kaimingUniform_(w, Math.sqrt(5), Init.FanMode.FAN_IN, "leaky_relu", gen);
    registerParameter("weight", w);
    if (bias) {
      long fanIn = Init.fans(w)[0];
      double bound = fanIn > 0 ? 1 / Math.sqrt(fanIn) : 0;
      registerParameter("bias", Init.uniform_(Tensor.empty(outChannels), -bound, bound, gen));
    } else {
      registerParameter("bias", null);
    }
  }

  private static void check(String op, String name, int[] v, int nd, int min) {
    if (v == null || v.length != nd) {
      throw new IllegalArgumentException(op + ": " + name + " must have " + nd + " value" + (nd == 1 ? "" : "s")
          + ", got " + (v == null ? "null" : Arrays.toString(v)));
    }
    for (int x : v) {
      if (x < min) throw new IllegalArgumentException(op + ": " + name + " must be >= " + min + ", got " + Arrays.toString(v));
    }
  }

  /** {@code n} copies of {@code v}. */
  static int[] rep(int v, int n) {
    int[] r = new int[n];
    Arrays.fill(r, v);
    return r;
  }

  public Tensor weight() {
    return param("weight");
  }

  /** The bias, or null when the layer was built without one. */
  public Tensor bias() {
    return param("bias");
  }

  public int inChannels() {
    return inChannels;
  }

  public int outChannels() {
    return outChannels;
  }

  public int groups() {
    return groups;
  }

  public int[] kernelSize() {
    return kernelSize.clone();
  }

  /** The stride per spatial dimension. */
  public int[] stride() {
    return stride.clone();
  }

  /** The zero padding per spatial dimension (zeros when the padding was given as 'same' or 'valid'). */
  public int[] padding() {
    return padding.clone();
  }

  /** 'same' or 'valid' when the padding was given by name, else null (see {@link #padding()}). */
  public String paddingString() {
    return paddingString;
  }

  /** The dilation per spatial dimension. */
  public int[] dilation() {
    return dilation.clone();
  }

  /** zeros, reflect, replicate or circular. */
  public String paddingMode() {
    return paddingMode;
  }

  @Override
  protected String extraRepr() {
    StringBuilder s = new StringBuilder().append(inChannels).append(", ").append(outChannels)
        .append(", kernel_size=").append(Reprs.tuple(kernelSize)).append(", stride=").append(Reprs.tuple(stride));
    if (paddingString != null) s.append(", padding=").append(paddingString);
    else if (Arrays.stream(padding).anyMatch(p -> p != 0)) s.append(", padding=").append(Reprs.tuple(padding));
    if (Arrays.stream(dilation).anyMatch(d -> d != 1)) s.append(", dilation=").append(Reprs.tuple(dilation));
    if (Arrays.stream(outputPadding).anyMatch(p -> p != 0)) {
      s.append(", output_padding=").append(Reprs.tuple(outputPadding));
    }
    if (groups != 1) s.append(", groups=").append(groups);
    if (!hasParam("bias")) s.append(", bias=False");
    if (!paddingMode.equals("zeros")) s.append(", padding_mode=").append(paddingMode);
    return s.toString();
  }
}
