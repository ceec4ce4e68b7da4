package dev.ember.nn.functional;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.UnaryOp;
import dev.ember.ops.ElementwiseOps;
import dev.ember.ops.FusedOps;
import dev.ember.ops.IndexOps;
import dev.ember.ops.ReduceOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.Arrays;

/**
 * Loss functions with PyTorch's semantics, argument order and defaults ({@code torch.nn.functional}
 * names in the error messages), plus the focal, dice and Poly-1 losses. Every loss is
 * differentiable through the core autograd with respect to each floating-point argument (inputs,
 * floating targets and class weights alike); most are compositions of core ops. Three are fused ops
 * with their own backward: {@code log_sigmoid} (for the logits losses: stable at any logit) and the
 * clamped-log elementwise {@code binary_cross_entropy} (PyTorch's finite gradient at 0 and 1) where
 * composition would lose stability, and the common case of {@code cross_entropy} (2-d logits,
 * class indices, no weights or smoothing) for speed. The other cross-entropy variants compose the
 * core's fused {@code log_softmax}, gather and reductions.
 *
 * <p>Pointwise losses require input and target of the same shape: PyTorch broadcasts there with a
 * warning that the result is probably wrong, so Ember refuses instead and names both shapes.
 *
 * <p>Class-index targets are int64 (int32 is accepted too), hold values in {@code [0, C)} or the
 * ignore index (default {@link #IGNORE_INDEX}, -100), and have the input's shape without its
 * class dim 1: input {@code [N, C]} with target {@code [N]}, input {@code [N, C, d1, ...]} with
 * target {@code [N, d1, ...]}, or an unbatched input {@code [C]} with a 0-d target.
 *
 * <p>BF16/F16 operands are widened to F32, the loss computed in F32 and rounded once: it is returned in the half
 * dtype when every floating operand has it (as torch returns bfloat16 for bfloat16 logits), and in F32 when a half
 * operand meets an F32 one.
 */
public final class Losses {
  private Losses() {}

  /** PyTorch's default {@code ignore_index}: targets equal to it contribute nothing. */
  public static final int IGNORE_INDEX = -100;

  /** PyTorch clamps (x * (1 - x)) to this in binary_cross_entropy's backward: 1e-12 as a float, also for F64. */
  private static final double BCE_EPS = 1e-12f;
  /** PyTorch adds this to the squared magnitudes in cosine_embedding_loss. */
  private static final double COSINE_EPS = 1e-12;
  private static final double INF = Double.POSITIVE_INFINITY;

  // ================================================================== regression

  /** Mean squared error, {@code (input - target)^2}, averaged. */
  public static Tensor mseLoss(Tensor input, Tensor target) {
    return mseLoss(input, target, Reduction.MEAN);
  }

  /** {@code (input - target)^2} per element, then {@code reduction}. */
  public static Tensor mseLoss(Tensor input, Tensor target, Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("mse_loss", t -> mseLoss(t[0], t[1], reduction), input, target);
    }
    pointwise("mse_loss", input, target, reduction);
    return reduce(input.sub(target).square(), reduction);
  }

  public static Tensor l1Loss(Tensor input, Tensor target) {
    return l1Loss(input, target, Reduction.MEAN);
  }

  /** {@code |input - target|} per element, then {@code reduction}; the gradient at 0 is 0, as PyTorch. */
  public static Tensor l1Loss(Tensor input, Tensor target, Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("l1_loss", t -> l1Loss(t[0], t[1], reduction), input, target);
    }
    pointwise("l1_loss", input, target, reduction);
    return reduce(input.sub(target).abs(), reduction);
  }

  public static Tensor smoothL1Loss(Tensor input, Tensor target) {
    return smoothL1Loss(input, target, Reduction.MEAN, 1.0);
  }

  public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction) {
    return smoothL1Loss(input, target, reduction, 1.0);
  }

  /**
   * With {@code d = input - target}: {@code 0.5 d^2 / beta} where {@code |d| < beta}, else
   * {@code |d| - 0.5 beta}. {@code beta = 0} is the L1 loss; default 1.0. As F.smooth_l1_loss.
   */
  public static Tensor smoothL1Loss(Tensor input, Tensor target, Reduction reduction, double beta) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("smooth_l1_loss", t -> smoothL1Loss(t[0], t[1], reduction, beta), input, target);
    }
    pointwise("smooth_l1_loss", input, target, reduction);
    if (!(beta >= 0)) throw Check.fail("smooth_l1_loss", "beta must be non-negative, got " + beta);
    Tensor d = input.sub(target);
    Tensor ad = d.abs();
    if (beta == 0) return reduce(ad, reduction);
    return reduce(ElementwiseOps.where(ad.lt(beta), d.square().mul(0.5 / beta), ad.sub(0.5 * beta)), reduction);
  }

  public static Tensor huberLoss(Tensor input, Tensor target) {
    return huberLoss(input, target, Reduction.MEAN, 1.0);
  }

  public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction) {
    return huberLoss(input, target, reduction, 1.0);
  }

  /**
   * With {@code d = input - target}: {@code 0.5 d^2} where {@code |d| < delta}, else
   * {@code delta (|d| - 0.5 delta)}; {@code delta > 0}, default 1.0. As F.huber_loss.
   */
  public static Tensor huberLoss(Tensor input, Tensor target, Reduction reduction, double delta) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("huber_loss", t -> huberLoss(t[0], t[1], reduction, delta), input, target);
    }
    pointwise("huber_loss", input, target, reduction);
    if (!(delta > 0)) throw Check.fail("huber_loss", "delta must be positive, got " + delta);
    Tensor d = input.sub(target);
    Tensor ad = d.abs();
    return reduce(ElementwiseOps.where(ad.lt(delta), d.square().mul(0.5), ad.sub(0.5 * delta).mul(delta)), reduction);
  }

  // ================================================================== binary

  public static Tensor bceLoss(Tensor input, Tensor target) {
    return bceLoss(input, target, null, Reduction.MEAN);
  }

  public static Tensor bceLoss(Tensor input, Tensor target, Reduction reduction) {
    return bceLoss(input, target, null, reduction);
  }

  /**
   * Binary cross entropy of probabilities {@code input} in [0, 1]:
   * {@code -weight * (t log(x) + (1 - t) log(1 - x))}, each log clamped to {@code >= -100} as
   * PyTorch does (so x = 0 or 1 gives a finite loss). {@code weight} (nullable) broadcasts to the
   * input. The gradient is PyTorch's, {@code (x - t) / max(x (1 - x), 1e-12)}, finite everywhere.
   * As F.binary_cross_entropy; the input must hold values in [0, 1].
   */
  public static Tensor bceLoss(Tensor input, Tensor target, Tensor weight, Reduction reduction) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) { // its bounds checks read values; the replay repeats them
      out = bceLossUntraced(input, target, weight, reduction);
    }
    return Tracing.active() ? Tracing.op("binary_cross_entropy", out, new Tensor[] {input, target, weight},
        new Object[] {"reduction", reduction},
        in -> bceLoss(in[0], in[1], in[2], reduction)) : out;
  }

  private static Tensor bceLossUntraced(Tensor input, Tensor target, Tensor weight, Reduction reduction) {
    if (HalfCompute.applies(input, target, weight)) {
      return HalfCompute.loss("binary_cross_entropy", t -> bceLoss(t[0], t[1], t[2], reduction), input, target, weight);
    }
    String op = "binary_cross_entropy";
    pointwise(op, input, target, reduction);
    if (weight != null) broadcastsTo(op, "weight", weight, input, target);
    checkProbabilities(op, input, target);
    Tensor loss = bceElementwise(input, target);
    return reduce(weight == null ? loss : loss.mul(weight), reduction);
  }

  public static Tensor bceWithLogits(Tensor input, Tensor target) {
    return bceWithLogits(input, target, null, Reduction.MEAN, null);
  }

  public static Tensor bceWithLogits(Tensor input, Tensor target, Reduction reduction) {
    return bceWithLogits(input, target, null, reduction, null);
  }

  /**
   * Binary cross entropy on logits, in the stable form
   * {@code weight * ((1 - t) x - (1 + (posWeight - 1) t) logsigmoid(x))}, which equals
   * {@code -weight * (posWeight t log sigmoid(x) + (1 - t) log(1 - sigmoid(x)))} without overflow
   * for any x. {@code weight} and {@code posWeight} (both nullable) broadcast to the input
   * ({@code posWeight} is usually [C], one per class on the last dim). As
   * F.binary_cross_entropy_with_logits.
   */
  public static Tensor bceWithLogits(Tensor input, Tensor target, Tensor weight, Reduction reduction,
      Tensor posWeight) {
    if (HalfCompute.applies(input, target, weight, posWeight)) {
      return HalfCompute.loss("binary_cross_entropy_with_logits", t -> bceWithLogits(t[0], t[1], t[2], reduction, t[3]),
          input, target, weight, posWeight);
    }
    String op = "binary_cross_entropy_with_logits";
    pointwise(op, input, target, reduction);
    if (weight != null) broadcastsTo(op, "weight", weight, input, target);
    if (posWeight != null) broadcastsTo(op, "posWeight", posWeight, input, target);
    Tensor loss = bceWithLogitsElementwise(input, target, posWeight);
    return reduce(weight == null ? loss : loss.mul(weight), reduction);
  }

  private static Tensor bceWithLogitsElementwise(Tensor x, Tensor t, Tensor posWeight) {
    if (posWeight == null) return bceWithLogitsFused(x, t);
    Tensor oneMinusT = t.neg().add(1);
    Tensor logSig = logSigmoid(x);
    Tensor logWeight = posWeight == null ? null : posWeight.sub(1).mul(t).add(1);
    return oneMinusT.mul(x).sub(logWeight == null ? logSig : logWeight.mul(logSig));
  }

  /**
   * (1 - t) x - logsigmoid(x) as one op: forward {@code max(x, 0) - x t + log(1 + exp(-|x|))} (7 passes,
   * exp never overflows), backward {@code g (sigmoid(x) - t)} for x and {@code -g x} for t (3 passes, where
   * the composition ran about 8 through its graph).
   */
  private static Tensor bceWithLogitsFused(Tensor x, Tensor t) {
    Tensor out;
    try (Grad _ = Grad.off()) {
      out = x.relu().sub(x.mul(t)).add(ElementwiseOps.softplus(x.abs().neg(), 1.0));
    }
    return Autograd.record("binary_cross_entropy_with_logits", out, (ctx, g) -> {
      Tensor xi = ctx.in(0);
      Tensor gx = ctx.edgeNeeded(0) ? g.mul(xi.sigmoid().sub(ctx.in(1))) : null;
      Tensor gt = ctx.edgeNeeded(1) ? g.mul(xi).neg() : null;
      return new Tensor[] {gx, gt};
    }, new Tensor[] {x, t});
  }

  /**
   * log(sigmoid(x)) as a fused op: the forward {@code min(x, 0) - log1p(exp(-|x|))} never overflows,
   * and the backward {@code g * sigmoid(-x)} stays exact where a composition through log(sigmoid)
   * would divide by an underflowed sigmoid.
   */
  private static Tensor logSigmoid(Tensor x) {
    Tensor out;
    try (Grad _ = Grad.off()) {
      out = x.minimum(Tensor.scalar(0, x.dtype())).sub(x.abs().neg().exp().log1p());
    }
    return Autograd.record("log_sigmoid", out, (ctx, g) -> new Tensor[] {g.mul(ctx.in(0).neg().sigmoid())},
        new Tensor[] {x});
  }

  /**
   * -(t log x + (1 - t) log(1 - x)) with both logs clamped to >= -100, as a fused op whose backward
   * is PyTorch's (a composition would produce 0 * inf = NaN at x = 0 or 1).
   */
  private static Tensor bceElementwise(Tensor input, Tensor target) {
    DType dt = DType.promote(input.dtype(), target.dtype());
    Tensor x = input.to(dt);
    Tensor t = target.to(dt);
    Tensor out;
    try (Grad _ = Grad.off()) {
      Tensor logX = clampedLog(x);
      Tensor log1mX = clampedLog1m(x);
      out = t.mul(logX.sub(log1mX)).add(log1mX).neg();
    }
    return Autograd.record("binary_cross_entropy", out, (ctx, g) -> {
      Tensor xi = ctx.in(0);
      Tensor gx = null;
      Tensor gt = null;
      if (ctx.edgeNeeded(0)) gx = g.mul(xi.sub(ctx.in(1))).div(xi.mul(xi.neg().add(1)).clamp(BCE_EPS, INF));
      if (ctx.edgeNeeded(1)) gt = g.mul(clampedLog1m(xi).sub(clampedLog(xi)));
      return new Tensor[] {gx, gt};
    }, new Tensor[] {x, t});
  }

  private static Tensor clampedLog(Tensor x) {
    return x.log().clamp(-100, INF);
  }

  private static Tensor clampedLog1m(Tensor x) {
    return x.neg().log1p().clamp(-100, INF);
  }

  // ================================================================== classification

  public static Tensor crossEntropy(Tensor input, Tensor target) {
    return crossEntropy(input, target, null, IGNORE_INDEX, Reduction.MEAN, 0.0);
  }

  public static Tensor crossEntropy(Tensor input, Tensor target, Reduction reduction) {
    return crossEntropy(input, target, null, IGNORE_INDEX, reduction, 0.0);
  }

  /**
   * Cross entropy between logits {@code input} ([N, C], [N, C, d1, ...] or unbatched [C]) and
   * {@code target}, as F.cross_entropy. The target is read as PyTorch reads it: when it has the
   * input's shape it holds class probabilities (floating point), otherwise class indices.
   *
   * <p>Class indices: per element {@code -w[y] log_softmax(x)[y]} (0 where {@code y == ignoreIndex});
   * MEAN divides the sum by {@code sum(w[y])} over the counted elements (their count without
   * weights), so all-ignored gives NaN (with a zero gradient), as PyTorch. With label smoothing {@code s} the
   * element loss is {@code (1 - s) * that + s / C * sum_c(-w[c] log_softmax(x)[c])}, the same denominator.
   *
   * <p>Class probabilities: per element {@code -sum_c w[c] q[c] log_softmax(x)[c]} with
   * {@code q = (1 - s) target + s / C}; MEAN divides by the number of elements (N * d1 * ...).
   * {@code ignoreIndex} must then be negative (it cannot apply).
   *
   * @param weight nullable per-class weights [C]
   * @param ignoreIndex target value that contributes nothing (index targets only); -100 by default
   * @param labelSmoothing in [0, 1]; 0 by default
   */
  public static Tensor crossEntropy(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction,
      double labelSmoothing) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) { // its bounds checks read values; the replay repeats them
      out = crossEntropyUntraced(input, target, weight, ignoreIndex, reduction, labelSmoothing);
    }
    return Tracing.active() ? Tracing.op("cross_entropy", out, new Tensor[] {input, target, weight},
        new Object[] {"ignore_index", ignoreIndex, "reduction", reduction,
        "label_smoothing", labelSmoothing},
        in -> crossEntropy(in[0], in[1], in[2], ignoreIndex, reduction, labelSmoothing)) : out;
  }

  private static Tensor crossEntropyUntraced(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction,
      double labelSmoothing) {
    if (HalfCompute.applies(input, target, weight)) {
      return HalfCompute.loss("cross_entropy",
          t -> crossEntropy(t[0], t[1], t[2], ignoreIndex, reduction, labelSmoothing),
          input, target, weight);
    }
    String op = "cross_entropy";
    if (Tracing.active() && weight == null && labelSmoothing == 0 && input.dim() == 2
        && (input.dtype() == DType.F32 || input.dtype() == DType.F64)
        && (target.dtype() == DType.I64 || target.dtype() == DType.I32) && target.dim() == 1) {
      // one op for a graph compiler: the index target is read into Java, which the trace must not see
      Tensor out;
      try (Tracing.Scope untraced = Tracing.install(null)) {
        out = crossEntropy(input, target, null, ignoreIndex, reduction, 0.0);
      }
      return Tracing.op(op, out, new Tensor[] {input, target}, new Object[] {"ignore_index", ignoreIndex,
          "reduction", reduction.name().toLowerCase(java.util.Locale.ROOT)},
          in -> crossEntropy(in[0], in[1], null, ignoreIndex, reduction, 0.0));
    }
    checkReduction(op, reduction);
    checkSmoothing(op, labelSmoothing);
    floating(op, "input", input, io(input, target));
    if (input.dim() == 0) throw Check.fail(op, "input must have a class dim (rank >= 1), got rank 0", "input", input);
    int classDim = input.dim() == 1 ? 0 : 1;
    int classes = input.size(classDim);
    if (weight != null) checkClassWeight(op, "weight", weight, classes, input);
    if (Arrays.equals(input.shapeRef(), target.shapeRef())) {
      return crossEntropyProbabilities(input, target, weight, ignoreIndex, reduction, labelSmoothing, classDim);
    }
    ClassTargets ct = classTargets(op, input, target, ignoreIndex, true);
    if (weight == null && labelSmoothing == 0 && ct.input().dim() == 2) {
      return crossEntropyFused(ct, reduction);
    }
    Tensor logp = ct.input().logSoftmax(1);
    Tensor weightAtTarget = weightAtTarget(weight, ct);
    Tensor picked = pick(logp, ct.index());
    Tensor perElement = (weightAtTarget == null ? picked : picked.mul(weightAtTarget)).neg();
    if (labelSmoothing > 0) {
      Tensor all = weight == null ? logp : logp.mul(weight.reshape(classShape(ct.input().dim(), 1, classes)));
      Tensor smooth = all.sum(1, false).neg();
      if (ct.mask() != null) smooth = smooth.mul(ct.mask());
      perElement = perElement.mul(1 - labelSmoothing).add(smooth.mul(labelSmoothing / classes));
    }
    return reduceClass(perElement, weight == null ? null : weightAtTarget, ct, reduction);
  }

  /**
   * The common case, [N, C] logits with class indices and neither weights nor smoothing, as one op
   * (the composition records 7 ops forward and about 12 backward; fused, forward + backward of
   * [32, 10] logits took 11 us instead of 15, of which log_softmax alone is 8). Backward:
   * {@code g_i * mask_i * scale * (softmax(x)_i - onehot(y_i))}, with scale 1/counted for MEAN (0
   * when nothing is counted, as PyTorch's zero gradient).
   */
  private static Tensor crossEntropyFused(ClassTargets ct, Reduction reduction) {
    Tensor x = ct.input();
    int n = x.shapeRef()[0];
    Tensor index = ct.index().unsqueeze(1); // [N, 1]
    Tensor mask = ct.mask();
    Tensor logp;
    Tensor out;
    try (Grad _ = Grad.off()) {
      logp = x.logSoftmax(1);
      Tensor perElement = onHost(logp, mask) ? pickNegated(logp, ct.index(), mask)
          : logp.gather(1, index).reshape(n).neg();
      if (mask != null && !onHost(logp, mask)) perElement = perElement.mul(mask);
      out = switch (reduction) {
        case NONE -> perElement;
        case SUM -> perElement.sum();
        default -> ct.divByCounted(perElement.sum());
      };
    }
    Object scale = crossEntropyScale(ct, reduction);
    out = Autograd.record("cross_entropy", out,
        (ctx, g) -> new Tensor[] {crossEntropyGrad(g, logp, index, mask, scale)}, new Tensor[] {x});
    return reduction == Reduction.NONE ? ct.unbatch(out) : out;
  }

  /**
   * 1/counted for MEAN (0 when nothing is counted, as PyTorch's zero gradient), else 1: a Double, or with a device
   * count a 0-d device tensor of the count's dtype holding the same value (1/count in F64, rounded once, as the
   * host's double is when it meets a tensor).
   */
  private static Object crossEntropyScale(ClassTargets ct, Reduction reduction) {
    if (reduction != Reduction.MEAN) return 1.0;
    if (ct.count() == null) return ct.counted() == 0 ? 0 : 1.0 / ct.counted();
    try (Grad _ = Grad.off()) {
      Tensor c = ct.count().to(DType.F64);
      return ElementwiseOps.where(c.eq(0.0), c, c.reciprocal()).to(ct.count().dtype()); // c is 0 where chosen
    }
  }

  /** The fused cross entropy's gradient: {@code g_i * mask_i * scale * (exp(logp)_i - onehot(y_i))}. */
  private static Tensor crossEntropyGrad(Tensor g, Tensor logp, Tensor index, Tensor mask, Object scale) {
    int n = logp.shapeRef()[0];
    Tensor coef = mask == null ? g : mask.mul(g); // [N], or 0-d for MEAN/SUM without a mask
    if (scale instanceof Tensor s) {
      coef = coef.mul(s);
    } else if ((double) scale != 1) {
      coef = coef.mul((double) scale);
    }
    Tensor column = coef.dim() == 0 ? coef.reshape(1, 1).expand(n, 1) : coef.reshape(n, 1);
    if (!onHost(logp, coef) || coef.requiresGrad()) { // a graph through g (create_graph) needs the ops
      return IndexOps.scatterAdd(logp.exp().mul(column), 1, index, column.neg());
    }
    // the same arithmetic without the intermediates: exp over the whole tensor (one kernel, as the
    // composite: a vector exp and its scalar tail may differ in the last bit), then per row
    // e * c and, at the target, (e * c) + (-c), each rounded to the dtype as the mul and scatter_add kernels
    int cols = logp.shapeRef()[1];
    double[] c = Normalization.values(coef);
    boolean small = (long) n * cols <= HOST_ROWS_MAX;
    // large: exp and the row's scale as one fused pass (the bits of exp, then mul by the column, op by op): the
    // [N, C] logits' gradient is read and written once instead of twice ([512, 32000]: 65 MB each way)
    Tensor e = small ? logp.exp() : FusedOps.elementwise(EXP_TIMES_COLUMN, logp, column.contiguous());
    Storage es = e.storage();
    int eo = e.offset();
    if (small) {
      for (int i = 0; i < n; i++) {
        double ci = c[c.length == 1 ? 0 : i];
        for (int j = 0, k = eo + i * cols; j < cols; j++, k++) es.setDouble(k, es.getDouble(k) * ci);
      }
    }
    Storage is = index.storage();
    int io = index.offset();
    for (int i = 0; i < n; i++) {
      int k = eo + i * cols + (int) is.getLong(io + i);
      es.setDouble(k, es.getDouble(k) + -c[c.length == 1 ? 0 : i]);
    }
    return e;
  }

  /** exp(FULL) * COLUMN: the fused cross entropy's backward for large logits, before the target's -c. */
  private static final ElementwiseProgram EXP_TIMES_COLUMN;

  static {
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int x = b.full();
    int c = b.column();
    b.binary(BinaryOp.MUL, b.unary(UnaryOp.EXP, x), c);
    EXP_TIMES_COLUMN = b.build();
  }

  /**
   * Below this many logits the fused cross entropy's backward scales its rows in a plain loop rather
   * than through the fused exp-and-scale pass (whose dispatch costs more than the work at [32, 10]).
   */
  private static final int HOST_ROWS_MAX = 4096;

  /** Whether the fused cross entropy may read and write these tensors' CPU storage directly. */
  private static boolean onHost(Tensor floating, Tensor other) {
    return floating.device().isCpu() && floating.isContiguous()
        && (floating.dtype() == DType.F32 || floating.dtype() == DType.F64)
        && (other == null || other.dtype() == floating.dtype() && other.device().isCpu());
  }

  /** {@code -logp[i, index[i]] (* mask[i])} per row, as gather, neg and mul compute it (each exact). */
  private static Tensor pickNegated(Tensor logp, Tensor index, Tensor mask) {
    int n = logp.shapeRef()[0];
    int cols = logp.shapeRef()[1];
    double[] m = Normalization.values(mask);
    long[] t = index.toLongArray();
    Tensor out = Tensor.empty(logp.dtype(), n);
    Storage ls = logp.storage();
    Storage os = out.storage();
    int lo = logp.offset();
    for (int i = 0; i < n; i++) {
      double v = -ls.getDouble(lo + i * cols + (int) t[i]);
      os.setDouble(i, m == null ? v : v * m[i]);
    }
    return out;
  }



  private static Tensor crossEntropyProbabilities(Tensor input, Tensor target, Tensor weight, int ignoreIndex,
      Reduction reduction, double labelSmoothing, int classDim) {
    String op = "cross_entropy";
    if (!target.dtype().isFloatingPoint()) {
      throw Check.fail(op, "a target with the input's shape holds class probabilities and must be floating-point,"
          + " got " + target.dtype().torchName(), "input", input, "target", target,
          "hint", "class indices have the input's shape without the class dim 1");
    }
    checkNoIgnoreIndex(op, ignoreIndex, input, target);
    int classes = input.size(classDim);
    if (classes == 0) throw Check.fail(op, "input has no classes (size 0 at dim " + classDim + ")", "input", input);
    Tensor logp = input.logSoftmax(classDim);
    Tensor q = labelSmoothing > 0 ? target.mul(1 - labelSmoothing).add(labelSmoothing / classes) : target;
    Tensor prod = logp.mul(q);
    if (weight != null) prod = prod.mul(weight.reshape(classShape(input.dim(), classDim, classes)));
    Tensor perElement = prod.sum(classDim, false).neg();
    return switch (reduction) {
      case NONE -> perElement;
      case SUM -> perElement.sum();
      default -> perElement.sum().div((double) (input.numel() / classes));
    };
  }

  public static Tensor nllLoss(Tensor input, Tensor target) {
    return nllLoss(input, target, null, IGNORE_INDEX, Reduction.MEAN);
  }

  public static Tensor nllLoss(Tensor input, Tensor target, Reduction reduction) {
    return nllLoss(input, target, null, IGNORE_INDEX, reduction);
  }

  /**
   * Negative log likelihood of log-probabilities {@code input} ([N, C], [N, C, d1, ...] or [C]) at
   * class indices {@code target}: {@code -w[y] input[y]} per element (0 where ignored); MEAN divides
   * by {@code sum(w[y])} over the counted elements. As F.nll_loss.
   */
  public static Tensor nllLoss(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) { // its bounds checks read values; the replay repeats them
      out = nllLossUntraced(input, target, weight, ignoreIndex, reduction);
    }
    return Tracing.active() ? Tracing.op("nll_loss", out, new Tensor[] {input, target, weight},
        new Object[] {"ignore_index", ignoreIndex, "reduction", reduction},
        in -> nllLoss(in[0], in[1], in[2], ignoreIndex, reduction)) : out;
  }

  private static Tensor nllLossUntraced(Tensor input, Tensor target, Tensor weight, int ignoreIndex, Reduction reduction) {
    if (HalfCompute.applies(input, target, weight)) {
      return HalfCompute.loss("nll_loss", t -> nllLoss(t[0], t[1], t[2], ignoreIndex, reduction),
          input, target, weight);
    }
    String op = "nll_loss";
    checkReduction(op, reduction);
    floating(op, "input", input, io(input, target));
    if (input.dim() == 0) throw Check.fail(op, "input must have a class dim (rank >= 1), got rank 0", "input", input);
    if (weight != null) checkClassWeight(op, "weight", weight, input.size(input.dim() == 1 ? 0 : 1), input);
    ClassTargets ct = classTargets(op, input, target, ignoreIndex, true);
    Tensor weightAtTarget = weightAtTarget(weight, ct);
    Tensor picked = pick(ct.input(), ct.index());
    Tensor perElement = (weightAtTarget == null ? picked : picked.mul(weightAtTarget)).neg();
    return reduceClass(perElement, weight == null ? null : weightAtTarget, ct, reduction);
  }

  public static Tensor klDiv(Tensor input, Tensor target) {
    return klDiv(input, target, Reduction.MEAN, false);
  }

  public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction) {
    return klDiv(input, target, reduction, false);
  }

  /**
   * Kullback-Leibler divergence with {@code input} in log space: per element
   * {@code target * (log(target) - input)} (0 where target is 0), or with {@code logTarget}
   * {@code exp(target) * (target - input)}. Besides NONE/MEAN/SUM it takes {@link Reduction#BATCHMEAN}
   * (sum / input.size(0)), the true KL divergence; MEAN averages over all elements, as F.kl_div.
   */
  public static Tensor klDiv(Tensor input, Tensor target, Reduction reduction, boolean logTarget) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("kl_div", t -> klDiv(t[0], t[1], reduction, logTarget), input, target);
    }
    String op = "kl_div";
    if (reduction == null) throw Check.fail(op, "reduction must not be null", "hint", "pass Reduction.MEAN");
    floating(op, "input", input, io(input, target));
    floating(op, "target", target, io(input, target));
    sameShape(op, input, target);
    Tensor perElement;
    if (logTarget) {
      perElement = target.exp().mul(target.sub(input));
    } else {
      // xlogy(t, t): t log t with 0 at t == 0; log reads 1 there so no 0 * -inf appears in either pass
      Tensor safe = ElementwiseOps.where(target.eq(0), Tensor.scalar(1, target.dtype()), target);
      perElement = target.mul(safe.log()).sub(target.mul(input));
    }
    if (reduction == Reduction.BATCHMEAN) {
      return input.dim() == 0 ? perElement.sum() : perElement.sum().div((double) input.size(0));
    }
    return reduce(perElement, reduction);
  }

  // ================================================================== embeddings and ranking

  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target) {
    return cosineEmbeddingLoss(input1, input2, target, 0.0, Reduction.MEAN);
  }

  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target, double margin) {
    return cosineEmbeddingLoss(input1, input2, target, margin, Reduction.MEAN);
  }

  /**
   * For rows x1, x2 ([N, D], or [D] with a 0-d target) and labels y in {1, -1}: {@code 1 - cos} where
   * y = 1, {@code max(0, cos - margin)} where y = -1, 0 for any other label; {@code cos} uses
   * {@code sqrt((|x1|^2 + 1e-12)(|x2|^2 + 1e-12))} as denominator, as F.cosine_embedding_loss.
   */
  public static Tensor cosineEmbeddingLoss(Tensor input1, Tensor input2, Tensor target, double margin,
      Reduction reduction) {
    if (HalfCompute.applies(input1, input2, target)) {
      return HalfCompute.loss("cosine_embedding_loss", t -> cosineEmbeddingLoss(t[0], t[1], t[2], margin, reduction),
          input1, input2, target);
    }
    String op = "cosine_embedding_loss";
    checkReduction(op, reduction);
    floating(op, "input1", input1, "input1", input1, "input2", input2);
    floating(op, "input2", input2, "input1", input1, "input2", input2);
    sameShape(op, "input1", input1, "input2", input2);
    if (input1.dim() != 1 && input1.dim() != 2) {
      throw Check.fail(op, "inputs must be [N, D] or [D], got rank " + input1.dim(), "input1", input1,
          "input2", input2);
    }
    int last = input1.dim() - 1;
    int[] expected = Arrays.copyOf(input1.shapeRef(), last);
    if (!Arrays.equals(expected, target.shapeRef())) {
      throw Check.fail(op, "target shape must be the inputs' shape without the last dim (expected "
          + Arrays.toString(expected) + ", got " + Arrays.toString(target.shapeRef()) + ")", "input1", input1,
          "target", target);
    }
    Tensor dot = input1.mul(input2).sum(last, false);
    Tensor mag1 = input1.square().sum(last, false).add(COSINE_EPS);
    Tensor mag2 = input2.square().sum(last, false).add(COSINE_EPS);
    Tensor cos = dot.div(mag1.mul(mag2).sqrt());
    Tensor zero = Tensor.scalar(0, cos.dtype());
    Tensor pos = ElementwiseOps.where(target.eq(1), cos.neg().add(1), zero);
    Tensor neg = ElementwiseOps.where(target.eq(-1), cos.sub(margin).clamp(0, INF), zero);
    return reduce(pos.add(neg), reduction);
  }

  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target) {
    return marginRankingLoss(input1, input2, target, 0.0, Reduction.MEAN);
  }

  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target, double margin) {
    return marginRankingLoss(input1, input2, target, margin, Reduction.MEAN);
  }

  /** {@code max(0, -y (x1 - x2) + margin)} per element (y usually 1 or -1), as F.margin_ranking_loss. */
  public static Tensor marginRankingLoss(Tensor input1, Tensor input2, Tensor target, double margin,
      Reduction reduction) {
    if (HalfCompute.applies(input1, input2, target)) {
      return HalfCompute.loss("margin_ranking_loss", t -> marginRankingLoss(t[0], t[1], t[2], margin, reduction),
          input1, input2, target);
    }
    String op = "margin_ranking_loss";
    checkReduction(op, reduction);
    floating(op, "input1", input1, "input1", input1, "input2", input2);
    floating(op, "input2", input2, "input1", input1, "input2", input2);
    sameShape(op, "input1", input1, "input2", input2);
    sameShape(op, "input1", input1, "target", target);
    return reduce(target.neg().mul(input1.sub(input2)).add(margin).clamp(0, INF), reduction);
  }

  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target) {
    return hingeEmbeddingLoss(input, target, 1.0, Reduction.MEAN);
  }

  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target, double margin) {
    return hingeEmbeddingLoss(input, target, margin, Reduction.MEAN);
  }

  /**
   * With labels y in {1, -1}: {@code x} where y = 1, {@code max(0, margin - x)} where y = -1 (a
   * label that is neither contributes both terms, as PyTorch's formula does). Default margin 1.0.
   * As F.hinge_embedding_loss.
   */
  public static Tensor hingeEmbeddingLoss(Tensor input, Tensor target, double margin, Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("hinge_embedding_loss", t -> hingeEmbeddingLoss(t[0], t[1], margin, reduction),
          input, target);
    }
    String op = "hinge_embedding_loss";
    checkReduction(op, reduction);
    floating(op, "input", input, io(input, target));
    sameShape(op, input, target);
    Tensor zero = Tensor.scalar(0, input.dtype());
    Tensor marginTerm = ElementwiseOps.where(target.ne(1), input.neg().add(margin).clamp(0, INF), zero);
    Tensor selfTerm = ElementwiseOps.where(target.ne(-1), input, zero);
    return reduce(marginTerm.add(selfTerm), reduction);
  }

  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative) {
    return tripletMarginLoss(anchor, positive, negative, 1.0, 2.0, 1e-6, false, Reduction.MEAN);
  }

  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative, double margin) {
    return tripletMarginLoss(anchor, positive, negative, margin, 2.0, 1e-6, false, Reduction.MEAN);
  }

  /**
   * {@code max(0, margin + d(a, p) - d(a, n))} per row, with {@code d(x, y) = ||x - y + eps||_p} over
   * the last dim (PyTorch's pairwise_distance); with {@code swap}, {@code d(a, n)} is replaced by
   * {@code min(d(a, n), d(p, n))}. Defaults: margin 1, p 2, eps 1e-6, no swap. As
   * F.triplet_margin_loss.
   */
  public static Tensor tripletMarginLoss(Tensor anchor, Tensor positive, Tensor negative, double margin, double p,
      double eps, boolean swap, Reduction reduction) {
    if (HalfCompute.applies(anchor, positive, negative)) {
      return HalfCompute.loss("triplet_margin_loss",
          t -> tripletMarginLoss(t[0], t[1], t[2], margin, p, eps, swap, reduction),
          anchor, positive, negative);
    }
    String op = "triplet_margin_loss";
    checkReduction(op, reduction);
    floating(op, "anchor", anchor, "anchor", anchor);
    floating(op, "positive", positive, "positive", positive);
    floating(op, "negative", negative, "negative", negative);
    if (!Arrays.equals(anchor.shapeRef(), positive.shapeRef())
        || !Arrays.equals(anchor.shapeRef(), negative.shapeRef())) {
      throw Check.fail(op, "anchor, positive and negative shapes differ", "anchor", anchor, "positive", positive,
          "negative", negative);
    }
    if (anchor.dim() == 0) throw Check.fail(op, "inputs must have at least one dim, got rank 0", "anchor", anchor);
    if (!(p > 0)) throw Check.fail(op, "norm degree p must be positive, got " + p, "anchor", anchor);
    Tensor distPos = pairwiseDistance(anchor, positive, p, eps);
    Tensor distNeg = pairwiseDistance(anchor, negative, p, eps);
    if (swap) distNeg = distNeg.minimum(pairwiseDistance(positive, negative, p, eps));
    return reduce(distPos.sub(distNeg).add(margin).clamp(0, INF), reduction);
  }

  /** {@code ||x1 - x2 + eps||_p} over the last dim. */
  private static Tensor pairwiseDistance(Tensor x1, Tensor x2, double p, double eps) {
    Tensor d = x1.sub(x2).add(eps);
    int last = d.dim() - 1;
    if (p == 1 || p == 2 || p == INF) return ReduceOps.norm(d, p, new int[] {last}, false);
    return d.abs().pow(p).sum(last, false).pow(1 / p);
  }

  // ================================================================== from the scope documents

  public static Tensor sigmoidFocalLoss(Tensor input, Tensor target) {
    return sigmoidFocalLoss(input, target, 0.25, 2.0, Reduction.NONE);
  }

  /**
   * Binary focal loss on logits, as torchvision.ops.sigmoid_focal_loss (Lin et al., 2017), whose
   * defaults it keeps (alpha 0.25, gamma 2, reduction NONE): with {@code p = sigmoid(x)},
   * {@code p_t = p t + (1 - p)(1 - t)} and {@code ce = bceWithLogits(x, t)} per element,
   * {@code loss = alpha_t * ce * (1 - p_t)^gamma} where {@code alpha_t = alpha t + (1 - alpha)(1 - t)};
   * a negative alpha leaves out the alpha_t factor. Targets may be soft (in [0, 1]).
   */
  public static Tensor sigmoidFocalLoss(Tensor input, Tensor target, double alpha, double gamma,
      Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("sigmoid_focal_loss", t -> sigmoidFocalLoss(t[0], t[1], alpha, gamma, reduction),
          input, target);
    }
    String op = "sigmoid_focal_loss";
    pointwise(op, input, target, reduction);
    if (!(gamma >= 0)) throw Check.fail(op, "gamma must be non-negative, got " + gamma, "input", input);
    Tensor p = input.sigmoid();
    Tensor oneMinusT = target.neg().add(1);
    Tensor loss = bceWithLogitsElementwise(input, target, null);
    if (gamma != 0) {
      Tensor pT = p.mul(target).add(p.neg().add(1).mul(oneMinusT));
      loss = loss.mul(pT.neg().add(1).pow(gamma));
    }
    if (alpha >= 0) loss = loss.mul(target.mul(alpha).add(oneMinusT.mul(1 - alpha)));
    return reduce(loss, reduction);
  }

  public static Tensor focalLoss(Tensor input, Tensor target) {
    return focalLoss(input, target, null, 2.0, IGNORE_INDEX, Reduction.MEAN);
  }

  public static Tensor focalLoss(Tensor input, Tensor target, double gamma) {
    return focalLoss(input, target, null, gamma, IGNORE_INDEX, Reduction.MEAN);
  }

  /**
   * Multi-class focal loss on logits (Lin et al., 2017, with softmax): per element
   * {@code -alpha[y] (1 - p_y)^gamma log p_y} where {@code p = softmax(input)} over the class dim 1
   * and y the class index (0 where {@code y == ignoreIndex}). MEAN divides by the number of counted
   * (non-ignored) elements, not by the alpha weights. With gamma 0 and no alpha it equals
   * {@link #crossEntropy}. Shapes as cross entropy with class indices.
   *
   * @param alpha nullable per-class factors [C]
   * @param gamma focusing parameter, >= 0; 2 by default
   */
  public static Tensor focalLoss(Tensor input, Tensor target, Tensor alpha, double gamma, int ignoreIndex,
      Reduction reduction) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) { // its bounds checks read values; the replay repeats them
      out = focalLossUntraced(input, target, alpha, gamma, ignoreIndex, reduction);
    }
    return Tracing.active() ? Tracing.op("focal_loss", out, new Tensor[] {input, target, alpha},
        new Object[] {"gamma", gamma, "ignore_index", ignoreIndex, "reduction", reduction},
        in -> focalLoss(in[0], in[1], in[2], gamma, ignoreIndex, reduction)) : out;
  }

  private static Tensor focalLossUntraced(Tensor input, Tensor target, Tensor alpha, double gamma, int ignoreIndex,
      Reduction reduction) {
    if (HalfCompute.applies(input, target, alpha)) {
      return HalfCompute.loss("focal_loss", t -> focalLoss(t[0], t[1], t[2], gamma, ignoreIndex, reduction),
          input, target, alpha);
    }
    String op = "focal_loss";
    checkReduction(op, reduction);
    floating(op, "input", input, io(input, target));
    if (input.dim() == 0) throw Check.fail(op, "input must have a class dim (rank >= 1), got rank 0", "input", input);
    if (!(gamma >= 0)) throw Check.fail(op, "gamma must be non-negative, got " + gamma, "input", input);
    if (alpha != null) checkClassWeight(op, "alpha", alpha, input.size(input.dim() == 1 ? 0 : 1), input);
    ClassTargets ct = classTargets(op, input, target, ignoreIndex, true);
    Tensor logpT = pick(ct.input().logSoftmax(1), ct.index());
    Tensor perElement = logpT.neg();
    if (gamma != 0) perElement = perElement.mul(logpT.expm1().neg().pow(gamma)); // 1 - p = -expm1(log p)
    Tensor alphaAtTarget = weightAtTarget(alpha, ct);
    if (alphaAtTarget != null) perElement = perElement.mul(alphaAtTarget);
    return reduceClass(perElement, null, ct, reduction);
  }

  public static Tensor diceLoss(Tensor input, Tensor target) {
    return diceLoss(input, target, 1e-5, Reduction.MEAN);
  }

  /**
   * Soft multi-class Dice loss on logits {@code input} [N, C, d1, ...] (or [N, C]). With
   * {@code p = softmax(input)} over dim 1 and {@code o} the one-hot encoding of class-index targets
   * [N, d1, ...] (or a target of the input's shape holding one-hot or soft labels), per sample n and
   * class c, summing over the spatial dims d1, ...:
   * <pre>
   *   loss[n, c] = 1 - (2 sum(p o) + smooth) / (sum(p) + sum(o) + smooth)
   * </pre>
   * NONE returns these [N, C] values, MEAN their mean, SUM their sum. This is MONAI's
   * {@code DiceLoss(softmax=True, to_onehot_y=True, smooth_nr=smooth, smooth_dr=smooth)}; default
   * smooth 1e-5 as there.
   */
  public static Tensor diceLoss(Tensor input, Tensor target, double smooth, Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("dice_loss", t -> diceLoss(t[0], t[1], smooth, reduction), input, target);
    }
    String op = "dice_loss";
    checkReduction(op, reduction);
    floating(op, "input", input, io(input, target));
    if (input.dim() < 2) {
      throw Check.fail(op, "input must be [N, C, d1, ...] logits (rank >= 2), got rank " + input.dim(), "input", input);
    }
    if (!(smooth >= 0)) throw Check.fail(op, "smooth must be non-negative, got " + smooth, "input", input);
    int r = input.dim();
    int classes = input.size(1);
    Tensor onehot;
    if (Arrays.equals(input.shapeRef(), target.shapeRef()) && target.dtype().isFloatingPoint()) {
      onehot = target;
    } else {
      ClassTargets ct = classTargets(op, input, target, 0, false);
      int[] perm = new int[r];
      perm[1] = r - 1; // [N, d1, ..., C] -> [N, C, d1, ...]
      for (int d = 2; d < r; d++) perm[d] = d - 1;
      onehot = IndexOps.oneHot(ct.index(), classes).to(input.dtype()).permute(perm);
    }
    Tensor p = input.softmax(1);
    Tensor inter = p.mul(onehot);
    Tensor card = p.add(onehot);
    if (r > 2) {
      int[] spatial = new int[r - 2];
      for (int d = 2; d < r; d++) spatial[d - 2] = d;
      inter = inter.sum(spatial, false);
      card = card.sum(spatial, false);
    }
    Tensor dice = inter.mul(2).add(smooth).div(card.add(smooth));
    return reduce(dice.neg().add(1), reduction);
  }

  public static Tensor polyLoss(Tensor input, Tensor target) {
    return polyLoss(input, target, 1.0, 0.0, IGNORE_INDEX, Reduction.MEAN);
  }

  public static Tensor polyLoss(Tensor input, Tensor target, double epsilon) {
    return polyLoss(input, target, epsilon, 0.0, IGNORE_INDEX, Reduction.MEAN);
  }

  /**
   * Poly-1 loss (Leng et al., 2022, "PolyLoss"): {@code CE + epsilon * (1 - p_t)} per element, where
   * CE is {@link #crossEntropy} with the same label smoothing {@code s} and
   * {@code 1 - p_t = sum_c q[c] (1 - softmax(x)[c])} for the smoothed target distribution
   * {@code q = (1 - s) onehot(y) + s / C} (or {@code (1 - s) target + s / C} for probability targets),
   * as the paper's reference {@code poly1_cross_entropy_label_smoothing}. Targets as cross entropy;
   * ignored elements give 0 and MEAN divides by the counted ones. Default epsilon 1.0.
   */
  public static Tensor polyLoss(Tensor input, Tensor target, double epsilon, double labelSmoothing, int ignoreIndex,
      Reduction reduction) {
    Tensor out;
    try (Tracing.Scope inside = Tracing.suspend()) { // its bounds checks read values; the replay repeats them
      out = polyLossUntraced(input, target, epsilon, labelSmoothing, ignoreIndex, reduction);
    }
    return Tracing.active() ? Tracing.op("poly_loss", out, new Tensor[] {input, target},
        new Object[] {"epsilon", epsilon, "label_smoothing", labelSmoothing, "ignore_index", ignoreIndex,
        "reduction", reduction},
        in -> polyLoss(in[0], in[1], epsilon, labelSmoothing, ignoreIndex, reduction)) : out;
  }

  private static Tensor polyLossUntraced(Tensor input, Tensor target, double epsilon, double labelSmoothing, int ignoreIndex,
      Reduction reduction) {
    if (HalfCompute.applies(input, target)) {
      return HalfCompute.loss("poly_loss", t -> polyLoss(t[0], t[1], epsilon, labelSmoothing, ignoreIndex, reduction),
          input, target);
    }
    String op = "poly_loss";
    checkReduction(op, reduction);
    checkSmoothing(op, labelSmoothing);
    floating(op, "input", input, io(input, target));
    if (input.dim() == 0) throw Check.fail(op, "input must have a class dim (rank >= 1), got rank 0", "input", input);
    double s = labelSmoothing;
    if (Arrays.equals(input.shapeRef(), target.shapeRef())) {
      floating(op, "target", target, io(input, target));
      checkNoIgnoreIndex(op, ignoreIndex, input, target);
      int cd = input.dim() == 1 ? 0 : 1;
      int classes = input.size(cd);
      Tensor logp = input.logSoftmax(cd);
      Tensor q = s > 0 ? target.mul(1 - s).add(s / classes) : target;
      Tensor ce = logp.mul(q).sum(cd, false).neg();
      Tensor oneMinusPT = q.mul(logp.exp().neg().add(1)).sum(cd, false);
      return reduce(ce.add(oneMinusPT.mul(epsilon)), reduction);
    }
    ClassTargets ct = classTargets(op, input, target, ignoreIndex, true);
    int classes = ct.input().size(1);
    Tensor logp = ct.input().logSoftmax(1);
    Tensor logpT = pick(logp, ct.index());
    Tensor ce = logpT.mul(-(1 - s));
    Tensor pT = logpT.exp();
    if (s > 0) {
      ce = ce.sub(logp.sum(1, false).mul(s / classes));
      pT = pT.mul(1 - s).add(s / classes); // sum_c q_c p_c with sum_c p_c = 1
    }
    Tensor perElement = ce.add(pT.neg().add(1).mul(epsilon));
    if (ct.mask() != null) perElement = perElement.mul(ct.mask());
    return reduceClass(perElement, null, ct, reduction);
  }

  // ================================================================== class-index targets

  /**
   * Validated class-index targets for an input brought to [N, C, d1, ...] (an unbatched [C] gets a
   * batch of 1): {@code index} holds the targets with ignored ones replaced by 0 (so gather stays in
   * range), {@code mask} is 1/0 in the input's dtype where counted/ignored (null when none is
   * ignored), {@code counted} the number counted. Built on a device from a device target
   * ({@link #deviceClassTargets}), the mask is always there (1 everywhere when nothing is ignored: the same
   * products) and the count is the 0-d device tensor {@code count} in the input's dtype ({@code counted} unused).
   */
  private record ClassTargets(Tensor input, Tensor index, Tensor mask, long counted, Tensor count, boolean unbatched) {
    Tensor unbatch(Tensor perElement) {
      return unbatched ? perElement.reshape() : perElement;
    }

    /** {@code x / counted}: by the host number, or by the device count (the same value, so the same bits). */
    Tensor divByCounted(Tensor x) {
      return count == null ? x.div((double) counted) : x.div(count);
    }
  }

  private static ClassTargets classTargets(String op, Tensor input, Tensor target, int ignoreIndex,
      boolean allowIgnore) {
    if (target.dtype() != DType.I64 && target.dtype() != DType.I32) {
      boolean probabilitiesAllowed = !op.equals("nll_loss") && !op.equals("focal_loss");
      throw Check.fail(op, "class-index target must be int64, got " + target.dtype().torchName(), "input", input,
          "target", target, "hint", target.dtype().isFloatingPoint() && probabilitiesAllowed
              ? "class probabilities must have the input's shape; indices convert with target.to(DType.I64)"
              : "convert with target.to(DType.I64)");
    }
    boolean unbatched = input.dim() == 1;
    int[] expected = new int[input.dim() - 1];
    for (int d = 0, j = 0; d < input.dim(); d++) if (d != (unbatched ? 0 : 1)) expected[j++] = input.shapeRef()[d];
    if (!Arrays.equals(expected, target.shapeRef())) {
      throw Check.fail(op, "target shape must be the input's shape without the class dim (expected "
          + Arrays.toString(expected) + ", got " + Arrays.toString(target.shapeRef()) + ")", "input", input,
          "target", target);
    }
    int classes = input.shapeRef()[unbatched ? 0 : 1];
    if (!target.device().isCpu() && target.device().equals(input.device())
        && (input.dtype() == DType.F32 || input.dtype() == DType.F64)) {
      return deviceClassTargets(op, input, target, ignoreIndex, allowIgnore, expected, classes, unbatched);
    }
    long[] values = target.toLongArray();
    int n = values.length;
    Tensor index = Tensor.empty(DType.I64, expected);
    Storage is = index.storage();
    double[] mask = null;
    long counted = 0;
    for (int i = 0; i < n; i++) {
      long v = values[i];
      if (allowIgnore && v == ignoreIndex) {
        if (mask == null) {
          mask = new double[n];
          Arrays.fill(mask, 0, i, 1);
        }
        continue; // index stays 0, mask 0
      }
      if (v < 0 || v >= classes) {
        throw Check.fail(op, "class index out of range (" + position("target", expected, i) + " = " + v + ", "
            + classes + " classes; valid: 0.." + (classes - 1) + (allowIgnore ? " or ignoreIndex " + ignoreIndex : "")
            + ")", "input", input, "target", target);
      }
      is.setLong(i, v);
      if (mask != null) mask[i] = 1;
      counted++;
    }
    Tensor maskT = null;
    if (mask != null) { // filled on the host, then moved with the index to the input's device
      maskT = Tensor.empty(input.dtype(), expected);
      for (int i = 0; i < n; i++) maskT.storage().setDouble(i, mask[i]);
      maskT = maskT.to(input.device());
    }
    index = index.to(input.device());
    if (unbatched) {
      return new ClassTargets(input.unsqueeze(0), index.reshape(1), maskT == null ? null : maskT.reshape(1), counted,
          null, true);
    }
    return new ClassTargets(input, index, maskT, counted, null, false);
  }

  /**
   * {@link #classTargets} for a target already on the input's device, without reading it on the host or uploading
   * anything (on a GPU a read waits for every queued kernel): the range check is the backend's
   * {@link dev.ember.backend.Backend#checkIndexRange} (on CUDA deferred to the next synchronizing point, as
   * PyTorch's device-side asserts), the index {@code target * (target != ignoreIndex)}, the mask
   * {@code target != ignoreIndex} in the input's dtype and the count its sum (exact: whole numbers).
   */
  private static ClassTargets deviceClassTargets(String op, Tensor input, Tensor target, int ignoreIndex,
      boolean allowIgnore, int[] expected, int classes, boolean unbatched) {
    input.device().backend().checkIndexRange(target, 0, classes, allowIgnore ? ignoreIndex : 0,
        (position, value) -> Check.fail(op, "class index out of range (" + position("target", expected, (int) position)
            + " = " + value + ", " + classes + " classes; valid: 0.." + (classes - 1)
            + (allowIgnore ? " or ignoreIndex " + ignoreIndex : "") + ")", "input", input, "target", target));
    Tensor index = target.to(DType.I64).contiguous();
    Tensor mask = null;
    Tensor count = null;
    long counted = index.numel();
    try (Grad _ = Grad.off()) {
      if (allowIgnore) {
        Tensor keep = index.ne((double) ignoreIndex);
        index = index.mul(keep.to(DType.I64)); // ignored ones gather row 0, then are masked out
        mask = keep.to(input.dtype());
        count = mask.sum();
      }
    }
    if (unbatched) {
      return new ClassTargets(input.unsqueeze(0), index.reshape(1), mask == null ? null : mask.reshape(1), counted,
          count, true);
    }
    return new ClassTargets(input, index, mask, counted, count, false);
  }

  /** {@code x[n, index[n, ...], ...]} along the class dim 1: [N, C, d...] -> [N, d...]. */
  private static Tensor pick(Tensor x, Tensor index) {
    return x.gather(1, index.unsqueeze(1)).squeeze(1);
  }

  /** {@code weight[y] * mask} per element, or just the mask (or null) without weights. */
  private static Tensor weightAtTarget(Tensor weight, ClassTargets ct) {
    if (weight == null) return ct.mask();
    Tensor w = weight.indexSelect(0, ct.index().reshape(-1)).reshape(ct.index().shape());
    return ct.mask() == null ? w : w.mul(ct.mask());
  }

  /**
   * NONE/SUM as usual; MEAN divides by the summed weights of counted elements, or their count. With nothing counted
   * that is 0 / 0: NaN, and the gradient PyTorch gives, 0 (see {@link #noGradientIfNothingCounted}).
   */
  private static Tensor reduceClass(Tensor perElement, Tensor weightAtTarget, ClassTargets ct, Reduction r) {
    return switch (r) {
      case NONE -> ct.unbatch(perElement);
      case SUM -> perElement.sum();
      default -> {
        Tensor sum = noGradientIfNothingCounted(perElement.sum(), ct);
        yield weightAtTarget == null ? ct.divByCounted(sum)
            : sum.div(noGradientIfNothingCounted(weightAtTarget.sum(), ct));
      }
    };
  }

  /**
   * {@code x} (a 0-d sum), whose gradient becomes 0 when nothing is counted (every target ignored). MEAN's
   * division by 0 then gives it g / 0 = inf, which would meet the ignore mask in a product (0 x inf = NaN, into the
   * input and on into the weights); PyTorch's nll_loss writes no gradient for an ignored element, nor does its
   * label smoothing (a masked_fill), so its all-ignored mean is NaN with a zero gradient. A selection, not a product,
   * so an infinite or NaN upstream gradient also gives 0, as there. Counted elements keep the graph as it was (the
   * host count: x itself; the device count, not read on the host: g passes unchanged, the same bits).
   */
  private static Tensor noGradientIfNothingCounted(Tensor x, ClassTargets ct) {
    if (!x.requiresGrad() || !Grad.enabled() || ct.count() == null && ct.counted() != 0) return x;
    Tensor count = ct.count();
    Tensor out;
    try (Grad _ = Grad.off()) {
      out = x.clone(); // its own storage: the loss must not be a view of the sum (an in-place op on it would follow)
    }
    return Autograd.record("mean_nothing_counted", out, (ctx, g) -> new Tensor[] {count == null
        ? Tensor.zeros(g.device(), g.dtype(), g.shapeRef())
        : ElementwiseOps.where(count.eq(0.0), count.to(g.dtype()), g)}, x); // count is 0 where chosen
  }

  private static int[] classShape(int rank, int classDim, int classes) {
    int[] s = new int[rank];
    Arrays.fill(s, 1);
    s[classDim] = classes;
    return s;
  }

  /** "target[1, 2]" for flat position i of a tensor of this shape ("target" when 0-d). */
  private static String position(String name, int[] shape, int flat) {
    if (shape.length == 0) return name;
    int[] idx = new int[shape.length];
    for (int d = shape.length - 1; d >= 0; d--) {
      idx[d] = flat % shape[d];
      flat /= shape[d];
    }
    return name + Arrays.toString(idx);
  }

  // ================================================================== checks and reduction

  private static Tensor reduce(Tensor perElement, Reduction r) {
    return switch (r) {
      case NONE -> perElement;
      case MEAN -> perElement.mean(); // an empty input gives 0 / 0 = NaN, as PyTorch
      case SUM -> perElement.sum();
      case BATCHMEAN -> throw new AssertionError("checked by checkReduction");
    };
  }

  private static void checkReduction(String op, Reduction r) {
    if (r == null) throw Check.fail(op, "reduction must not be null", "hint", "pass Reduction.MEAN");
    if (r == Reduction.BATCHMEAN) {
      throw Check.fail(op, "reduction BATCHMEAN is only defined for kl_div", "hint", "use MEAN, SUM or NONE");
    }
  }

  /** Probability targets have no index to ignore; a non-negative ignoreIndex is a caller's mistake, as PyTorch. */
  private static void checkNoIgnoreIndex(String op, int ignoreIndex, Tensor input, Tensor target) {
    if (ignoreIndex >= 0) {
      throw Check.fail(op, "ignoreIndex is not supported for class-probability targets (ignoreIndex " + ignoreIndex
          + ")", "input", input, "target", target, "hint", "pass IGNORE_INDEX (-100)");
    }
  }

  private static void checkSmoothing(String op, double s) {
    if (!(s >= 0 && s <= 1)) throw Check.fail(op, "labelSmoothing must be in [0, 1], got " + s);
  }

  /** The checks every elementwise loss shares: reduction, floating input and target, equal shapes. */
  private static void pointwise(String op, Tensor input, Tensor target, Reduction reduction) {
    checkReduction(op, reduction);
    floating(op, "input", input, io(input, target));
    floating(op, "target", target, io(input, target));
    sameShape(op, input, target);
  }

  private static void floating(String op, String name, Tensor t, Object... operands) {
    if (!t.dtype().isFloatingPoint()) {
      throw Check.fail(op, name + " must be floating-point, got " + t.dtype().torchName(), operands);
    }
  }

  private static Object[] io(Tensor input, Tensor target) {
    return new Object[] {"input", input, "target", target};
  }

  private static void sameShape(String op, Tensor input, Tensor target) {
    sameShape(op, "input", input, "target", target);
  }

  private static void sameShape(String op, String aName, Tensor a, String bName, Tensor b) {
    if (!Arrays.equals(a.shapeRef(), b.shapeRef())) {
      throw Check.fail(op, aName + " and " + bName + " shapes differ (" + Arrays.toString(a.shapeRef()) + " vs "
          + Arrays.toString(b.shapeRef()) + ")", aName, a, bName, b,
          "hint", "expand one explicitly if broadcasting is meant");
    }
  }

  /** {@code w} must broadcast to the input's shape without enlarging it. */
  private static void broadcastsTo(String op, String name, Tensor w, Tensor input, Tensor target) {
    int[] ws = w.shapeRef();
    int[] xs = input.shapeRef();
    boolean ok = ws.length <= xs.length;
    for (int i = 1; ok && i <= ws.length; i++) {
      int dw = ws[ws.length - i];
      ok = dw == 1 || dw == xs[xs.length - i];
    }
    if (!ok) throw Check.fail(op, name + " does not broadcast to the input's shape", "input", input, name, w);
    if (!w.dtype().isFloatingPoint()) {
      throw Check.fail(op, name + " must be floating-point, got " + w.dtype().torchName(), "input", input, name, w);
    }
  }

  private static void checkClassWeight(String op, String name, Tensor w, int classes, Tensor input) {
    if (w.dim() != 1 || w.size(0) != classes) {
      throw Check.fail(op, name + " must be 1-d with one value per class (" + classes + " classes)", "input", input,
          name, w);
    }
    if (!w.dtype().isFloatingPoint()) {
      throw Check.fail(op, name + " must be floating-point, got " + w.dtype().torchName(), "input", input, name, w);
    }
  }

  /**
   * Every input value in [0, 1] (NaN fails), or an error naming the first one outside. On a device the values are not
   * read on the host (a read waits for every queued kernel): a flag per element, 1 outside [0, 1], goes to the
   * backend's {@link dev.ember.backend.Backend#checkIndexRange} (on CUDA deferred to the next synchronizing point,
   * as PyTorch's device-side asserts), and the error reads the offending value when it is raised.
   */
  private static void checkProbabilities(String op, Tensor input, Tensor target) {
    if (!input.device().isCpu()) {
      Tensor outside;
      try (Grad _ = Grad.off()) {
        Tensor x = input.detach();
        // NaN compares false: outside
        outside = ElementwiseOps.logicalNot(ElementwiseOps.logicalAnd(x.ge(0), x.le(1))).to(DType.I32);
      }
      input.device().backend().checkIndexRange(outside, 0, 1, 0,
          (position, flag) -> outsideProbabilities(op, input, target, (int) position));
      return;
    }
    boolean inside;
    try (Grad _ = Grad.off()) {
      Tensor x = input.detach();
      // two vector reductions instead of four passes of comparisons; a NaN makes max NaN, so it is not inside
      inside = x.numel() == 0 || (x.min().item() >= 0 && x.max().item() <= 1);
    }
    if (inside) return;
    double[] v = input.detach().toDoubleArray();
    int i = 0;
    while (v[i] >= 0 && v[i] <= 1) i++;
    throw outsideProbabilities(op, input, target, i);
  }

  /** The error for input element {@code i} (flat, row-major) outside [0, 1], naming its position and value. */
  private static TensorArgumentException outsideProbabilities(String op, Tensor input, Tensor target, int i) {
    double v = input.detach().reshape(-1).narrow(0, i, 1).toDoubleArray()[0];
    String value = input.dtype() == DType.F32 ? Float.toString((float) v) : Double.toString(v);
    return Check.fail(op, "input values must be in [0, 1] (" + position("input", input.shapeRef(), i) + " = " + value
        + ")", "input", input, "target", target, "hint", "apply sigmoid first, or use bceWithLogits on logits");
  }

}
