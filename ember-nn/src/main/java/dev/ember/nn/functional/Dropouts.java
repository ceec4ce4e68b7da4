package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Dropout variants with PyTorch's semantics: in training each element (or channel) is zeroed with
 * probability {@code p} and the survivors are scaled by {@code 1 / (1 - p)} (inverted dropout, so
 * the expectation is unchanged and eval is the identity); {@code p = 1} gives zeros. The mask is
 * drawn from the given {@link Generator} in row-major order, one uniform per element (or channel),
 * so the same seed gives the same mask on every machine; a null generator means {@link Generator#global()}, as
 * torch's {@code generator=None}. The gradient is the upstream gradient
 * times the same scaled mask (the op is a multiplication by a constant tensor). On a BF16/F16 input the mask holds
 * the scale rounded to that dtype and the product is rounded once (torch's CPU dropout, bit for bit); alpha dropout
 * computes in F32 and rounds once.
 */
public final class Dropouts {
  private Dropouts() {}

  /** F.dropout(input, p, training). */
  public static Tensor dropout(Tensor input, double p, boolean training, Generator gen) {
    return dropout(input, p, training, false, gen);
  }

  /**
   * F.dropout(input, p, training, inplace): with {@code inplace}, the scaled mask multiplies input in place
   * ({@code mul_}, recorded for autograd) and input is returned; the same bits and gradient as without.
   */
  public static Tensor dropout(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    Tensor out = drawnUntraced(() -> dropoutUntraced(input, p, training, inplace, gen));
    return Tracing.active() ? Tracing.op("dropout", out,
        new Tensor[] {input}, new Object[] {"p", p, "training", training, "inplace", inplace},
        in -> dropout(in[0], p, training, inplace, gen)) : out;
  }

  private static Tensor dropoutUntraced(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    checkP("dropout", p, input);
    if (!training || p == 0) return input;
    Check.floating("dropout", input);
    Tensor m = mask(input.dtype(), input.shape(), p, gen).to(input.device());
    return inplace ? input.mul_(m) : input.mul(m);
  }

  /** Dropout with PyTorch's defaults (p = 0.5, training) and the global generator. */
  public static Tensor dropout(Tensor input) {
    return dropout(input, 0.5, true, Generator.global());
  }

  /**
   * F.dropout2d: zeroes whole channels of a [N, C, H, W] input (one draw per (n, c)), or of an
   * unbatched [C, H, W] input (one draw per c).
   */
  public static Tensor dropout2d(Tensor input, double p, boolean training, Generator gen) {
    return channelDropout("dropout2d", 2, input, p, training, false, gen);
  }

  /** F.dropout2d(input, p, training, inplace). */
  public static Tensor dropout2d(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return channelDropout("dropout2d", 2, input, p, training, inplace, gen);
  }

  /** F.dropout1d: zeroes whole channels of a [N, C, L] input, or of an unbatched [C, L] input. */
  public static Tensor dropout1d(Tensor input, double p, boolean training, Generator gen) {
    return channelDropout("dropout1d", 1, input, p, training, false, gen);
  }

  /** F.dropout1d(input, p, training, inplace). */
  public static Tensor dropout1d(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    return channelDropout("dropout1d", 1, input, p, training, inplace, gen);
  }

  /**
   * F.alpha_dropout, for SELU networks: dropped elements are set to SELU's negative saturation
   * {@code -lambda * alpha} and the result is affinely corrected, {@code a * (x * keep + alpha' *
   * (1 - keep)) + b}, so that zero mean and unit variance are kept.
   */
  public static Tensor alphaDropout(Tensor input, double p, boolean training, Generator gen) {
    Tensor out = drawnUntraced(() -> alphaDropoutUntraced(input, p, training, gen));
    return Tracing.active() ? Tracing.op("alpha_dropout", out, new Tensor[] {input},
        new Object[] {"p", p, "training", training, "inplace", false},
        in -> alphaDropout(in[0], p, training, gen)) : out;
  }

  private static Tensor alphaDropoutUntraced(Tensor input, double p, boolean training, Generator gen) {
    checkP("alpha_dropout", p, input);
    if (!training || p == 0) return input;
    Check.floating("alpha_dropout", input);
    if (HalfCompute.applies(input)) {
      return HalfCompute.like("alpha_dropout", input, t -> alphaDropout(t[0], p, training, gen), input);
    }
    if (p == 1) return input.mul(0);
    double alphaPrime = -1.7580993408473766; // -scale * alpha of SELU
    double a = 1 / Math.sqrt((alphaPrime * alphaPrime * p + 1) * (1 - p));
    Tensor keep = mask(input.dtype(), input.shape(), p, gen).to(input.device()).mul(1 - p); // back to 0/1
    Tensor dropped = keep.neg().add(1).mul(alphaPrime);
    double b = -a * alphaPrime * p;
    return input.mul(keep).add(dropped).mul(a).add(b);
  }

  /**
   * F.alpha_dropout(input, p, training, inplace): with {@code inplace}, the result is written into input by a
   * differentiable {@code copy_} (the same bits and gradient; no memory is saved, the affine steps need buffers).
   */
  public static Tensor alphaDropout(Tensor input, double p, boolean training, boolean inplace, Generator gen) {
    Tensor out = alphaDropout(input, p, training, gen);
    return inplace && out != input ? input.copy_(out) : out;
  }

  private static Tensor channelDropout(String op, int spatial, Tensor input, double p, boolean training,
      boolean inplace, Generator gen) {
    Tensor out = drawnUntraced(() -> channelDropoutUntraced(op, spatial, input, p, training, inplace, gen));
    return Tracing.active() ? Tracing.op(op, out, new Tensor[] {input}, new Object[] {"p", p, "training", training,
        "inplace", inplace}, in -> channelDropout(op, spatial, in[0], p, training, inplace, gen)) : out;
  }

  private static Tensor channelDropoutUntraced(String op, int spatial, Tensor input, double p, boolean training,
      boolean inplace, Generator gen) {
    checkP(op, p, input);
    int r = input.dim();
    if (r != spatial + 1 && r != spatial + 2) {
      throw Check.fail(op, "expected a " + (spatial + 2) + "-d batched or " + (spatial + 1)
          + "-d unbatched input, got rank " + r, "input", input);
    }
    if (!training || p == 0) return input;
    Check.floating(op, input);
    int[] ms = input.shape();
    for (int d = r - spatial; d < r; d++) ms[d] = 1;
    Tensor m = mask(input.dtype(), ms, p, gen).to(input.device());
    return inplace ? input.mul_(m) : input.mul(m);
  }

  /**
   * 0 with probability p, else 1 / (1 - p); one uniform draw per element, in row-major order, kept when
   * it falls below 1 - p: PyTorch's {@code bernoulli_(1 - p)}, so a seed drops the same elements in both.
   * Drawn on the host from the host {@link Generator} (the callers move it to the input's device), so a model on
   * any device drops the same elements for a seed.
   */
  static Tensor mask(DType dtype, int[] shape, double p, Generator gen) {
    // BF16/F16: the scale rounded to the half dtype, as torch's bernoulli_(1 - p).div_(1 - p) on a half tensor, so
    // the product with the input (computed in F32, rounded once) is torch's bit for bit
    if (dtype.isHalf()) return mask(DType.F32, shape, p, gen).to(dtype);
    if (p >= 1) return Tensor.zeros(dtype, shape); // torch multiplies by 0 without drawing: later draws stay aligned
    Tensor m = Tensor.empty(dtype, shape);
    double keep = 1 / (1 - p);
    Device.CPU.backend().random().bernoulli(m, 1 - p, keep, gen == null ? Generator.global() : gen);
    return m;
  }

  /**
   * A dropout's untraced body, run with any graph tracer suspended: its mask is drawn anew on every run, so none of
   * its parts may become a constant of a graph (the op then reports itself as one random node).
   */
  private static Tensor drawnUntraced(java.util.function.Supplier<Tensor> body) {
    if (!Tracing.active()) return body.get();
    try (Tracing.Scope untraced = Tracing.install(null)) {
      return body.get();
    }
  }

  static void checkP(String op, double p, Tensor input) {
    if (!(p >= 0 && p <= 1)) {
      throw Check.fail(op, "probability must be in [0, 1] (got " + p + ")", "input", input);
    }
  }
}
