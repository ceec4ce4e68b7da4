package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Ctx;
import dev.ember.autograd.Grad;
import dev.ember.backend.NormalizationKernels;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;

/**
 * Batch, layer, group and RMS normalization with PyTorch's semantics and defaults
 * ({@code torch.nn.functional} names in error messages). Each is one fused op: the forward computes
 * its statistics and writes the output (the backend's {@link NormalizationKernels}; layer and RMS norm in one
 * call per row, the CPU reading each row from memory once); the backward is fused too, from the saved mean and
 * 1/std: with
 * {@code xhat = (x - mean) * rstd} and {@code gh = g * weight},
 * {@code dx = rstd * (gh - mean(gh) - xhat * mean(gh * xhat))} over the normalized elements,
 * {@code dweight = sum(g * xhat)}, {@code dbias = sum(g)} over the others. (The backward is not
 * itself recorded, so these ops support first-order gradients only.)
 *
 * <p>On the CPU the statistics, weights and biases travel as double arrays; on any other device everything stays
 * there: the statistics are F64 device tensors the forward fills and the backward reads, the weights and biases are
 * passed as the parameter tensors ({@link NormalizationKernels#batchNormalizeInto} and the other view methods), so
 * a normalization never reads the device from the host (which would wait for every queued kernel).
 */
public final class Normalization {
  private Normalization() {}

  /** PyTorch's default eps for batch, layer and group norm. */
  public static final double EPS = 1e-5;
  /** PyTorch's default momentum for the running statistics of batch norm. */
  public static final double MOMENTUM = 0.1;

  // ================================================================== batch norm

  /**
   * Batch normalization of {@code input} [N, C], [N, C, L] or [N, C, H, W] (any [N, C, *]), as
   * F.batch_norm. In training the batch statistics normalize (biased variance) and, when given, the
   * running statistics are updated in place, outside the graph: {@code running = (1 - momentum) *
   * running + momentum * stat} with the unbiased variance. In eval the running statistics normalize
   * and are required. {@code weight} and {@code bias} ([C]) may be null. The running statistics'
   * storage version is bumped by the update. For PyTorch's {@code momentum=None} (a cumulative
   * average), the caller passes {@code 1 / numBatchesTracked}, as nn.BatchNorm does.
   */
  public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      boolean training, double momentum, double eps) {
    Tensor out = batchNormUntraced(input, runningMean, runningVar, weight, bias, training, momentum, eps);
    return Tracing.active() ? Tracing.op("batch_norm", out,
        new Tensor[] {input, runningMean, runningVar, weight, bias}, new Object[] {"training", training,
        "momentum", momentum, "eps", eps},
        in -> batchNorm(in[0], in[1], in[2], in[3], in[4], training, momentum, eps)) : out;
  }

  private static Tensor batchNormUntraced(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      boolean training, double momentum, double eps) {
    String op = "batch_norm";
    Check.floating(op, input);
    if (input.dim() < 2) {
      throw Check.fail(op, "expected an input of rank >= 2 [N, C, *], got rank " + input.dim(), "input", input);
    }
    int[] shape = input.shape();
    int n = shape[0];
    int c = shape[1];
    int s = (int) (input.numel() / Math.max(1, (long) n * c));
    checkVector(op, "weight", weight, c, input);
    checkVector(op, "bias", bias, c, input);
    checkVector(op, "running_mean", runningMean, c, input);
    checkVector(op, "running_var", runningVar, c, input);
    if ((runningMean == null) != (runningVar == null)) {
      throw Check.fail(op, "running_mean and running_var must both be given or both be null", "input", input);
    }
    if (!training && runningMean == null) {
      throw Check.fail(op, "eval mode needs running_mean and running_var", "input", input,
          "hint", "pass training=true to normalize with the batch statistics");
    }
    if (HalfCompute.applies(input, runningMean, runningVar, weight, bias)) {
      // the running statistics are updated on F32 copies and rounded back into the caller's tensors
      Tensor rm = HalfCompute.widen(runningMean);
      Tensor rv = HalfCompute.widen(runningVar);
      Tensor y = HalfCompute.like(op, input, t -> batchNorm(t[0], rm, rv, t[1], t[2], training, momentum, eps), input,
          weight, bias);
      if (training && rm != runningMean) {
        try (Grad ignored = Grad.off()) {
          runningMean.copy_(rm);
          runningVar.copy_(rv);
        }
      }
      return y;
    }
    return training ? batchNormTrain(input, runningMean, runningVar, weight, bias, momentum, eps, n, c, s)
        : batchNormEval(input, runningMean, runningVar, weight, bias, eps, n, c, s);
  }

  /** Batch norm with PyTorch's defaults: momentum 0.1, eps 1e-5. */
  public static Tensor batchNorm(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight, Tensor bias,
      boolean training) {
    return batchNorm(input, runningMean, runningVar, weight, bias, training, MOMENTUM, EPS);
  }

  private static Tensor batchNormTrain(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight,
      Tensor bias, double momentum, double eps, int n, int c, int s) {
    long count = (long) n * s;
    if (count <= 1) {
      throw Check.fail("batch_norm", "expected more than 1 value per channel when training (got " + count + ")",
          "input", input);
    }
    if (!input.device().isCpu()) {
      return batchNormOnDevice(input, runningMean, runningVar, weight, bias, true, momentum, eps, n, c, s);
    }
    NormalizationKernels kernels = input.device().backend().normalization();
    Tensor x = input.contiguous();
    double[][] st = kernels.channelStats(x, n, c, s);
    double[] mean = st[0];
    double[] rstd = new double[c];
    for (int ch = 0; ch < c; ch++) rstd[ch] = 1 / Math.sqrt(st[1][ch] + eps);
    double[] w = values(weight);
    double[] b = values(bias);
    double[][] ss = NormalizationKernels.channelScaleShift(mean, rstd, w, b, n);
    Tensor out = affineOutput(input);
    kernels.channelAffine(x, ss[0], ss[1], out, n, c, s);
    if (runningMean != null) {
      double[] unbiased = new double[c];
      for (int ch = 0; ch < c; ch++) unbiased[ch] = st[1][ch] * count / (count - 1);
      updateRunning(kernels, runningMean, mean, momentum);
      updateRunning(kernels, runningVar, unbiased, momentum);
    }
    return Autograd.record("batch_norm", out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, c, 3);
      kernels.channelBackward(ctx.in(0).contiguous(), g.contiguous(), mean, rstd, w, n, c, s, true, r[0], r[1], r[2]);
      return grads(r, ctx, new int[] {c});
    }, new Tensor[] {input, weight, bias});
  }

  private static Tensor batchNormEval(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight,
      Tensor bias, double eps, int n, int c, int s) {
    if (!input.device().isCpu()) {
      return batchNormOnDevice(input, runningMean, runningVar, weight, bias, false, 0, eps, n, c, s);
    }
    NormalizationKernels kernels = input.device().backend().normalization();
    Tensor x = input.contiguous();
    double[] rm = values(runningMean);
    double[] rv = values(runningVar);
    double[] w = values(weight);
    double[] b = values(bias);
    double[] rstd = new double[c];
    double[] scale = new double[n * c];
    double[] shift = new double[n * c];
    for (int ch = 0; ch < c; ch++) {
      rstd[ch] = 1 / Math.sqrt(rv[ch] + eps);
      double sc = rstd[ch] * (w == null ? 1 : w[ch]);
      double sh = (b == null ? 0 : b[ch]) - rm[ch] * sc;
      for (int bi = 0; bi < n; bi++) {
        scale[bi * c + ch] = sc;
        shift[bi * c + ch] = sh;
      }
    }
    Tensor out = affineOutput(input);
    kernels.channelAffine(x, scale, shift, out, n, c, s);
    return Autograd.record("batch_norm", out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, c, 3);
      kernels.channelBackward(ctx.in(0).contiguous(), g.contiguous(), rm, rstd, w, n, c, s, false, r[0], r[1], r[2]);
      return grads(r, ctx, new int[] {c});
    }, new Tensor[] {input, weight, bias});
  }

  /**
   * Batch norm on a device: the statistics in F64 device tensors of c elements, the weight, bias and running
   * statistics read (and the running statistics updated) where they are.
   */
  private static Tensor batchNormOnDevice(Tensor input, Tensor runningMean, Tensor runningVar, Tensor weight,
      Tensor bias, boolean train, double momentum, double eps, int n, int c, int s) {
    NormalizationKernels kernels = input.device().backend().normalization();
    DeviceOperands d = DeviceOperands.of(input, weight, bias, c, true);
    Tensor w = d.w();
    Tensor mean = d.mean();
    Tensor rstd = d.rstd();
    Tensor out = d.out();
    kernels.batchNormalizeInto(d.x(), n, c, s, train, eps, momentum, runningMean, runningVar, w, d.b(), out, mean,
        rstd);
    if (train && runningMean != null) {
      runningMean.storage().bumpVersion();
      runningVar.storage().bumpVersion();
    }
    return Autograd.record("batch_norm", out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, c, 3);
      kernels.channelBackwardFrom(ctx.in(0).contiguous(), g.contiguous(), mean, rstd, w, n, c, s, train, r[0], r[1],
          r[2]);
      return grads(r, ctx, new int[] {c});
    }, new Tensor[] {input, weight, bias});
  }

  /** running = (1 - momentum) * running + momentum * stat, in place, outside the graph (bumps the version). */
  private static void updateRunning(NormalizationKernels kernels, Tensor running, double[] stat, double momentum) {
    kernels.updateRunning(running, stat, momentum);
    running.storage().bumpVersion();
  }

  // ================================================================== layer norm and RMS norm

  /**
   * Layer normalization over the trailing dims {@code normalizedShape} (biased variance), then
   * {@code * weight + bias} (each of shape normalizedShape, may be null), as F.layer_norm.
   */
  public static Tensor layerNorm(Tensor input, int[] normalizedShape, Tensor weight, Tensor bias, double eps) {
    Tensor out = layerNormUntraced(input, normalizedShape, weight, bias, eps);
    return Tracing.active() ? Tracing.op("layer_norm", out,
        new Tensor[] {input, weight, bias}, new Object[] {"normalized_shape",
        Arrays.toString(normalizedShape), "eps", eps},
        in -> layerNorm(in[0], normalizedShape, in[1], in[2], eps)) : out;
  }

  private static Tensor layerNormUntraced(Tensor input, int[] normalizedShape, Tensor weight, Tensor bias, double eps) {
    String op = "layer_norm";
    Check.floating(op, input);
    int m = checkTrailing(op, input, normalizedShape);
    checkAffine(op, "weight", weight, normalizedShape, input);
    checkAffine(op, "bias", bias, normalizedShape, input);
    if (HalfCompute.applies(input)) {
      return HalfCompute.like(op, input, t -> layerNorm(t[0], normalizedShape, t[1], t[2], eps), input, weight, bias);
    }
    int rows = m == 0 ? 0 : (int) (input.numel() / m);
    if (!input.device().isCpu()) return rowNormOnDevice(op, input, normalizedShape, weight, bias, eps, false, rows, m);
    NormalizationKernels kernels = input.device().backend().normalization();
    Tensor x = input.contiguous();
    Tensor out = affineOutput(input);
    double[] w = values(weight);
    double[][] st = kernels.rowNormalize(x, rows, m, eps, false, w, values(bias), out);
    int[] wShape = normalizedShape.clone();
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, m, 3);
      kernels.rowBackward(ctx.in(0).contiguous(), g.contiguous(), st[0], st[1], w, rows, m, 1, 1, r[0], r[1], r[2]);
      return grads(r, ctx, wShape);
    }, new Tensor[] {input, weight, bias});
  }

  public static Tensor layerNorm(Tensor input, int[] normalizedShape, Tensor weight, Tensor bias) {
    return layerNorm(input, normalizedShape, weight, bias, EPS);
  }

  /**
   * RMS normalization, {@code x / sqrt(mean(x^2) + eps) * weight} over the trailing dims
   * {@code normalizedShape}, as F.rms_norm (PyTorch 2.4): {@code eps} null means the machine epsilon
   * of the input's dtype ({@code torch.finfo(dtype).eps}); {@code weight} may be null.
   */
  public static Tensor rmsNorm(Tensor input, int[] normalizedShape, Tensor weight, Double eps) {
    Tensor out = rmsNormUntraced(input, normalizedShape, weight, eps);
    return Tracing.active() ? Tracing.op("rms_norm", out, new Tensor[] {input, weight},
        new Object[] {"normalized_shape", Arrays.toString(normalizedShape), "eps", eps},
        in -> rmsNorm(in[0], normalizedShape, in[1], eps)) : out;
  }

  private static Tensor rmsNormUntraced(Tensor input, int[] normalizedShape, Tensor weight, Double eps) {
    String op = "rms_norm";
    Check.floating(op, input);
    int m = checkTrailing(op, input, normalizedShape);
    checkAffine(op, "weight", weight, normalizedShape, input);
    double e = eps != null ? eps : machineEpsilon(input.dtype());
    if (HalfCompute.applies(input)) {
      return HalfCompute.like(op, input, t -> rmsNorm(t[0], normalizedShape, t[1], e), input, weight);
    }
    int rows = m == 0 ? 0 : (int) (input.numel() / m);
    if (!input.device().isCpu()) return rowNormOnDevice(op, input, normalizedShape, weight, null, e, true, rows, m);
    NormalizationKernels kernels = input.device().backend().normalization();
    Tensor x = input.contiguous();
    Tensor out = affineOutput(input);
    double[] w = values(weight);
    double[][] st = kernels.rowNormalize(x, rows, m, e, true, w, null, out);
    int[] wShape = normalizedShape.clone();
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, m, 2);
      kernels.rowBackward(ctx.in(0).contiguous(), g.contiguous(), null, st[1], w, rows, m, 1, 1, r[0], r[1], null);
      return grads(r, ctx, wShape);
    }, new Tensor[] {input, weight});
  }

  /** Layer norm ({@code rms} false) or RMS norm on a device: the rows' statistics in F64 device tensors. */
  private static Tensor rowNormOnDevice(String op, Tensor input, int[] normalizedShape, Tensor weight, Tensor bias,
      double eps, boolean rms, int rows, int m) {
    NormalizationKernels kernels = input.device().backend().normalization();
    DeviceOperands d = DeviceOperands.of(input, weight, bias, rows, !rms);
    Tensor w = d.w();
    Tensor mean = d.mean();
    Tensor rstd = d.rstd();
    Tensor out = d.out();
    kernels.rowNormalizeInto(d.x(), rows, m, eps, rms, w, d.b(), out, mean, rstd);
    int[] wShape = normalizedShape.clone();
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, m, rms ? 2 : 3);
      kernels.rowBackwardFrom(ctx.in(0).contiguous(), g.contiguous(), mean, rstd, w, rows, m, 1, 1, r[0], r[1], r[2]);
      return grads(r, ctx, wShape);
    }, rms ? new Tensor[] {input, weight} : new Tensor[] {input, weight, bias});
  }

  // ================================================================== group norm

  /**
   * Group normalization of {@code input} [N, C, *]: the C channels are split into {@code numGroups}
   * groups, each normalized over its channels and spatial positions (biased variance), then
   * {@code * weight + bias} per channel ([C], may be null), as F.group_norm.
   */
  public static Tensor groupNorm(Tensor input, int numGroups, Tensor weight, Tensor bias, double eps) {
    Tensor out = groupNormUntraced(input, numGroups, weight, bias, eps);
    return Tracing.active() ? Tracing.op("group_norm", out, new Tensor[] {input, weight, bias},
        new Object[] {"num_groups", numGroups, "eps", eps},
        in -> groupNorm(in[0], numGroups, in[1], in[2], eps)) : out;
  }

  private static Tensor groupNormUntraced(Tensor input, int numGroups, Tensor weight, Tensor bias, double eps) {
    String op = "group_norm";
    Check.floating(op, input);
    if (input.dim() < 2) {
      throw Check.fail(op, "expected an input of rank >= 2 [N, C, *], got rank " + input.dim(), "input", input);
    }
    int n = input.shapeRef()[0];
    int c = input.shapeRef()[1];
    if (numGroups <= 0 || c % numGroups != 0) {
      throw Check.fail(op, "the number of channels must be divisible by num_groups (" + c + " channels, "
          + numGroups + " groups)", "input", input);
    }
    checkVector(op, "weight", weight, c, input);
    checkVector(op, "bias", bias, c, input);
    if (HalfCompute.applies(input)) {
      return HalfCompute.like(op, input, t -> groupNorm(t[0], numGroups, t[1], t[2], eps), input, weight, bias);
    }
    int s = n * c == 0 ? 0 : (int) (input.numel() / ((long) n * c));
    int cpg = c / numGroups;
    int rows = n * numGroups;
    int m = cpg * s;
    NormalizationKernels kernels = input.device().backend().normalization();
    if (!input.device().isCpu()) {
      DeviceOperands d = DeviceOperands.of(input, weight, bias, rows, true);
      Tensor w = d.w();
      Tensor mean = d.mean();
      Tensor rstd = d.rstd();
      Tensor out = d.out();
      kernels.groupNormalizeInto(d.x(), n, c, s, numGroups, eps, w, d.b(), out, mean, rstd);
      return Autograd.record(op, out, (ctx, g) -> {
        Tensor[] r = newGrads(ctx, c, 3);
        kernels.rowBackwardFrom(ctx.in(0).contiguous(), g.contiguous(), mean, rstd, w, rows, m, numGroups,
            Math.max(1, s), r[0], r[1], r[2]);
        return grads(r, ctx, new int[] {c});
      }, new Tensor[] {input, weight, bias});
    }
    Tensor x = input.contiguous();
    double[] w = values(weight);
    double[] b = values(bias);
    Tensor out = affineOutput(input);
    double[][] st = kernels.groupNormalize(x, n, c, s, numGroups, eps, w, b, out);
    return Autograd.record(op, out, (ctx, g) -> {
      Tensor[] r = newGrads(ctx, c, 3);
      kernels.rowBackward(ctx.in(0).contiguous(), g.contiguous(), st[0], st[1], w, rows, m, numGroups,
          Math.max(1, s), r[0], r[1], r[2]);
      return grads(r, ctx, new int[] {c});
    }, new Tensor[] {input, weight, bias});
  }

  public static Tensor groupNorm(Tensor input, int numGroups, Tensor weight, Tensor bias) {
    return groupNorm(input, numGroups, weight, bias, EPS);
  }

  // ================================================================== shared

  /**
   * A norm's operands on a device: the input, weight and bias contiguous (weight and bias may be null), F64 device
   * tensors for {@code stats} statistics each (mean null when not wanted: RMS norm) and the output.
   */
  private record DeviceOperands(Tensor x, Tensor w, Tensor b, Tensor mean, Tensor rstd, Tensor out) {
    static DeviceOperands of(Tensor input, Tensor weight, Tensor bias, int stats, boolean withMean) {
      return new DeviceOperands(input.contiguous(), weight == null ? null : weight.contiguous(),
          bias == null ? null : bias.contiguous(), withMean ? input.newEmpty(DType.F64, stats) : null,
          input.newEmpty(DType.F64, stats), affineOutput(input));
    }
  }

  /** torch.finfo(dtype).eps: the gap between 1 and the next value of the dtype. */
  private static double machineEpsilon(DType dtype) {
    return switch (dtype) {
      case F32 -> Math.ulp(1.0f);
      case BF16 -> 0x1p-7;
      case F16 -> 0x1p-10;
      default -> Math.ulp(1.0);
    };
  }

  /**
   * The output of an affine pass over {@code input} ({@link NormalizationKernels#channelAffine} or
   * {@link NormalizationKernels#rowAffine}), which writes every element: uninitialized, no zero-fill.
   */
  private static Tensor affineOutput(Tensor input) {
    return input.newEmpty(input.shapeRef());
  }

  /**
   * Gradient buffers for a fused backward: r[0] the input's gradient (or null), r[1] and r[2] the
   * weight's and bias's as zero-filled F64 tensors of {@code params} elements (or null), which the
   * kernel writes or adds into.
   */
  private static Tensor[] newGrads(Ctx ctx, int params, int inputs) {
    Tensor x = ctx.in(0);
    Tensor[] r = new Tensor[3];
    // channelBackward and rowBackward write every element of the input gradient: no zero-fill
    if (ctx.edgeNeeded(0)) r[0] = x.newEmpty(x.shapeRef());
    for (int i = 1; i < inputs; i++) if (ctx.edgeNeeded(i)) r[i] = x.newZeros(DType.F64, params);
    return r;
  }

  /** The gradients in the inputs' dtypes, the parameter ones reshaped to {@code paramShape}. */
  private static Tensor[] grads(Tensor[] r, Ctx ctx, int[] paramShape) {
    Tensor[] out = new Tensor[ctx.inputCount()];
    out[0] = r[0];
    for (int i = 1; i < out.length; i++) {
      if (r[i] != null) out[i] = r[i].reshape(paramShape).to(ctx.in(i).dtype());
    }
    return out;
  }

  private static void checkVector(String op, String name, Tensor t, int c, Tensor input) {
    if (t == null) return;
    if (t.device() != input.device()) {
      throw Check.fail(op, "tensors are on different devices (" + input.device() + " vs " + t.device() + ")",
          "input", input, name, t);
    }
    if (t.dim() != 1 || t.shapeRef()[0] != c) {
      throw Check.fail(op, name + " must have shape [C] = [" + c + "]", "input", input, name, t);
    }
    // as torch, batch norm takes F32 parameters and statistics with a BF16/F16 input (what autocast leaves a
    // model's BatchNorm with when its input arrives in low precision)
    boolean mixed = op.equals("batch_norm") && input.dtype().isHalf() && t.dtype() == DType.F32
        || HalfCompute.mixesInF32(op, input, t);
    if (t.dtype() != input.dtype() && !mixed) {
      throw Check.fail(op, name + " has dtype " + t.dtype().torchName() + ", input has " + input.dtype().torchName(),
          "input", input, name, t);
    }
  }

  /** The product of the trailing dims, after checking they equal {@code normalizedShape}. */
  private static int checkTrailing(String op, Tensor input, int[] normalizedShape) {
    int k = normalizedShape.length;
    int r = input.dim();
    if (k == 0) throw Check.fail(op, "normalized_shape must not be empty", "input", input);
    boolean ok = k <= r && Arrays.equals(Arrays.copyOfRange(input.shapeRef(), r - k, r), normalizedShape);
    if (!ok) {
      throw Check.fail(op, "the input's trailing dims must equal normalized_shape " + Arrays.toString(normalizedShape),
          "input", input);
    }
    long m = 1;
    for (int d : normalizedShape) m *= d;
    return (int) m;
  }

  private static void checkAffine(String op, String name, Tensor t, int[] normalizedShape, Tensor input) {
    if (t == null) return;
    if (t.device() != input.device()) {
      throw Check.fail(op, "tensors are on different devices (" + input.device() + " vs " + t.device() + ")",
          "input", input, name, t);
    }
    if (!Arrays.equals(t.shapeRef(), normalizedShape)) {
      throw Check.fail(op, name + " must have shape normalized_shape " + Arrays.toString(normalizedShape),
          "input", input, name, t);
    }
    if (t.dtype() != input.dtype() && !HalfCompute.mixesInF32(op, input, t)) { // autocast widens both: see there
      throw Check.fail(op, name + " has dtype " + t.dtype().torchName() + ", input has " + input.dtype().torchName(),
          "input", input, name, t);
    }
  }

  /**
   * A tensor's values for a host loop inside an nn op or its backward rule (a norm's affine parameters and running
   * statistics, a loss's row coefficients), null for null: read with tracing suspended, as the op reports itself as
   * one node and its replay reads them again, so the read is not the forward's.
   */
  static double[] values(Tensor t) {
    if (t == null) return null;
    try (Tracing.Scope inside = Tracing.suspend()) {
      return t.toDoubleArray();
    }
  }
}
