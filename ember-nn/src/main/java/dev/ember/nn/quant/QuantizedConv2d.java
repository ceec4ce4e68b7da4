package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Module;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.quant.Quantization;
import dev.ember.tensor.Check;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * A Conv2d of static quantized inference, as {@code torch.ao.nn.quantized.Conv2d}: int8 weight [out, in / groups,
 * kH, kW] (symmetric qint8, per output channel or per tensor), fixed input and output parameters. Forward quantizes
 * the float input, lays the int8 patches out as rows (an int8 im2col, padding filled with the input's zero point,
 * i.e. real 0) and runs each group's int8 x int8 -&gt; int32 product with the requantizing output loop of
 * {@link Backend#int8LinearRequantize}; the float32 result [N, out, OH, OW] is the int8 output dequantized. Padding
 * must be zeros (sizes or "valid"/"same"); stride, dilation and groups are as Conv2d's. Inference only.
 */
public class QuantizedConv2d extends Module {
  private final String op;
  private final int inChannels;
  private final int outChannels;
  private final int groups;
  private final int kh;
  private final int kw;
  private final int[] stride;
  private final int[] dilation;
  private final int[] pad;       // top, bottom, left, right
  private final QTensor weight;
  private final byte[][] w;      // per group: [out / groups, in / groups * kH * kW]
  private final float[][] wScale;
  private final int[][] wRowSum;
  private final float[][] bias;
  private final QParams input;
  private final QParams output;
  private final boolean relu;

  /**
   * A layer from an int8 weight, a float bias (or null), the geometry of a Conv2d (padding as (top, bottom, left,
   * right)) and the per-tensor parameters of its input and output.
   */
  public QuantizedConv2d(QTensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups,
      QParams input, QParams output) {
    this("QuantizedConv2d", weight, bias, stride, padding, dilation, groups, input, output, false);
  }

  QuantizedConv2d(String op, QTensor weight, Tensor bias, int[] stride, int[] padding, int[] dilation, int groups,
      QParams input, QParams output, boolean relu) {
    this.op = op;
    this.weight = StaticInt8.weight(op, weight);
    int[] ws = weight.shape();
    if (ws.length != 4) throw new IllegalArgumentException(op + ": weight must be 4-d [out, in/groups, kH, kW], got " + weight);
    if (groups < 1 || ws[0] % groups != 0) {
      throw new IllegalArgumentException(op + ": out_channels " + ws[0] + " must be divisible by groups " + groups);
    }
    if (stride.length != 2 || dilation.length != 2 || padding.length != 4 || Arrays.stream(stride).anyMatch(s -> s < 1)
        || Arrays.stream(dilation).anyMatch(d -> d < 1) || Arrays.stream(padding).anyMatch(p -> p < 0)) {
      throw new IllegalArgumentException(op + ": need stride and dilation (h, w) >= 1 and padding (top, bottom, left,"
          + " right) >= 0, got stride=" + Arrays.toString(stride) + ", padding=" + Arrays.toString(padding)
          + ", dilation=" + Arrays.toString(dilation));
    }
    this.outChannels = ws[0];
    this.groups = groups;
    this.inChannels = ws[1] * groups;
    this.kh = ws[2];
    this.kw = ws[3];
    int k = ws[1] * kh * kw;
    if (k > Backend.INT8_MAX_K) {
      throw new IllegalArgumentException(op + ": in_channels / groups * kH * kW must be <= " + Backend.INT8_MAX_K
          + " (int32 accumulation), got " + k);
    }
    if (bias != null && (bias.dim() != 1 || bias.size(0) != outChannels)) {
      throw Check.fail(op, "bias must be [out_channels] (" + outChannels + ")", "bias", bias);
    }
    this.stride = stride.clone();
    this.dilation = dilation.clone();
    this.pad = padding.clone();
    this.input = StaticInt8.activation(op, "input", input);
    this.output = StaticInt8.activation(op, "output", output);
    this.relu = relu;
    byte[] all = weight.bytes();
    float[] scales = StaticInt8.rowScales(weight, outChannels);
    float[] b = bias == null ? null : bias.toFloatArray();
    int og = outChannels / groups;
    this.w = new byte[groups][];
    this.wScale = new float[groups][];
    this.wRowSum = new int[groups][];
    this.bias = new float[groups][];
    for (int g = 0; g < groups; g++) {
      w[g] = Arrays.copyOfRange(all, g * og * k, (g + 1) * og * k);
      wScale[g] = Arrays.copyOfRange(scales, g * og, (g + 1) * og);
      wRowSum[g] = Quantization.rowSums(w[g], og, k);
      this.bias[g] = b == null ? null : Arrays.copyOfRange(b, g * og, (g + 1) * og);
    }
    eval();
  }

  /** (top, bottom, left, right) padding of a Conv2d, "valid" and "same" resolved as Conv2d resolves them. */
  static int[] padding(Conv2d conv) {
    String s = conv.paddingString();
    if (s == null) {
      int[] p = conv.padding();
      return new int[] {p[0], p[0], p[1], p[1]};
    }
    if (s.equalsIgnoreCase("valid")) return new int[4];
    int[] k = conv.kernelSize();
    int[] d = conv.dilation();
    int th = d[0] * (k[0] - 1);
    int tw = d[1] * (k[1] - 1);
    return new int[] {th / 2, th - th / 2, tw / 2, tw - tw / 2};
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

  public int[] stride() {
    return stride.clone();
  }

  public int[] dilation() {
    return dilation.clone();
  }

  /** Padding as (top, bottom, left, right). */
  public int[] padding() {
    return pad.clone();
  }

  /** The int8 weight with its scales (zero points 0). */
  public QTensor weight() {
    return weight;
  }

  /** The float32 bias, or null. */
  public Tensor bias() {
    if (bias[0] == null) return null;
    float[] b = new float[outChannels];
    int og = outChannels / groups;
    for (int g = 0; g < groups; g++) System.arraycopy(bias[g], 0, b, g * og, og);
    return Tensor.of(b, outChannels);
  }

  public QParams inputQParams() {
    return input;
  }

  public QParams outputQParams() {
    return output;
  }

  @Override
  public Tensor forward(Tensor x) {
    boolean unbatched = x.dim() == 3;
    if ((x.dim() != 4 && !unbatched) || x.size(x.dim() - 3) != inChannels) {
      throw Check.fail(op, "input must be [N, " + inChannels + ", H, W] or [" + inChannels + ", H, W]", "input", x);
    }
    StaticInt8.checkInput(op, x);
    int n = unbatched ? 1 : x.size(0);
    int h = x.size(x.dim() - 2);
    int wd = x.size(x.dim() - 1);
    int oh = (h + pad[0] + pad[1] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
    int ow = (wd + pad[2] + pad[3] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
    if (h + pad[0] + pad[1] < dilation[0] * (kh - 1) + 1 || wd + pad[2] + pad[3] < dilation[1] * (kw - 1) + 1) {
      throw Check.fail(op, "input (with padding " + Arrays.toString(pad) + ") is smaller than the kernel " + kh + "x" + kw
          + " (dilation " + Arrays.toString(dilation) + ")", "input", x);
    }
    byte[] xq = StaticInt8.quantizeSigned(x.toFloatArray(), input);
    byte aZero = (byte) StaticInt8.signedZero(input);
    float aScale = input.scales()[0];
    int cg = inChannels / groups;
    int og = outChannels / groups;
    int k = cg * kh * kw;
    int m = n * oh * ow;
    int outZero = output.zeroPoints()[0];
    float outScale = output.scales()[0];
    int outMin = StaticInt8.outMin(output, relu);
    QDType t = output.dtype();
    Backend backend = Device.CPU.backend();
    float[] out = new float[n * outChannels * oh * ow];
    byte[] cols = new byte[m * k];
    byte[] q = new byte[m * og];
    for (int g = 0; g < groups; g++) {
      im2col(xq, aZero, n, h, wd, oh, ow, g * cg, cg, cols);
      backend.int8LinearRequantize(cols, aZero, aScale, w[g], wRowSum[g], wScale[g], bias[g], outScale, outZero, outMin,
          t.max(), q, m, og, k);
      int plane = oh * ow;
      for (int b = 0; b < n; b++) {
        for (int p = 0; p < plane; p++) {
          int row = (b * plane + p) * og;
          int o = (b * outChannels + g * og) * plane + p;
          for (int j = 0; j < og; j++) out[o + j * plane] = (t.read(q[row + j]) - outZero) * outScale;
        }
      }
    }
    return unbatched ? Tensor.of(out, outChannels, oh, ow) : Tensor.of(out, n, outChannels, oh, ow);
  }

  /** Rows (b, oy, ox) of columns (c, ky, kx) over input channels [c0, c0 + cg); outside the input: the zero point. */
  private void im2col(byte[] xq, byte aZero, int n, int h, int wd, int oh, int ow, int c0, int cg, byte[] cols) {
    int k = cg * kh * kw;
    int row = 0;
    for (int b = 0; b < n; b++) {
      for (int oy = 0; oy < oh; oy++) {
        for (int ox = 0; ox < ow; ox++, row++) {
          int col = row * k;
          for (int c = 0; c < cg; c++) {
            int base = (b * inChannels + c0 + c) * h * wd;
            for (int ky = 0; ky < kh; ky++) {
              int iy = oy * stride[0] - pad[0] + ky * dilation[0];
              for (int kx = 0; kx < kw; kx++, col++) {
                int ix = ox * stride[1] - pad[2] + kx * dilation[1];
                cols[col] = iy >= 0 && iy < h && ix >= 0 && ix < wd ? xq[base + iy * wd + ix] : aZero;
              }
            }
          }
        }
      }
    }
  }

  @Override
  protected String extraRepr() {
    return inChannels + ", " + outChannels + ", kernel_size=(" + kh + ", " + kw + "), stride=" + Arrays.toString(stride)
        + ", padding=" + Arrays.toString(pad) + (groups > 1 ? ", groups=" + groups : "") + ", scale="
        + output.scales()[0] + ", zero_point=" + output.zeroPoints()[0];
  }
}
