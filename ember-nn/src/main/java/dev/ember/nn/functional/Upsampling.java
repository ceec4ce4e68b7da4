package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.backend.LinearAxis;
import dev.ember.backend.ResamplingKernels;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Resizing by interpolation, as F.interpolate (PyTorch 1.13): {@code "nearest"} for [N, C, L] and
 * [N, C, H, W] inputs, {@code "bilinear"} for [N, C, H, W]; F32 or F64.
 *
 * <p>The output size is {@code size}, or {@code floor(in * scaleFactor)}. When a scale factor is
 * given (and {@code recomputeScaleFactor} is not true) the kernels map output to input positions with
 * {@code 1 / scaleFactor}, otherwise with {@code in / out}, as PyTorch does; the index arithmetic is
 * done in the input's precision (float32 for F32), as PyTorch's kernels do, so positions round the
 * same way. Nearest: {@code src = min(floor(dst * scale), in - 1)}, as PyTorch 1.13's forward for
 * [N, C, L] and [N, C, H, W] (C > 1) inputs. (Its backward, and its forward for single-channel
 * images, which take the channels-last kernel, instead copy an unchanged size and map a doubled
 * size to {@code dst / 2} whatever the scale factor: a gradient inconsistent with the forward. Here
 * the backward is the exact gradient of the forward; the two differ only for scale factors that
 * give an unchanged or doubled size without being 1 or 2.) Bilinear without
 * {@code alignCorners}: {@code src = max(scale * (dst + 0.5) - 0.5, 0)}, with it:
 * {@code src = dst * (in - 1) / (out - 1)}, and an axis whose size does not change is copied. Each op
 * is one pass over contiguous planes, parallel over N*C; the backward adds every output gradient
 * back to the taps it read (first-order gradients only).
 */
public final class Upsampling {
  private Upsampling() {}

  /** Resizes to {@code size} (one value per spatial dim, or one for all). */
  public static Tensor interpolate(Tensor input, int[] size, String mode) {
    return interpolate(input, size, null, mode, null, null);
  }

  /** Resizes by {@code scaleFactor} in every spatial dim. */
  public static Tensor interpolate(Tensor input, double scaleFactor, String mode) {
    return interpolate(input, null, new double[] {scaleFactor}, mode, null, null);
  }

  /**
   * F.interpolate: exactly one of {@code size} and {@code scaleFactor} (one value per spatial dim,
   * or one for all) is non-null; {@code mode} is "nearest" or "bilinear"; {@code alignCorners} may
   * only be set for "bilinear" (null means false); {@code recomputeScaleFactor} true makes the
   * kernels use in / out instead of the given scale (null means false).
   */
  public static Tensor interpolate(Tensor input, int[] size, double[] scaleFactor, String mode,
      Boolean alignCorners, Boolean recomputeScaleFactor) {
    Tensor out = interpolateUntraced(input, size, scaleFactor, mode, alignCorners, recomputeScaleFactor);
    return Tracing.active() ? Tracing.op("bilinear".equals(mode) ? "upsample_bilinear2d"
        : input.dim() == 3 ? "upsample_nearest1d" : "upsample_nearest2d", out, new Tensor[] {input}, new Object[] {"size", Arrays.toString(size), "scale_factor",
        Arrays.toString(scaleFactor), "align_corners", alignCorners, "recompute_scale_factor", recomputeScaleFactor},
        in -> interpolate(in[0], size, scaleFactor, mode, alignCorners, recomputeScaleFactor)) : out;
  }

  private static Tensor interpolateUntraced(Tensor input, int[] size, double[] scaleFactor, String mode,
      Boolean alignCorners, Boolean recomputeScaleFactor) {
    String op = "interpolate";
    Check.floating(op, input);
    if (HalfCompute.applies(input)) {
      return HalfCompute.like(op, input,
          t -> interpolate(t[0], size, scaleFactor, mode, alignCorners, recomputeScaleFactor), input);
    }
    boolean bilinear;
    if ("nearest".equals(mode)) {
      bilinear = false;
      if (alignCorners != null) {
        throw Check.fail(op, "align_corners can only be set with the interpolating modes (bilinear), not with"
            + " mode 'nearest'", "input", input);
      }
    } else if ("bilinear".equals(mode)) {
      bilinear = true;
    } else {
      throw Check.fail(op, "mode must be 'nearest' or 'bilinear', got '" + mode + "'", "input", input);
    }
    int r = input.dim();
    if (bilinear && r != 4) {
      throw Check.fail(op, "mode 'bilinear' needs a 4-d [N, C, H, W] input, got rank " + r, "input", input);
    }
    if (r != 3 && r != 4) {
      throw Check.fail(op, "mode 'nearest' needs a 3-d [N, C, L] or 4-d [N, C, H, W] input, got rank " + r,
          "input", input);
    }
    int nd = r - 2;
    if ((size == null) == (scaleFactor == null)) {
      throw Check.fail(op, size == null ? "either size or scale_factor must be given"
          : "only one of size and scale_factor may be given", "input", input);
    }
    boolean recompute = recomputeScaleFactor != null && recomputeScaleFactor;
    if (recompute && size != null) {
      throw Check.fail(op, "recompute_scale_factor is not meaningful with an explicit size", "input", input);
    }
    int[] shape = input.shapeRef();
    int[] in = Arrays.copyOfRange(shape, 2, r);
    int[] out = new int[nd];
    double[] scales = null; // the scale the kernels use, 1 / scale_factor, or null for in / out
    if (size != null) {
      if (size.length != 1 && size.length != nd) {
        throw Check.fail(op, "size must have 1 or " + nd + " values for a " + nd + "-d spatial input, got "
            + Arrays.toString(size), "input", input);
      }
      for (int i = 0; i < nd; i++) out[i] = size[size.length == 1 ? 0 : i];
    } else {
      if (scaleFactor.length != 1 && scaleFactor.length != nd) {
        throw Check.fail(op, "scale_factor must have 1 or " + nd + " values for a " + nd + "-d spatial input, got "
            + Arrays.toString(scaleFactor), "input", input);
      }
      if (!recompute) scales = new double[nd];
      for (int i = 0; i < nd; i++) {
        double sf = scaleFactor[scaleFactor.length == 1 ? 0 : i];
        if (!(sf > 0) || Double.isInfinite(sf)) {
          throw Check.fail(op, "scale_factor must be positive and finite, got " + sf, "input", input);
        }
        out[i] = (int) Math.floor(in[i] * sf);
        if (scales != null) scales[i] = sf;
      }
    }
    for (int i = 0; i < nd; i++) {
      if (in[i] <= 0 || out[i] <= 0) {
        throw Check.fail(op, "input and output sizes must be greater than 0, got input " + Arrays.toString(in)
            + " and output " + Arrays.toString(out), "input", input);
      }
    }
    boolean f32 = input.dtype() == DType.F32;
    int ih = nd == 2 ? in[0] : 1;
    int iw = in[nd - 1];
    int oh = nd == 2 ? out[0] : 1;
    int ow = out[nd - 1];
    Double sh = nd == 2 && scales != null ? scales[0] : null;
    Double sw = scales != null ? scales[nd - 1] : null;
    int[] outShape = Arrays.copyOf(shape, r);
    for (int i = 0; i < nd; i++) outShape[2 + i] = out[i];
    int planes = shape[0] * shape[1];
    int[] inShape = input.shape();
    Tensor x = input.contiguous();
    Tensor y = input.newZeros(outShape);
    ResamplingKernels kernels = x.device().backend().resampling();
    if (!bilinear) {
      int[] hIdx = nearestIndex(ih, oh, sh);
      int[] wIdx = nearestIndex(iw, ow, sw);
      kernels.nearestForward(x, planes, ih, iw, hIdx, wIdx, y);
      String name = nd == 2 ? "upsample_nearest2d" : "upsample_nearest1d";
      return Autograd.record(name, y, (ctx, g) -> {
        Tensor gc = g.contiguous();
        Tensor gi = gc.newZeros(inShape);
        kernels.nearestBackward(gc, planes, ih, iw, hIdx, wIdx, gi);
        return new Tensor[] {gi};
      }, input);
    }
    boolean ac = alignCorners != null && alignCorners;
    LinearAxis lh = linear(ih, oh, ac, sh, f32);
    LinearAxis lw = linear(iw, ow, ac, sw, f32);
    kernels.bilinearForward(x, planes, ih, iw, lh, lw, y);
    return Autograd.record("upsample_bilinear2d", y, (ctx, g) -> {
      Tensor gc = g.contiguous();
      Tensor gi = gc.newZeros(inShape);
      kernels.bilinearBackward(gc, planes, ih, iw, lh, lw, gi);
      return new Tensor[] {gi};
    }, input);
  }

  // ================================================================== index tables

  /**
   * PyTorch's compute_scales_value: the given scale as (T) (1.0 / scale), else (T) in / out, with T
   * float32 for nearest (always) and for F32 bilinear.
   */
  private static double scaleValue(Double scale, int in, int out, boolean f32) {
    if (scale != null && scale > 0) return f32 ? (double) (float) (1.0 / scale) : 1.0 / scale;
    return f32 ? (double) ((float) in / out) : (double) in / out;
  }

  /** Nearest source index per output position: min(floor(dst * scale), in - 1), in float32. */
  static int[] nearestIndex(int in, int out, Double scale) {
    float s = (float) scaleValue(scale, in, out, true);
    int[] idx = new int[out];
    for (int o = 0; o < out; o++) idx[o] = Math.min((int) Math.floor(o * s), in - 1);
    return idx;
  }

  /**
   * PyTorch's compute_source_index_and_lambda, in float32 when {@code f32}: an unchanged size is
   * copied; otherwise the source coordinate (clamped at 0 without align_corners) splits into the
   * floor index and the fraction.
   */
  static LinearAxis linear(int in, int out, boolean alignCorners, Double scale, boolean f32) {
    int[] i0 = new int[out];
    int[] i1 = new int[out];
    double[] l0 = new double[out];
    double[] l1 = new double[out];
    double ratio = alignCorners ? (out > 1 ? (f32 ? (double) ((float) (in - 1) / (out - 1))
        : (double) (in - 1) / (out - 1)) : 0) : scaleValue(scale, in, out, f32);
    for (int o = 0; o < out; o++) {
      if (in == out) {
        i0[o] = o;
        i1[o] = o;
        l0[o] = 1;
        l1[o] = 0;
        continue;
      }
      double src;
      int idx;
      double lam;
      if (f32) {
        float r = (float) ratio;
        float s = alignCorners ? r * o : r * (o + 0.5f) - 0.5f;
        if (!alignCorners && s < 0) s = 0;
        idx = Math.min((int) Math.floor(s), in - 1);
        float lf = Math.min(Math.max(s - idx, 0f), 1f);
        lam = lf;
        l0[o] = 1f - lf;
      } else {
        src = alignCorners ? ratio * o : ratio * (o + 0.5) - 0.5;
        if (!alignCorners && src < 0) src = 0;
        idx = Math.min((int) Math.floor(src), in - 1);
        lam = Math.min(Math.max(src - idx, 0), 1);
        l0[o] = 1 - lam;
      }
      i0[o] = idx;
      i1[o] = idx + (idx < in - 1 ? 1 : 0);
      l1[o] = lam;
    }
    return new LinearAxis(i0, i1, l0, l1);
  }
}
