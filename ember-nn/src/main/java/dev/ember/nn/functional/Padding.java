package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.backend.ResamplingKernels;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * Padding of the last one or two dimensions, as {@code F.pad}: {@code pad} lists (left, right) for
 * the last dimension, then (top, bottom) for the one before. Modes: {@code "constant"} (with
 * {@code value}; negative amounts crop), {@code "reflect"} (mirrors without repeating the edge:
 * each amount must be smaller than the dimension), {@code "replicate"} (repeats the edge) and
 * {@code "circular"} (wraps around; each amount at most the dimension). Every output element is
 * read from one input element (or is the constant), so the backward adds the upstream gradient
 * back at those positions, plane by plane.
 */
public final class Padding {
  private Padding() {}

  /** Constant zero padding. */
  public static Tensor pad(Tensor input, int[] pad) {
    return pad(input, pad, "constant", 0);
  }

  /** Padding in {@code mode}, with 0 as the constant. */
  public static Tensor pad(Tensor input, int[] pad, String mode) {
    return pad(input, pad, mode, 0);
  }

  /** Pads the last {@code pad.length / 2} dimensions (1 or 2) of {@code input} in {@code mode}. */
  public static Tensor pad(Tensor input, int[] pad, String mode, double value) {
    Tensor out = padUntraced(input, pad, mode, value);
    return Tracing.active() ? Tracing.op("pad", out, new Tensor[] {input},
        new Object[] {"pad", Arrays.toString(pad), "mode", mode, "value", value},
        in -> pad(in[0], pad, mode, value)) : out;
  }

  private static Tensor padUntraced(Tensor input, int[] pad, String mode, double value) {
    String op = "pad";
    Check.floating(op, input);
    String m = mode.toLowerCase(Locale.ROOT);
    if (!m.equals("constant") && !m.equals("reflect") && !m.equals("replicate") && !m.equals("circular")) {
      throw Check.fail(op, "unknown mode '" + mode + "' (expected constant, reflect, replicate or circular)",
          "input", input);
    }
    if (pad.length != 2 && pad.length != 4) {
      throw Check.fail(op, "pad must list (left, right) or (left, right, top, bottom), got " + pad.length
          + " values " + Arrays.toString(pad), "input", input);
    }
    if (HalfCompute.applies(input)) return HalfCompute.like(op, input, t -> pad(t[0], pad, mode, value), input);
    int nd = pad.length / 2;
    int r = input.dim();
    if (r < nd || (!m.equals("constant") && r < nd + 1)) {
      throw Check.fail(op, "padding " + nd + " dims in " + m + " mode needs an input of rank >= "
          + (m.equals("constant") ? nd : nd + 1) + ", got rank " + r, "input", input);
    }
    int h = nd == 2 ? input.shapeRef()[r - 2] : 1;
    int w = input.shapeRef()[r - 1];
    int top = nd == 2 ? pad[2] : 0;
    int bottom = nd == 2 ? pad[3] : 0;
    checkAmounts(op, m, input, w, pad[0], pad[1], r - 1);
    if (nd == 2) checkAmounts(op, m, input, h, top, bottom, r - 2);
    int oh = h + top + bottom;
    int ow = w + pad[0] + pad[1];
    int[] outShape = input.shape();
    outShape[r - 1] = ow;
    if (nd == 2) outShape[r - 2] = oh;
    int[] mapH = map(h, top, oh, m);
    int[] mapW = map(w, pad[0], ow, m);
    Tensor x = input.contiguous();
    Tensor out = x.newZeros(outShape);
    int planes = h * w == 0 ? 0 : (int) (x.numel() / ((long) h * w));
    if (out.numel() == 0) return out;
    ResamplingKernels kernels = x.device().backend().resampling();
    kernels.padForward(x, planes, h, w, mapH, mapW, value, out);
    int[] inShape = input.shape();
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor gc = g.contiguous();
      Tensor dx = gc.newZeros(inShape);
      kernels.padBackward(gc, planes, h, w, mapH, mapW, dx);
      return new Tensor[] {dx};
    }, new Tensor[] {x});
  }

  private static void checkAmounts(String op, String m, Tensor input, int size, int lo, int hi, int dim) {
    int out = size + lo + hi;
    if (out < 0 || (out == 0 && size > 0)) {
      throw Check.fail(op, "padding (" + lo + ", " + hi + ") leaves no elements in dim " + dim + " of size " + size,
          "input", input);
    }
    if (m.equals("constant")) return;
    if (lo < 0 || hi < 0) {
      throw Check.fail(op, "negative padding (" + lo + ", " + hi + ") is only allowed in constant mode", "input", input);
    }
    switch (m) {
      case "reflect" -> {
        if (lo >= size || hi >= size) {
          throw Check.fail(op, "reflect padding (" + lo + ", " + hi + ") must be smaller than dim " + dim + " (size "
              + size + ")", "input", input);
        }
      }
      case "circular" -> {
        if (lo > size || hi > size) {
          throw Check.fail(op, "circular padding (" + lo + ", " + hi + ") must be at most dim " + dim + " (size "
              + size + ")", "input", input);
        }
      }
      default -> {
        if (size == 0 && lo + hi > 0) {
          throw Check.fail(op, "replicate padding of an empty dim " + dim, "input", input);
        }
      }
    }
  }

  /** For each output index, the input index it reads (-1: the constant). */
  private static int[] map(int n, int lo, int out, String m) {
    int[] src = new int[out];
    for (int o = 0; o < out; o++) {
      int i = o - lo;
      src[o] = switch (m) {
        case "reflect" -> i < 0 ? -i : i >= n ? 2 * (n - 1) - i : i;
        case "replicate" -> Math.max(0, Math.min(n - 1, i));
        case "circular" -> ((i % n) + n) % n;
        default -> i < 0 || i >= n ? -1 : i;
      };
    }
    return src;
  }
}
