package dev.ember.nn.quant;

import dev.ember.backend.Backend;
import dev.ember.backend.Int8Matrix;
import dev.ember.nn.Conv2d;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Check;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A Conv2d of static quantized inference, as {@code torch.ao.nn.quantized.Conv2d}: int8 weight [out, in / groups,
 * kH, kW] (symmetric qint8, per output channel or per tensor), fixed input and output parameters. Forward quantizes
 * the float input, lays the int8 patches out k-major (an int8 im2col [in / groups * kH * kW, N * OH * OW], padding
 * filled with the input's zero point, i.e. real 0) and runs each group's weight times those columns, int8 x int8 -&gt;
 * int32 with the requantizing output loop per output channel, stored in NCHW directly
 * ({@link Backend#int8ConvRequantize}: few output channels fill the kernel's panels of output pixels, where as
 * columns of the product they would leave most of a weight panel empty; the weight is packed once, in an
 * {@link Int8Matrix}); the float32 result [N, out, OH, OW] is the int8 output dequantized. Padding
 * must be zeros (sizes or "valid"/"same"); stride, dilation and groups are as Conv2d's. Inference only. The state
 * lives in buffers (see the package documentation's layout), so {@code stateDict()} carries it.
 */
public class QuantizedConv2d extends StaticQuantizedLayer {
  private final String op;
  private final int inChannels;
  private final int outChannels;
  private final int groups;
  private final int kh;
  private final int kw;
  private final int[] stride;
  private final int[] dilation;
  private final int[] pad;       // top, bottom, left, right
  private Int8Matrix[] w;  // per group: [out / groups, in / groups * kH * kW], derived from the buffers
  private float[][] wScale;
  private int[][] wRowSum;
  private float[][] bias;
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
    StaticInt8.weight(op, weight);
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
    StaticInt8.activation(op, "input", input);
    StaticInt8.activation(op, "output", output);
    this.relu = relu;
    this.state = StaticState.register(this, weight, bias, input, output);
    eval();
  }

  /** Brings the per-group operands up to date with the buffers. */
  private StaticState operands() {
    if (state.refresh(this) || w == null) {
      int og = outChannels / groups;
      int k = state.rowLen;
      Int8Matrix[] gw = new Int8Matrix[groups];
      float[][] gs = new float[groups][];
      int[][] gr = new int[groups][];
      float[][] gb = new float[groups][];
      for (int g = 0; g < groups; g++) {
        gw[g] = groups == 1 ? state.wm : new Int8Matrix(Arrays.copyOfRange(state.w, g * og * k, (g + 1) * og * k), og, k);
        gs[g] = Arrays.copyOfRange(state.rowScale, g * og, (g + 1) * og);
        gr[g] = Arrays.copyOfRange(state.rowSum, g * og, (g + 1) * og);
        gb[g] = state.bias == null ? null : Arrays.copyOfRange(state.bias, g * og, (g + 1) * og);
      }
      w = gw;
      wScale = gs;
      wRowSum = gr;
      bias = gb;
    }
    return state;
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

  @Override
  public Tensor forward(Tensor x) {
    boolean unbatched = x.dim() == 3;
    if ((x.dim() != 4 && !unbatched) || x.size(x.dim() - 3) != inChannels) {
      throw Check.fail(op, "input must be [N, " + inChannels + ", H, W] or [" + inChannels + ", H, W]", "input", x);
    }
    StaticInt8.checkInput(op, x);
    StaticState st = operands();
    QParams input = st.input;
    QParams output = st.output;
    Int8Matrix[] w = this.w;
    float[][] wScale = this.wScale;
    int[][] wRowSum = this.wRowSum;
    float[][] bias = this.bias;
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
    int plane = oh * ow;
    byte[] cols = new byte[k * m];
    byte[] q = new byte[n * outChannels * plane];
    for (int g = 0; g < groups; g++) {
      im2col(xq, aZero, n, h, wd, oh, ow, g * cg, cg, cols);
      backend.int8ConvRequantize(w[g], wRowSum[g], wScale[g], bias[g], cols, aZero, aScale, outScale, outZero, outMin,
          t.max(), q, m, plane, g * og * plane, outChannels * plane);
    }
    float[] out = new float[q.length];
    if (t == QDType.QUINT8) {
      for (int i = 0; i < q.length; i++) out[i] = ((q[i] & 0xFF) - outZero) * outScale;
    } else {
      for (int i = 0; i < q.length; i++) out[i] = (t.read(q[i]) - outZero) * outScale;
    }
    return unbatched ? Tensor.of(out, outChannels, oh, ow) : Tensor.of(out, n, outChannels, oh, ow);
  }

  /** Eight bytes of a byte[] at a time (any offset), for im2col's runs. */
  private static final VarHandle LONGS = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.nativeOrder());

  /**
   * The columns k-major, [cg * kH * kW, n * OH * OW]: row (c, ky, kx) holds that patch element of every output pixel
   * (b, oy, ox), over input channels [c0, c0 + cg); outside the input: the zero point (real 0). Each output row's
   * pixels inside the input are one strided run.
   */
  private void im2col(byte[] xq, byte aZero, int n, int h, int wd, int oh, int ow, int c0, int cg, byte[] cols) {
    int plane = oh * ow;
    int m = n * plane;
    int s1 = stride[1];
    int row = 0;
    for (int c = 0; c < cg; c++) {
      for (int ky = 0; ky < kh; ky++) {
        for (int kx = 0; kx < kw; kx++, row++) {
          int ix0 = kx * dilation[1] - pad[2];   // input column of ox = 0
          int lo = ix0 >= 0 ? 0 : Math.min(ow, (-ix0 + s1 - 1) / s1);
          int hi = wd - ix0 <= 0 ? 0 : Math.min(ow, (wd - ix0 + s1 - 1) / s1);
          if (hi < lo) hi = lo;
          for (int b = 0; b < n; b++) {
            int base = (b * inChannels + c0 + c) * h * wd;
            for (int oy = 0; oy < oh; oy++) {
              int o = row * m + b * plane + oy * ow;
              int iy = oy * stride[0] - pad[0] + ky * dilation[0];
              if (iy < 0 || iy >= h) {
                Arrays.fill(cols, o, o + ow, aZero);
                continue;
              }
              // the runs are short (a row of the output): plain loops, eight bytes a step where the stride is 1
              for (int ox = 0; ox < lo; ox++) cols[o + ox] = aZero;
              int src = base + iy * wd + ix0;
              if (s1 == 1) {
                int ox = lo;
                for (; ox + 8 <= hi; ox += 8) LONGS.set(cols, o + ox, (long) LONGS.get(xq, src + ox));
                for (; ox < hi; ox++) cols[o + ox] = xq[src + ox];
              } else {
                for (int ox = lo; ox < hi; ox++) cols[o + ox] = xq[src + ox * s1];
              }
              for (int ox = hi; ox < ow; ox++) cols[o + ox] = aZero;
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
        + outputQParams().scales()[0] + ", zero_point=" + outputQParams().zeroPoints()[0];
  }
}
