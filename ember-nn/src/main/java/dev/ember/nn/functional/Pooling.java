package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.PoolAxis;
import dev.ember.backend.PoolingKernels;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Max, average and adaptive pooling over the trailing one or two dims, with PyTorch's semantics,
 * defaults and output-size rules ({@code torch.nn.functional} names in error messages). Inputs are
 * [N, C, H, W] or unbatched [C, H, W] (1-d: [N, C, L] or [C, L]), F32 or F64.
 *
 * <p>Output size per spatial dim: {@code floor((in + 2 pad - dilation (k - 1) - 1 + (ceil ? stride - 1
 * : 0)) / stride) + 1}, and in ceil mode one less when the last window would start beyond the input
 * and the left padding. Padding must be at most half the kernel. Max pooling takes the first maximum
 * of a window (the last NaN when the window holds one) and routes the gradient there; average
 * pooling spreads it over the window's taps. Adaptive pooling uses the windows
 * {@code [floor(i in / out), ceil((i + 1) in / out))}. Each op is one pass over contiguous planes,
 * parallel over N*C (see {@link PoolingKernels}); the backward is not itself recorded (first-order
 * gradients only).
 */
public final class Pooling {
  private Pooling() {}

  /**
   * Values and argmax indices of a max pooling, as PyTorch's {@code return_indices=True}: the
   * indices (I64, the values' shape) are flat positions within each input plane, {@code ih * W + iw}
   * (for 1-d pooling, the position along L).
   */
  public record WithIndices(Tensor values, Tensor indices) {}

  // ================================================================== max pooling

  /** 2-d max pooling with a square kernel, stride = kernel, no padding, dilation 1, floor mode. */
  public static Tensor maxPool2d(Tensor input, int kernelSize) {
    return maxPool2d(input, new int[] {kernelSize}, null, new int[] {0}, new int[] {1}, false);
  }

  /**
   * 2-d max pooling, as F.max_pool2d. Each of {@code kernelSize}, {@code stride}, {@code padding} and
   * {@code dilation} has one value (used for both dims) or two (H, W); a null or empty
   * {@code stride} means the kernel size.
   */
  public static Tensor maxPool2d(Tensor input, int[] kernelSize, int[] stride, int[] padding, int[] dilation,
      boolean ceilMode) {
    Tensor out = maxPool2dUntraced(input, kernelSize, stride, padding, dilation, ceilMode);
    return Tracing.active() ? Tracing.op("max_pool2d", out, new Tensor[] {input}, new Object[] {"kernel_size",
        Arrays.toString(kernelSize), "stride", Arrays.toString(stride), "padding", Arrays.toString(padding),
        "dilation", Arrays.toString(dilation), "ceil_mode", ceilMode},
        in -> maxPool2d(in[0], kernelSize, stride, padding, dilation, ceilMode)) : out;
  }

  private static Tensor maxPool2dUntraced(Tensor input, int[] kernelSize, int[] stride, int[] padding, int[] dilation,
      boolean ceilMode) {
    return max("max_pool2d", input, 2, kernelSize, stride, padding, dilation, ceilMode, false).values();
  }

  /** {@link #maxPool2d(Tensor, int[], int[], int[], int[], boolean)} with the argmax indices too. */
  public static WithIndices maxPool2dWithIndices(Tensor input, int[] kernelSize, int[] stride, int[] padding,
      int[] dilation, boolean ceilMode) {
    return max("max_pool2d", input, 2, kernelSize, stride, padding, dilation, ceilMode, true);
  }

  /** 1-d max pooling with stride = kernel, no padding, dilation 1, floor mode. */
  public static Tensor maxPool1d(Tensor input, int kernelSize) {
    return maxPool1d(input, kernelSize, null, 0, 1, false);
  }

  /** 1-d max pooling over the last dim, as F.max_pool1d; a null {@code stride} means the kernel size. */
  public static Tensor maxPool1d(Tensor input, int kernelSize, Integer stride, int padding, int dilation,
      boolean ceilMode) {
    Tensor out = maxPool1dUntraced(input, kernelSize, stride, padding, dilation, ceilMode);
    return Tracing.active() ? Tracing.op("max_pool1d", out, new Tensor[] {input},
        new Object[] {"kernel_size", kernelSize, "stride", stride, "padding", padding, "dilation", dilation,
        "ceil_mode", ceilMode},
        in -> maxPool1d(in[0], kernelSize, stride, padding, dilation, ceilMode)) : out;
  }

  private static Tensor maxPool1dUntraced(Tensor input, int kernelSize, Integer stride, int padding, int dilation,
      boolean ceilMode) {
    return max("max_pool1d", input, 1, new int[] {kernelSize}, stride == null ? null : new int[] {stride},
        new int[] {padding}, new int[] {dilation}, ceilMode, false).values();
  }

  /** {@link #maxPool1d(Tensor, int, Integer, int, int, boolean)} with the argmax indices (positions along L). */
  public static WithIndices maxPool1dWithIndices(Tensor input, int kernelSize, Integer stride, int padding,
      int dilation, boolean ceilMode) {
    return max("max_pool1d", input, 1, new int[] {kernelSize}, stride == null ? null : new int[] {stride},
        new int[] {padding}, new int[] {dilation}, ceilMode, true);
  }

  private static WithIndices max(String op, Tensor input, int nd, int[] kernelSize, int[] stride, int[] padding,
      int[] dilation, boolean ceilMode, boolean withIndices) {
    Spatial sp = spatial(op, input, nd);
    int[] k = pair(op, "kernel_size", kernelSize, nd, input);
    int[] s = stride == null || stride.length == 0 ? k : pair(op, "stride", stride, nd, input);
    int[] p = pair(op, "padding", padding, nd, input);
    int[] d = pair(op, "dilation", dilation, nd, input);
    checkWindow(op, input, sp, nd, k, s, p, d);
    PoolAxis h = maxAxis(sp.h, k[0], s[0], p[0], d[0], ceilMode);
    PoolAxis w = maxAxis(sp.w, k[1], s[1], p[1], d[1], ceilMode);
    return maxRun(op, input, sp, h, w, withIndices);
  }

  private static WithIndices maxRun(String op, Tensor input, Spatial sp, PoolAxis h, PoolAxis w,
      boolean withIndices) {
    if (HalfCompute.applies(input)) { // the maxima are exact in F32, so the rounding gives back the input's values
      Tensor[] indices = new Tensor[1];
      Tensor values = HalfCompute.like(op, input, t -> {
        WithIndices r = maxRun(op, t[0], sp, h, w, withIndices);
        indices[0] = r.indices();
        return r.values();
      }, input);
      return new WithIndices(values, indices[0]);
    }
    Tensor x = input.contiguous();
    int[] outShape = sp.outShape(h.out(), w.out());
    // the kernels write every maximum and every index: no zero-fill of a pooled array
    Tensor out = input.newEmpty(outShape);
    boolean grad = Grad.enabled() && input.requiresGrad();
    // each maximum's plane-local index, for the backward and the returned indices
    Tensor arg = grad || withIndices ? input.newEmpty(DType.I32, outShape) : null;
    PoolingKernels kernels = x.device().backend().pooling();
    kernels.maxForward(x, sp.planes, h, w, out, arg);
    // the indices, like a tensor made from an array, outlive any MemoryScope
    Tensor indices = withIndices ? MemoryScope.escape(arg.to(DType.I64)) : null;
    int[] inShape = input.shape();
    Tensor values = Autograd.record(op, out, (ctx, g) -> {
      Tensor gc = g.contiguous();
      // windows that tile the input (2x2, stride 2): the kernel writes every element, so no zero-fill
      Tensor gi = kernels.maxBackwardWritesAll(h, w) ? gc.newEmpty(inShape) : gc.newZeros(inShape);
      kernels.maxBackward(gc, arg, sp.planes, h, w, gi);
      return new Tensor[] {gi};
    }, input);
    return new WithIndices(values, indices);
  }

  // ================================================================== average pooling

  /** 2-d average pooling with a square kernel, stride = kernel, no padding, floor mode, padding counted. */
  public static Tensor avgPool2d(Tensor input, int kernelSize) {
    return avgPool2d(input, new int[] {kernelSize}, null, new int[] {0}, false, true, null);
  }

  /**
   * 2-d average pooling, as F.avg_pool2d: {@code countIncludePad} divides by the window's extent
   * including the zero padding (clipped to input + padding), otherwise by its in-bounds taps;
   * {@code divisorOverride} (non-null, non-zero) replaces either divisor. A null or empty
   * {@code stride} means the kernel size.
   */
  public static Tensor avgPool2d(Tensor input, int[] kernelSize, int[] stride, int[] padding, boolean ceilMode,
      boolean countIncludePad, Integer divisorOverride) {
    Tensor out = avgPool2dUntraced(input, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
    return Tracing.active() ? Tracing.op("avg_pool2d", out, new Tensor[] {input},
        new Object[] {"kernel_size", Arrays.toString(kernelSize), "stride", Arrays.toString(stride),
        "padding", Arrays.toString(padding), "ceil_mode", ceilMode, "count_include_pad", countIncludePad,
        "divisor_override", divisorOverride},
        in -> avgPool2d(in[0], kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride)) : out;
  }

  private static Tensor avgPool2dUntraced(Tensor input, int[] kernelSize, int[] stride, int[] padding, boolean ceilMode,
      boolean countIncludePad, Integer divisorOverride) {
    return avg("avg_pool2d", input, 2, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
  }

  /** 1-d average pooling with stride = kernel, no padding, floor mode, padding counted. */
  public static Tensor avgPool1d(Tensor input, int kernelSize) {
    return avgPool1d(input, kernelSize, null, 0, false, true);
  }

  /** 1-d average pooling over the last dim, as F.avg_pool1d; a null {@code stride} means the kernel size. */
  public static Tensor avgPool1d(Tensor input, int kernelSize, Integer stride, int padding, boolean ceilMode,
      boolean countIncludePad) {
    Tensor out = avgPool1dUntraced(input, kernelSize, stride, padding, ceilMode, countIncludePad);
    return Tracing.active() ? Tracing.op("avg_pool1d", out, new Tensor[] {input},
        new Object[] {"kernel_size", kernelSize, "stride", stride, "padding", padding, "ceil_mode", ceilMode,
        "count_include_pad", countIncludePad},
        in -> avgPool1d(in[0], kernelSize, stride, padding, ceilMode, countIncludePad)) : out;
  }

  private static Tensor avgPool1dUntraced(Tensor input, int kernelSize, Integer stride, int padding, boolean ceilMode,
      boolean countIncludePad) {
    return avg("avg_pool1d", input, 1, new int[] {kernelSize}, stride == null ? null : new int[] {stride},
        new int[] {padding}, ceilMode, countIncludePad, null);
  }

  private static Tensor avg(String op, Tensor input, int nd, int[] kernelSize, int[] stride, int[] padding,
      boolean ceilMode, boolean countIncludePad, Integer divisorOverride) {
    Spatial sp = spatial(op, input, nd);
    int[] k = pair(op, "kernel_size", kernelSize, nd, input);
    int[] s = stride == null || stride.length == 0 ? k : pair(op, "stride", stride, nd, input);
    int[] p = pair(op, "padding", padding, nd, input);
    if (divisorOverride != null && divisorOverride == 0) {
      throw Check.fail(op, "divisor_override must not be zero", "input", input);
    }
    checkWindow(op, input, sp, nd, k, s, p, new int[] {1, 1});
    PoolAxis h = avgAxis(sp.h, k[0], s[0], p[0], ceilMode, countIncludePad, divisorOverride);
    PoolAxis w = avgAxis(sp.w, k[1], s[1], p[1], ceilMode, countIncludePad, divisorOverride == null ? null : 1);
    return avgRun(op, input, sp, h, w);
  }

  private static Tensor avgRun(String op, Tensor input, Spatial sp, PoolAxis h, PoolAxis w) {
    if (HalfCompute.applies(input)) return HalfCompute.like(op, input, t -> avgRun(op, t[0], sp, h, w), input);
    Tensor x = input.contiguous();
    Tensor out = input.newZeros(sp.outShape(h.out(), w.out()));
    PoolingKernels kernels = x.device().backend().pooling();
    kernels.avgForward(x, sp.planes, h, w, out);
    int[] inShape = input.shape();
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor gc = g.contiguous();
      Tensor gi = gc.newZeros(inShape);
      kernels.avgBackward(gc, sp.planes, h, w, gi);
      return new Tensor[] {gi};
    }, input);
  }

  // ================================================================== adaptive pooling

  /** Adaptive average pooling to a square {@code outputSize x outputSize}. */
  public static Tensor adaptiveAvgPool2d(Tensor input, int outputSize) {
    return adaptiveAvgPool2d(input, outputSize, (Integer) outputSize);
  }

  /**
   * Adaptive average pooling of the last two dims to {@code outH x outW}, as F.adaptive_avg_pool2d:
   * output (i, j) averages rows {@code [floor(i H / outH), ceil((i + 1) H / outH))} and the columns
   * likewise. A null size keeps the input's (PyTorch's None).
   */
  public static Tensor adaptiveAvgPool2d(Tensor input, Integer outH, Integer outW) {
    Tensor out = adaptiveAvgPool2dUntraced(input, outH, outW);
    return Tracing.active() ? Tracing.op("adaptive_avg_pool2d", out, new Tensor[] {input},
        new Object[] {"output_size", outH + "x" + outW},
        in -> adaptiveAvgPool2d(in[0], outH, outW)) : out;
  }

  private static Tensor adaptiveAvgPool2dUntraced(Tensor input, Integer outH, Integer outW) {
    String op = "adaptive_avg_pool2d";
    Spatial sp = spatial(op, input, 2);
    int oh = adaptiveSize(op, outH, sp.h, 0, input);
    int ow = adaptiveSize(op, outW, sp.w, 0, input);
    if (HalfCompute.applies(input)) { // before the global path, whose mean autocast would run in F32
      return HalfCompute.like(op, input, t -> adaptiveAvgPool2d(t[0], outH, outW), input);
    }
    if (oh == 1 && ow == 1 && sp.h > 0 && sp.w > 0) {
      // global average pooling (a CNN's head) is a mean over the plane: the core's vectorized reduction
      return input.mean(new int[] {-2, -1}, true);
    }
    return avgRun(op, input, sp, adaptiveAxis(sp.h, oh, true), adaptiveAxis(sp.w, ow, true));
  }

  /** Adaptive max pooling to a square {@code outputSize x outputSize}. */
  public static Tensor adaptiveMaxPool2d(Tensor input, int outputSize) {
    return adaptiveMaxPool2d(input, outputSize, (Integer) outputSize);
  }

  /**
   * Adaptive max pooling of the last two dims to {@code outH x outW} (windows as
   * {@link #adaptiveAvgPool2d(Tensor, Integer, Integer)}), as F.adaptive_max_pool2d; a null size
   * keeps the input's.
   */
  public static Tensor adaptiveMaxPool2d(Tensor input, Integer outH, Integer outW) {
    Tensor out = adaptiveMaxPool2dUntraced(input, outH, outW);
    return Tracing.active() ? Tracing.op("adaptive_max_pool2d", out, new Tensor[] {input},
        new Object[] {"output_size", outH + "x" + outW},
        in -> adaptiveMaxPool2d(in[0], outH, outW)) : out;
  }

  private static Tensor adaptiveMaxPool2dUntraced(Tensor input, Integer outH, Integer outW) {
    return adaptiveMax(input, outH, outW, false).values();
  }

  /** {@link #adaptiveMaxPool2d(Tensor, Integer, Integer)} with the argmax indices too. */
  public static WithIndices adaptiveMaxPool2dWithIndices(Tensor input, Integer outH, Integer outW) {
    return adaptiveMax(input, outH, outW, true);
  }

  private static WithIndices adaptiveMax(Tensor input, Integer outH, Integer outW, boolean withIndices) {
    String op = "adaptive_max_pool2d";
    Spatial sp = spatial(op, input, 2);
    int oh = adaptiveSize(op, outH, sp.h, 1, input);
    int ow = adaptiveSize(op, outW, sp.w, 1, input);
    return maxRun(op, input, sp, adaptiveAxis(sp.h, oh, false), adaptiveAxis(sp.w, ow, false), withIndices);
  }

  // ================================================================== geometry

  /**
   * Output size of one pooled dim, PyTorch's pooling_output_shape: floor division, and in ceil mode
   * the last window must start inside the input or the left padding.
   */
  static long outputSize(int in, int k, int s, int p, int d, boolean ceilMode) {
    long num = (long) in + 2L * p - (long) d * (k - 1) - 1 + (ceilMode ? s - 1 : 0);
    long out = Math.floorDiv(num, (long) s) + 1;
    if (ceilMode && (out - 1) * s >= (long) in + p) out--;
    return out;
  }

  private static PoolAxis maxAxis(int in, int k, int s, int p, int d, boolean ceilMode) {
    int out = (int) outputSize(in, k, s, p, d, ceilMode);
    int[] start = new int[out];
    int[] end = new int[out];
    for (int o = 0; o < out; o++) {
      int s0 = o * s - p;
      end[o] = Math.min(s0 + (k - 1) * d + 1, in);
      while (s0 < 0) s0 += d;
      start[o] = s0;
    }
    return new PoolAxis(in, out, start, end, d, null);
  }

  private static PoolAxis avgAxis(int in, int k, int s, int p, boolean ceilMode, boolean countIncludePad,
      Integer divisor) {
    int out = (int) outputSize(in, k, s, p, 1, ceilMode);
    int[] start = new int[out];
    int[] end = new int[out];
    double[] div = new double[out];
    for (int o = 0; o < out; o++) {
      int s0 = o * s - p;
      int e0 = Math.min(s0 + k, in + p);
      start[o] = Math.max(s0, 0);
      end[o] = Math.min(e0, in);
      div[o] = divisor != null ? divisor : countIncludePad ? e0 - s0 : end[o] - start[o];
    }
    return new PoolAxis(in, out, start, end, 1, div);
  }

  private static PoolAxis adaptiveAxis(int in, int out, boolean avg) {
    int[] start = new int[out];
    int[] end = new int[out];
    double[] div = avg ? new double[out] : null;
    for (int o = 0; o < out; o++) {
      start[o] = (int) ((long) o * in / out);
      end[o] = (int) (((long) (o + 1) * in + out - 1) / out);
      if (avg) div[o] = end[o] - start[o];
    }
    return new PoolAxis(in, out, start, end, 1, div);
  }

  /** The input viewed as [planes, h, w] (h = 1 for 1-d pooling), and how to shape the output. */
  private record Spatial(int[] lead, int planes, int h, int w, int nd) {
    int[] outShape(int oh, int ow) {
      int[] s = Arrays.copyOf(lead, lead.length + nd);
      if (nd == 2) s[lead.length] = oh;
      s[s.length - 1] = ow;
      return s;
    }
  }

  private static Spatial spatial(String op, Tensor input, int nd) {
    Check.floating(op, input);
    int r = input.dim();
    if (r != nd + 1 && r != nd + 2) {
      String want = nd == 2 ? "a 3-d [C, H, W] or 4-d [N, C, H, W] input" : "a 2-d [C, L] or 3-d [N, C, L] input";
      throw Check.fail(op, "expected " + want + ", got rank " + r, "input", input);
    }
    int[] shape = input.shapeRef();
    for (int i = r == nd + 2 ? 1 : 0; i < r; i++) {
      if (shape[i] == 0) {
        throw Check.fail(op, "expected non-zero sizes in the non-batch dims", "input", input);
      }
    }
    int[] lead = Arrays.copyOf(shape, r - nd);
    int planes = 1;
    for (int v : lead) planes *= v;
    int h = nd == 2 ? shape[r - 2] : 1;
    return new Spatial(lead, planes, h, shape[r - 1], nd);
  }

  /**
   * A window parameter as (H, W): one value for both dims or {@code nd} values; 1-d pooling gets
   * (1, value) so it runs as 2-d pooling over rows of height 1.
   */
  private static int[] pair(String op, String name, int[] v, int nd, Tensor input) {
    if (v == null || (v.length != 1 && v.length != nd)) {
      throw Check.fail(op, name + " must have " + (nd == 1 ? "1 value" : "1 or 2 values") + ", got "
          + (v == null ? "null" : Arrays.toString(v)), "input", input);
    }
    if (nd == 1) {
      boolean window = name.equals("kernel_size") || name.equals("stride") || name.equals("dilation");
      return new int[] {window ? 1 : 0, v[0]};
    }
    return v.length == 1 ? new int[] {v[0], v[0]} : v.clone();
  }

  private static void checkWindow(String op, Tensor input, Spatial sp, int nd, int[] k, int[] s, int[] p,
      int[] d) {
    if (k[0] <= 0 || k[1] <= 0) {
      throw Check.fail(op, "kernel_size must be greater than zero, got " + show(k, nd), "input", input);
    }
    if (s[0] <= 0 || s[1] <= 0) {
      throw Check.fail(op, "stride must be greater than zero, got " + show(s, nd), "input", input);
    }
    if (d[0] <= 0 || d[1] <= 0) {
      throw Check.fail(op, "dilation must be greater than zero, got " + show(d, nd), "input", input);
    }
    if (p[0] < 0 || p[1] < 0) {
      throw Check.fail(op, "padding must be non-negative, got " + show(p, nd), "input", input);
    }
    if (p[0] > k[0] / 2 || p[1] > k[1] / 2) {
      throw Check.fail(op, "padding should be at most half of kernel_size, got padding=" + show(p, nd)
          + " and kernel_size=" + show(k, nd), "input", input);
    }
    int[] ek = {d[0] * (k[0] - 1) + 1, d[1] * (k[1] - 1) + 1};
    int[] padded = {sp.h + 2 * p[0], sp.w + 2 * p[1]};
    if (ek[0] > padded[0] || ek[1] > padded[1]) {
      int[] out = {(int) Math.max(0, outputSize(sp.h, k[0], s[0], p[0], d[0], false)),
          (int) Math.max(0, outputSize(sp.w, k[1], s[1], p[1], d[1], false))};
      throw Check.fail(op, "output size " + show(out, nd) + " is too small: the " + (ek[0] != k[0] || ek[1] != k[1]
          ? "dilated " : "") + "kernel " + show(ek, nd) + " is larger than the padded input " + show(padded, nd),
          "input", input);
    }
  }

  private static int adaptiveSize(String op, Integer v, int in, int min, Tensor input) {
    if (v == null) return in;
    if (v < min) {
      throw Check.fail(op, "output_size must be " + (min == 0 ? "non-negative" : "positive") + ", got " + v,
          "input", input);
    }
    return v;
  }

  /** (H, W) as a Python tuple for 2-d pooling, the single value for 1-d. */
  private static String show(int[] v, int nd) {
    return nd == 1 ? Integer.toString(v[1]) : "(" + v[0] + ", " + v[1] + ")";
  }
}
