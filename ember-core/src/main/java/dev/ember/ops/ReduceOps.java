package dev.ember.ops;

import dev.ember.autograd.Tracing;
import static dev.ember.ops.DTypePolicy.ACCUMULATING;
import static dev.ember.ops.DTypePolicy.FLOATING_ONLY;
import static dev.ember.ops.DTypePolicy.INDEX;
import static dev.ember.ops.DTypePolicy.PREDICATE;
import static dev.ember.ops.DTypePolicy.PROMOTED;
import static dev.ember.ops.OpDef.noGrad;
import static dev.ember.ops.OpDef.of;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;
import static dev.ember.ops.Reads.NOTHING;
import static dev.ember.ops.Reads.OUTPUT;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.ReduceOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.List;

/** Reductions over any set of axes (with keepDim), softmax, log-softmax and cumsum. */
public final class ReduceOps {
  private ReduceOps() {}

  // The definitions of the ops below: name, arity, dtype policy and what the backward reads (see OpDef).
  static final OpDef SUM = of("sum", 1, ACCUMULATING, NOTHING);
  static final OpDef MEAN = of("mean", 1, FLOATING_ONLY, NOTHING);
  static final OpDef VAR = of("var", 1, FLOATING_ONLY, INPUTS);
  static final OpDef STD = of("std", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT);
  static final OpDef PROD = of("prod", 1, ACCUMULATING, INPUTS_AND_OUTPUT);
  static final OpDef AMAX = of("amax", 1, PROMOTED, INPUTS_AND_OUTPUT);
  static final OpDef AMIN = of("amin", 1, PROMOTED, INPUTS_AND_OUTPUT);
  static final OpDef MAX = of("max", 1, PROMOTED, NOTHING);
  static final OpDef MIN = of("min", 1, PROMOTED, NOTHING);
  static final OpDef ARGMAX = noGrad("argmax", 1, INDEX);
  static final OpDef ARGMIN = noGrad("argmin", 1, INDEX);
  static final OpDef LOGSUMEXP = of("logsumexp", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT);
  static final OpDef NORM = of("norm", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT);
  static final OpDef ALL = noGrad("all", 1, PREDICATE);
  static final OpDef ANY = noGrad("any", 1, PREDICATE);
  static final OpDef SOFTMAX = of("softmax", 1, FLOATING_ONLY, OUTPUT);
  static final OpDef LOG_SOFTMAX = of("log_softmax", 1, FLOATING_ONLY, OUTPUT);
  static final OpDef CUMSUM = of("cumsum", 1, ACCUMULATING, NOTHING);
  static final List<OpDef> DEFINITIONS = List.of(SUM, MEAN, VAR, STD, PROD, AMAX, AMIN, MAX, MIN, ARGMAX, ARGMIN,
      LOGSUMEXP, NORM, ALL, ANY, SOFTMAX, LOG_SOFTMAX, CUMSUM);

  /** Sorted, distinct, non-negative axes; null means all axes. */
  static int[] normAxes(String op, Tensor x, int[] dims) {
    int r = x.dim();
    if (dims == null) {
      int[] all = new int[r];
      for (int i = 0; i < r; i++) all[i] = i;
      return all;
    }
    boolean[] seen = new boolean[Math.max(r, 1)];
    for (int d : dims) {
      int a = Check.axis(op, d, r, x);
      if (seen[a]) throw Check.fail(op, "axis " + d + " appears more than once in " + Arrays.toString(dims), "x", x);
      seen[a] = true;
    }
    int[] out = new int[dims.length];
    int j = 0;
    for (int a = 0; a < seen.length; a++) if (seen[a] && (a < r)) out[j++] = a;
    return Arrays.copyOf(out, j);
  }

  static int[] keepShape(int[] shape, int[] axes) {
    int[] s = shape.clone();
    for (int a : axes) s[a] = 1;
    return s;
  }

  static int[] dropShape(int[] shape, int[] axes) {
    int[] s = new int[shape.length - axes.length];
    int j = 0;
    outer:
    for (int d = 0; d < shape.length; d++) {
      for (int a : axes) if (a == d) continue outer;
      s[j++] = shape[d];
    }
    return s;
  }

  private static Tensor reduceRaw(ReduceOp op, Tensor x, int[] axes, boolean keepDim, DType outType) {
    int[] ks = keepShape(x.shapeRef(), axes);
    Tensor out = x.newEmpty(outType, ks);
    ElementwiseOps.backend(out).reduce(op, x, axes, out);
    return keepDim ? out : dev.ember.tensor.Views.of(out, dropShape(x.shapeRef(), axes),
        dev.ember.tensor.Shapes.contiguousStrides(dropShape(x.shapeRef(), axes)), 0);
  }

  /** Sum over dims (null: all). Integers and bools sum to I64, as PyTorch. */
  public static Tensor sum(Tensor x, int[] dims, boolean keepDim) {
    Tensor out = sumUntraced(x, dims, keepDim);
    return Tracing.active() ? Tracing.op(SUM.name(), out,
        new Tensor[] {x}, new Object[] {"dims", dims == null ? null : dims.clone(), "keepdim", keepDim},
        in -> sum(in[0], dims, keepDim)) : out;
  }

  private static Tensor sumUntraced(Tensor x, int[] dims, boolean keepDim) {
    x = Autocast.input(SUM.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return sum(x.to(DType.F32), dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    int[] axes = normAxes(SUM.name(), x, dims);
    DType dt = SUM.dtypes().result(x.dtype());
    Tensor out = reduceRaw(ReduceOp.SUM, x, axes, keepDim, dt);
    int[] inShape = x.shape();
    return Autograd.record(SUM.name(), out,
        (ctx, g) -> new Tensor[] {g.reshape(keepShape(inShape, axes)).expand(inShape)},
        new Tensor[] {x});
  }

  public static Tensor mean(Tensor x, int[] dims, boolean keepDim) {
    x = Autocast.input(MEAN.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return mean(x.to(DType.F32), dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    Check.floating(MEAN.name(), x);
    int[] axes = normAxes(MEAN.name(), x, dims);
    long count = 1;
    for (int a : axes) count *= x.shapeRef()[a];
    return sum(x, axes, keepDim).div(count);
  }

  /** Variance with Bessel's correction when {@code unbiased}. */
  public static Tensor var(Tensor x, int[] dims, boolean unbiased, boolean keepDim) {
    x = Autocast.input(VAR.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return var(x.to(DType.F32), dims, unbiased, keepDim).to(x.dtype()); // in F32, rounded once on store
    Check.floating(VAR.name(), x);
    int[] axes = normAxes(VAR.name(), x, dims);
    long count = 1;
    for (int a : axes) count *= x.shapeRef()[a];
    Tensor centered = x.sub(mean(x, axes, true));
    return sum(centered.square(), axes, keepDim).div(Math.max(0, count - (unbiased ? 1 : 0)));
  }

  public static Tensor std(Tensor x, int[] dims, boolean unbiased, boolean keepDim) {
    x = Autocast.input(STD.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return std(x.to(DType.F32), dims, unbiased, keepDim).to(x.dtype()); // in F32, rounded once on store
    int[] axes = normAxes(STD.name(), x, dims); // errors name std, not the var it is built on
    Tensor out = standardDeviation(x, axes, unbiased, keepDim);
    return Tracing.active() ? Tracing.op(STD.name(), out, new Tensor[] {x}, new Object[] {"dims",
        dims == null ? null : dims.clone(), "unbiased", unbiased, "keepdim", keepDim},
        in -> std(in[0], dims, unbiased, keepDim)) : out;
  }

  /**
   * sqrt(var(x)) over axes, one node with PyTorch's std backward, g / (2 std) masked to 0 where std is 0, times var's
   * derivative 2 (x - mean) / (n - correction): sqrt's own backward at a constant, g / 0 times zeros, is NaN.
   */
  private static Tensor standardDeviation(Tensor x, int[] axes, boolean unbiased, boolean keepDim) {
    Tensor out;
    try (Grad ignored = Grad.off()) {
      out = var(x, axes, unbiased, keepDim).sqrt();
    }
    int[] ks = keepShape(x.shapeRef(), axes);
    long count = 1;
    for (int a : axes) count *= x.shapeRef()[a];
    long divisor = Math.max(0, count - (unbiased ? 1 : 0)); // var's
    return Autograd.record(STD.name(), out, (ctx, g) -> {
      Tensor std = ctx.out().reshape(ks);
      Tensor gVar = ElementwiseOps.where(std.eq(0), Tensor.scalar(0, g.dtype()), g.reshape(ks).div(std.mul(2)));
      Tensor xi = ctx.in(0);
      return new Tensor[] {xi.sub(mean(xi, axes, true)).mul(gVar.mul(2.0 / divisor))};
    }, new Tensor[] {x});
  }

  /** Product; the gradient is exact with zeros present (no division by zero). */
  public static Tensor prod(Tensor x, int[] dims, boolean keepDim) {
    Tensor out = prodUntraced(x, dims, keepDim);
    return Tracing.active() ? Tracing.op(PROD.name(), out, new Tensor[] {x},
        new Object[] {"dims", dims == null ? null : dims.clone(), "keepdim", keepDim},
        in -> prod(in[0], dims, keepDim)) : out;
  }

  private static Tensor prodUntraced(Tensor x, int[] dims, boolean keepDim) {
    x = Autocast.input(PROD.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return prod(x.to(DType.F32), dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    int[] axes = normAxes(PROD.name(), x, dims);
    DType dt = PROD.dtypes().result(x.dtype());
    Tensor out = reduceRaw(ReduceOp.PROD, x, axes, keepDim, dt);
    int[] inShape = x.shape();
    return Autograd.record(PROD.name(), out, (ctx, g) -> {
      Tensor xi = ctx.in(0);
      Tensor zero = Tensor.scalar(0, xi.dtype());
      Tensor one = Tensor.scalar(1, xi.dtype());
      Tensor isZero = xi.eq(0);
      Tensor zeros = sum(isZero.to(xi.dtype()), axes, true);
      Tensor prodNonZero = prod(ElementwiseOps.where(isZero, one, xi), axes, true);
      Tensor outK = ctx.out().reshape(keepShape(inShape, axes));
      Tensor noZero = outK.div(ElementwiseOps.where(isZero, one, xi));
      Tensor oneZero = ElementwiseOps.where(isZero, prodNonZero.expand(inShape), zero);
      Tensor local = ElementwiseOps.where(zeros.eq(0), noZero,
          ElementwiseOps.where(zeros.eq(1), oneZero, zero));
      return new Tensor[] {g.reshape(keepShape(inShape, axes)).mul(local)};
    }, new Tensor[] {x});
  }

  /** Max over dims (values only); the gradient is shared evenly among ties, as torch.amax. */
  public static Tensor amax(Tensor x, int[] dims, boolean keepDim) {
    Tensor out = extreme(AMAX.name(), ReduceOp.MAX, x, dims, keepDim);
    return Tracing.active() ? Tracing.op(AMAX.name(), out, new Tensor[] {x}, new Object[] {"dims",
        dims == null ? null : dims.clone(), "keepdim", keepDim}, in -> amax(in[0], dims, keepDim)) : out;
  }

  public static Tensor amin(Tensor x, int[] dims, boolean keepDim) {
    Tensor out = extreme(AMIN.name(), ReduceOp.MIN, x, dims, keepDim);
    return Tracing.active() ? Tracing.op(AMIN.name(), out, new Tensor[] {x}, new Object[] {"dims",
        dims == null ? null : dims.clone(), "keepdim", keepDim}, in -> amin(in[0], dims, keepDim)) : out;
  }

  private static Tensor extreme(String name, ReduceOp op, Tensor x, int[] dims, boolean keepDim) {
    if (x.dtype().isHalf()) return extreme(name, op, x.to(DType.F32), dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    int[] axes = normAxes(name, x, dims);
    for (int a : axes) {
      if (x.shapeRef()[a] == 0) {
        throw Check.fail(name, "cannot reduce over an empty dimension " + a + " (no identity)", "x", x);
      }
    }
    if (x.numel() == 0 && axes.length == x.dim() && x.dim() == 0) {
      throw Check.fail(name, "cannot reduce an empty tensor", "x", x);
    }
    Tensor out = reduceRaw(op, x, axes, keepDim, x.dtype());
    int[] inShape = x.shape();
    return Autograd.record(name, out, (ctx, g) -> {
      Tensor mask = ctx.in(0).eq(ctx.out().reshape(keepShape(inShape, axes))).to(g.dtype());
      Tensor count = sum(mask, axes, true);
      return new Tensor[] {g.reshape(keepShape(inShape, axes)).mul(mask).div(count)};
    }, new Tensor[] {x});
  }

  /** Values and indices of the max along one dim; the gradient goes to the chosen index, as torch.max(dim). */
  public static Tensor[] max(Tensor x, int dim, boolean keepDim) {
    return traced(extremeWithIndex(MAX.name(), true, x, dim, keepDim), true, x, dim, keepDim);
  }

  public static Tensor[] min(Tensor x, int dim, boolean keepDim) {
    return traced(extremeWithIndex(MIN.name(), false, x, dim, keepDim), false, x, dim, keepDim);
  }

  /**
   * Reports max/min along a dim to a tracer as two ops: the values ({@code max}/{@code min}) and the indices,
   * which are {@code argmax}/{@code argmin}'s (the same kernel).
   */
  private static Tensor[] traced(Tensor[] valuesAndIndices, boolean max, Tensor x, int dim, boolean keepDim) {
    if (!Tracing.active()) return valuesAndIndices;
    Object[] attrs = {"dim", dim, "keepdim", keepDim};
    Tracing.op((max ? MAX : MIN).name(), valuesAndIndices[0], new Tensor[] {x}, attrs,
        in -> (max ? max(in[0], dim, keepDim) : min(in[0], dim, keepDim))[0]);
    Tracing.op((max ? ARGMAX : ARGMIN).name(), valuesAndIndices[1], new Tensor[] {x}, attrs,
        in -> max ? argmax(in[0], dim, keepDim) : argmin(in[0], dim, keepDim));
    return valuesAndIndices;
  }

  private static Tensor[] extremeWithIndex(String name, boolean max, Tensor x, int dim, boolean keepDim) {
    if (x.dtype().isHalf()) { // the values are exact in F32, so rounding them back is lossless
      Tensor[] r = extremeWithIndex(name, max, x.to(DType.F32), dim, keepDim);
      return new Tensor[] {r[0].to(x.dtype()), r[1]};
    }
    Tensor idx = argReduce(name, max, x, dim, true);
    int axis = Check.axis(name, dim, x.dim(), x);
    Tensor values;
    try (Grad ignored = Grad.off()) {
      values = x.dim() == 0 ? x.clone() : x.gather(axis, idx);
    }
    int[] inShape = x.shape();
    Tensor idxK = idx;
    values = Autograd.record(name, values, (ctx, g) -> {
      if (x.dim() == 0) return new Tensor[] {g};
      Tensor gi = g.newZeros(inShape);
      if (Grad.enabled()) return new Tensor[] {IndexOps.scatter(gi, axis, idxK, g, true)}; // a recorded backward
      // one index per slice: g lands in the zeros in place, without scatter's copy of them
      ElementwiseOps.backend(gi).scatter(gi, axis, idxK, g, true);
      return new Tensor[] {gi};
    }, new Tensor[] {x});
    if (!keepDim && x.dim() > 0) {
      values = values.squeeze(axis);
      idx = idx.squeeze(axis);
    }
    return new Tensor[] {values, idx};
  }

  public static Tensor argmax(Tensor x, int dim, boolean keepDim) {
    Tensor out = argReduce(ARGMAX.name(), true, x, dim, keepDim);
    return Tracing.active() ? Tracing.op(ARGMAX.name(), out, new Tensor[] {x}, new Object[] {"dim", dim, "keepdim",
        keepDim}, in -> argmax(in[0], dim, keepDim)) : out;
  }

  public static Tensor argmin(Tensor x, int dim, boolean keepDim) {
    Tensor out = argReduce(ARGMIN.name(), false, x, dim, keepDim);
    return Tracing.active() ? Tracing.op(ARGMIN.name(), out, new Tensor[] {x}, new Object[] {"dim", dim, "keepdim",
        keepDim}, in -> argmin(in[0], dim, keepDim)) : out;
  }

  private static Tensor argReduce(String name, boolean max, Tensor x, int dim, boolean keepDim) {
    if (x.dtype().isHalf()) return argReduce(name, max, x.to(DType.F32), dim, keepDim); // same order in F32
    int axis = Check.axis(name, dim, x.dim(), x); // a 0-d input has dims 0 and -1, as in PyTorch
    if (x.dim() == 0) return x.newZeros(DType.I64);
    if (x.shapeRef()[axis] == 0) throw Check.fail(name, "cannot reduce over an empty dimension " + axis, "x", x);
    int[] ks = keepShape(x.shapeRef(), new int[] {axis});
    Tensor out = x.newEmpty(DType.I64, ks);
    ElementwiseOps.backend(out).argReduce(max, x, axis, out);
    return keepDim ? out : out.squeeze(axis);
  }

  /** log(sum(exp(x))) computed stably by subtracting the max. */
  public static Tensor logsumexp(Tensor x, int[] dims, boolean keepDim) {
    x = Autocast.input(LOGSUMEXP.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return logsumexp(x.to(DType.F32), dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    Check.floating(LOGSUMEXP.name(), x);
    int[] axes = normAxes(LOGSUMEXP.name(), x, dims);
    boolean empty = false;
    for (int a : axes) empty |= x.shapeRef()[a] == 0;
    if (empty) { // log of an empty sum: -inf, as PyTorch (amax has no identity to start from)
      Tensor s = Tensor.full(Double.NEGATIVE_INFINITY, x.device(), x.dtype(), keepShape(x.shapeRef(), axes));
      if (x.requiresGrad() && dev.ember.autograd.Grad.enabled()) s = s.add(x.sum(axes, true).mul(0));
      return keepDim ? s : s.reshape(dropShape(x.shapeRef(), axes));
    }
    Tensor m;
    try (Grad ignored = Grad.off()) {
      m = amax(x, axes, true);
      m = ElementwiseOps.where(ElementwiseOps.isinf(m), Tensor.scalar(0, x.dtype()), m);
    }
    Tensor s = sum(x.sub(m).exp(), axes, true).log().add(m);
    return keepDim ? s : s.reshape(dropShape(x.shapeRef(), axes));
  }

  /** Vector norm over dims: p = 1, 2 or infinity. */
  public static Tensor norm(Tensor x, double p, int[] dims, boolean keepDim) {
    x = Autocast.input(NORM.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return norm(x.to(DType.F32), p, dims, keepDim).to(x.dtype()); // in F32, rounded once on store
    Check.floating(NORM.name(), x);
    int[] axes = normAxes(NORM.name(), x, dims); // errors name norm, not the sum or amax it is built on
    if (p == 1) return sum(x.abs(), axes, keepDim);
    if (p == 2) {
      Tensor out = euclideanNorm(x, axes, keepDim);
      return Tracing.active() ? Tracing.op(NORM.name(), out, new Tensor[] {x}, new Object[] {"p", p, "dims",
          dims == null ? null : dims.clone(), "keepdim", keepDim}, in -> norm(in[0], p, dims, keepDim)) : out;
    }
    if (p == Double.POSITIVE_INFINITY) return amax(x.abs(), axes, keepDim);
    throw Check.fail(NORM.name(), "unsupported order p=" + p + " (supported: 1, 2, inf)", "x", x);
  }

  /**
   * sqrt(sum(x^2)) over axes, one node with PyTorch's norm backward, x * g / norm, which is 0 where the norm is 0
   * (a subgradient): sqrt's own backward there, g / 0 times the zeros of x, is NaN.
   */
  private static Tensor euclideanNorm(Tensor x, int[] axes, boolean keepDim) {
    Tensor out;
    try (Grad ignored = Grad.off()) {
      out = sum(x.square(), axes, keepDim).sqrt();
    }
    int[] ks = keepShape(x.shapeRef(), axes);
    return Autograd.record(NORM.name(), out, (ctx, g) -> {
      Tensor norm = ctx.out().reshape(ks);
      Tensor scale = ElementwiseOps.where(norm.eq(0), Tensor.scalar(0, g.dtype()), g.reshape(ks).div(norm));
      return new Tensor[] {ctx.in(0).mul(scale)};
    }, new Tensor[] {x});
  }

  /** True where every element (over dims) is non-zero. */
  public static Tensor all(Tensor x, int[] dims, boolean keepDim) {
    int[] axes = normAxes(ALL.name(), x, dims);
    Tensor out = reduceRaw(ReduceOp.MIN, truth(x), axes, keepDim, DType.BOOL);
    return Tracing.active() ? Tracing.op(ALL.name(), out, new Tensor[] {x}, new Object[] {"dims",
        dims == null ? null : dims.clone(), "keepdim", keepDim}, in -> all(in[0], dims, keepDim)) : out;
  }

  public static Tensor any(Tensor x, int[] dims, boolean keepDim) {
    int[] axes = normAxes(ANY.name(), x, dims);
    Tensor out = reduceRaw(ReduceOp.MAX, truth(x), axes, keepDim, DType.BOOL);
    return Tracing.active() ? Tracing.op(ANY.name(), out, new Tensor[] {x}, new Object[] {"dims",
        dims == null ? null : dims.clone(), "keepdim", keepDim}, in -> any(in[0], dims, keepDim)) : out;
  }

  /** x != 0 as BOOL; a BOOL tensor already is (its elements are 0 or 1). */
  private static Tensor truth(Tensor x) {
    if (x.dtype().isHalf()) return x.to(DType.F32).ne(0);
    return x.dtype() == DType.BOOL ? x : x.ne(0);
  }

  /** softmax (log=false) or log_softmax along dim, numerically stable. */
  public static Tensor softmax(Tensor x, int dim, boolean log) {
    Tensor out = softmaxUntraced(x, dim, log);
    return Tracing.active() ? Tracing.op((log ? LOG_SOFTMAX : SOFTMAX).name(), out,
        new Tensor[] {x}, new Object[] {"dim", dim},
        in -> softmax(in[0], dim, log)) : out;
  }

  private static Tensor softmaxUntraced(Tensor x, int dim, boolean log) {
    x = Autocast.input((log ? LOG_SOFTMAX : SOFTMAX).name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return softmax(x.to(DType.F32), dim, log).to(x.dtype()); // in F32, rounded once on store
    String name = (log ? LOG_SOFTMAX : SOFTMAX).name();
    Check.floating(name, x);
    int axis = Check.axis(name, dim, x.dim(), x);
    Tensor xv = x.dim() == 0 ? x.reshape(1) : x;
    Tensor out = x.newEmpty(xv.shapeRef());
    ElementwiseOps.backend(out).softmax(xv, axis, log, out);
    if (x.dim() == 0) out = out.reshape();
    return Autograd.record(name, out, (ctx, g) -> {
      Tensor y = ctx.out();
      int ax = y.dim() == 0 ? 0 : axis;
      if (y.dim() == 0) return new Tensor[] {g.mul(0)};
      if (!Grad.enabled() && ax == y.dim() - 1 && g.dtype() == y.dtype() && g.isContiguous() && y.isContiguous()
          && Arrays.equals(g.shapeRef(), y.shapeRef()) && g.device() == y.device()) { // one pass per row
        Tensor gx = y.newEmpty(y.shapeRef());
        ElementwiseOps.backend(gx).softmaxBackward(g, y, log, gx);
        return new Tensor[] {gx};
      }
      if (log) return new Tensor[] {g.sub(y.exp().mul(g.sum(ax, true)))};
      return new Tensor[] {y.mul(g.sub(g.mul(y).sum(ax, true)))};
    }, new Tensor[] {x});
  }

  public static Tensor cumsum(Tensor x, int dim) {
    x = Autocast.input(CUMSUM.name(), x); // FLOAT32 ops: half inputs run in F32
    if (x.dtype().isHalf()) return cumsum(x.to(DType.F32), dim).to(x.dtype()); // in F32, rounded once on store
    int axis = Check.axis(CUMSUM.name(), dim, x.dim(), x);
    DType dt = CUMSUM.dtypes().result(x.dtype());
    if (x.dim() == 0) return dt == x.dtype() ? x.clone() : x.to(dt);
    Tensor out = x.newEmpty(dt, x.shapeRef());
    ElementwiseOps.backend(out).cumsum(x, axis, out);
    return Autograd.record(CUMSUM.name(), out, (ctx, g) -> {
      // the reversed cumulative sum, flip(cumsum(flip(g))) as PyTorch's: total - cumsum(g) + g lost the terms small
      // next to the total and made inf - inf = NaN
      Tensor reversed = ElementwiseOps.on(g.device(), Tensor.arange(g.shapeRef()[axis] - 1, -1, -1));
      Tensor flipped = IndexOps.indexSelect(g, axis, reversed);
      return new Tensor[] {IndexOps.indexSelect(cumsum(flipped, axis), axis, reversed)};
    }, new Tensor[] {x});
  }

  /** Sums broadcast dimensions away so the result has {@code target}'s shape. */
  public static Tensor sumTo(Tensor x, int[] target) {
    int[] shape = x.shapeRef();
    if (Arrays.equals(shape, target)) return x;
    int lead = shape.length - target.length;
    if (lead < 0) throw Check.fail("sumTo", "target has more dimensions than the tensor", "x", x, "target", target);
    int[] axes = new int[shape.length];
    int n = 0;
    for (int d = 0; d < shape.length; d++) {
      if (d < lead) {
        axes[n++] = d;
      } else if (target[d - lead] == 1 && shape[d] != 1) {
        axes[n++] = d;
      } else if (target[d - lead] != shape[d]) {
        throw Check.fail("sumTo", "shape does not broadcast to the target (" + shape[d] + " vs " + target[d - lead]
            + " at axis " + d + ")", "x", x, "target", target);
      }
    }
    Tensor s = sum(x, Arrays.copyOf(axes, n), true);
    return s.reshape(target);
  }
}
