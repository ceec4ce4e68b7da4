package dev.ember.ops;

import dev.ember.autograd.Tracing;
import static dev.ember.ops.DTypePolicy.FLOATING_ONLY;
import static dev.ember.ops.DTypePolicy.PROMOTED;
import static dev.ember.ops.OpDef.of;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.Backend;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.Arrays;
import java.util.List;

/** matmul with NumPy semantics, bmm, outer, addmm (bias fused into the GEMM's C) and linear. */
public final class LinalgOps {
  private LinalgOps() {}

  // The definitions of the ops in this class (see OpDef): name, arity, dtype policy, what the backward reads.
  static final OpDef MATMUL = of("matmul", 2, PROMOTED, INPUTS);
  static final OpDef BMM = of("bmm", 2, PROMOTED, INPUTS);
  static final OpDef OUTER = of("outer", 2, PROMOTED, INPUTS);
  static final OpDef ADDMM = of("addmm", 3, PROMOTED, INPUTS);
  static final OpDef LINEAR = of("linear", 3, FLOATING_ONLY, INPUTS);
  static final OpDef DOT = of("dot", 2, PROMOTED, INPUTS);
  /** linear, then an activation and/or a residual add, as one op (a compiler's GEMM epilogue). */
  static final OpDef LINEAR_EPILOGUE = of("linear_epilogue", 4, FLOATING_ONLY, INPUTS_AND_OUTPUT);
  static final List<OpDef> DEFINITIONS = List.of(MATMUL, BMM, OUTER, ADDMM, LINEAR, DOT, LINEAR_EPILOGUE);

  private static void checkFloat(String op, Tensor a, Tensor b) {
    if (a.device() != b.device()) { // no 0-d exception: matmul has no scalar operand
      throw Check.fail(op, "tensors are on different devices (" + a.device() + " vs " + b.device() + ")", "a", a, "b", b);
    }
    if (!a.dtype().isFloatingPoint() || !b.dtype().isFloatingPoint()) {
      throw Check.fail(op, "expected floating-point operands, got " + a.dtype().torchName() + " and "
          + b.dtype().torchName(), "a", a, "b", b);
    }
    if (a.dtype() != b.dtype()) {
      throw Check.fail(op, "operands have different dtypes (" + a.dtype().torchName() + " vs " + b.dtype().torchName()
          + ")", "a", a, "b", b, "hint", "convert one with to()");
    }
  }

  /**
   * NumPy/PyTorch matmul: 1-d operands are promoted to a row (left) or column (right) and the
   * added dim removed afterwards; leading batch dims broadcast.
   */
  public static Tensor matmul(Tensor a, Tensor b) {
    Tensor out = matmulUntraced(a, b);
    return Tracing.active() ? Tracing.op(MATMUL.name(), out, new Tensor[] {a, b}, new Object[] {},
        in -> matmul(in[0], in[1])) : out;
  }

  private static Tensor matmulUntraced(Tensor a, Tensor b) {
    if (Autocast.dtype() != null) { // one ThreadLocal read when autocast is off
      a = Autocast.input(MATMUL.name(), a);
      b = Autocast.input(MATMUL.name(), b);
    }
    return matmulAsGiven(a, b);
  }

  /** {@link #matmul} on the operands as they are (autocast already applied). */
  private static Tensor matmulAsGiven(Tensor a, Tensor b) {
    checkFloat("matmul", a, b);
    if (a.dim() == 0 || b.dim() == 0) {
      throw Check.fail("matmul", "both arguments need at least 1 dimension", "a", a, "b", b);
    }
    Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
    Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
    int m = a2.shapeRef()[a2.dim() - 2];
    int k = a2.shapeRef()[a2.dim() - 1];
    int kb = b2.shapeRef()[b2.dim() - 2];
    int n = b2.shapeRef()[b2.dim() - 1];
    if (k != kb) {
      throw Check.fail("matmul", "inner dimensions differ (" + k + " vs " + kb + ")", "a", a, "b", b);
    }
    int[] batchA = Arrays.copyOf(a2.shapeRef(), a2.dim() - 2);
    int[] batchB = Arrays.copyOf(b2.shapeRef(), b2.dim() - 2);
    int[] batch = Shapes.broadcast("matmul", batchA, batchB);
    int nb = (int) Shapes.numel(batch);
    if (a.dtype().isHalf()) {
      // A half operand broadcast over the batch gets one gradient per batch element, summed by expand's backward:
      // widened first, that sum is taken in F32 and rounded once, as on the F32 path (GEMM reads the others' bits).
      if (Shapes.numel(batchA) != nb) a2 = a2.to(DType.F32);
      if (Shapes.numel(batchB) != nb) b2 = b2.to(DType.F32);
    }
    Tensor a3 = a2.expand(concat(batch, m, k)).reshape(nb, m, k);
    Tensor b3 = b2.expand(concat(batch, kb, n)).reshape(nb, kb, n);
    Tensor out = bmm3(a3, b3).reshape(concat(batch, m, n));
    if (a.dim() == 1) out = out.squeeze(-2);
    if (b.dim() == 1) out = out.squeeze(-1);
    return roundedTo(a.dtype(), out);
  }

  /** A product of half operands (computed in F32) rounded once to their dtype; any other product as it is. */
  private static Tensor roundedTo(DType operands, Tensor product) {
    return operands.isHalf() ? product.to(operands) : product;
  }

  private static int[] concat(int[] batch, int x, int y) {
    int[] s = Arrays.copyOf(batch, batch.length + 2);
    s[batch.length] = x;
    s[batch.length + 1] = y;
    return s;
  }

  /** Batched [B, m, k] x [B, k, n] -> [B, m, n]. */
  public static Tensor bmm(Tensor a, Tensor b) {
    Tensor out = bmmUntraced(a, b);
    return Tracing.active() ? Tracing.op(BMM.name(), out, new Tensor[] {a, b}, new Object[] {},
        in -> bmm(in[0], in[1])) : out;
  }

  private static Tensor bmmUntraced(Tensor a, Tensor b) {
    if (Autocast.dtype() != null) {
      a = Autocast.input(BMM.name(), a);
      b = Autocast.input(BMM.name(), b);
    }
    checkFloat("bmm", a, b);
    if (a.dim() != 3 || b.dim() != 3) throw Check.fail("bmm", "expects 3-d tensors", "a", a, "b", b);
    if (a.shapeRef()[0] != b.shapeRef()[0]) {
      throw Check.fail("bmm", "batch sizes differ (" + a.shapeRef()[0] + " vs " + b.shapeRef()[0] + ")", "a", a, "b", b);
    }
    if (a.shapeRef()[2] != b.shapeRef()[1]) {
      throw Check.fail("bmm", "inner dimensions differ (" + a.shapeRef()[2] + " vs " + b.shapeRef()[1] + ")", "a", a, "b", b);
    }
    return roundedTo(a.dtype(), bmm3(a, b));
  }

  /**
   * [B, m, k] x [B, k, n] with autograd. Either operand may be BF16/F16 (of either half dtype, mixed with F32): the
   * product is then F32, from the operands' exact F32 values (or, for two of one half dtype on a backend that
   * {@linkplain Backend#matmulWritesHalf writes half products}, that dtype, rounded once), and each gradient is
   * rounded to its operand's dtype.
   */
  private static Tensor bmm3(Tensor a, Tensor b) {
    Backend backend = ElementwiseOps.backend(a);
    // beta 0 writes all of it
    Tensor out = a.newEmpty(outDtype(backend, a, b), a.shapeRef()[0], a.shapeRef()[1], b.shapeRef()[2]);
    backend.matmul(gemmOperand(backend, a), gemmOperand(backend, b), out, false);
    return Autograd.record(MATMUL.name(), out, (ctx, g) -> {
      // dA = G B^T, dB = A^T G: transposed views, which GEMM reads by packing
      Tensor gh = narrowedGradient(g, ctx.in(0), ctx.in(1));
      Tensor ga = ctx.edgeNeeded(0) ? bmmNT(gh, ctx.in(1)).to(ctx.in(0).dtype()) : null;
      Tensor gb = ctx.edgeNeeded(1) ? bmmTN(ctx.in(0), gh).to(ctx.in(1).dtype()) : null;
      return new Tensor[] {ga, gb};
    }, new Tensor[] {a, b});
  }

  /** a @ b^T for [B, m, k] a and [B, n, k] b (matmul's backward), traced as {@code bmm_nt}. */
  private static Tensor bmmNT(Tensor a, Tensor b) {
    Tensor out = bmm3(a, Views.transpose(b, 1, 2));
    return Tracing.active() ? Tracing.op("bmm_nt", out, new Tensor[] {a, b}, new Object[0], in -> bmmNT(in[0], in[1]))
        : out;
  }

  /** a^T @ b for [B, k, m] a and [B, k, n] b (matmul's backward), traced as {@code bmm_tn}. */
  private static Tensor bmmTN(Tensor a, Tensor b) {
    Tensor out = bmm3(Views.transpose(a, 1, 2), b);
    return Tracing.active() ? Tracing.op("bmm_tn", out, new Tensor[] {a, b}, new Object[0], in -> bmmTN(in[0], in[1]))
        : out;
  }

  /**
   * The gradient g of the F32 product of {@code a} and {@code b} in their half dtype when they share one, else g. Such
   * a product never leaves its op unrounded (the op returns it {@linkplain #roundedTo rounded} to their dtype), so
   * its gradient is that rounding's backward: a half gradient widened, which narrowing gives back exactly. The
   * gradient GEMMs then read two half operands: tensor cores on CUDA instead of a float32 product, half the bytes on
   * the CPU, the same bits either way.
   */
  private static Tensor narrowedGradient(Tensor g, Tensor a, Tensor b) {
    DType d = a.dtype();
    return d.isHalf() && b.dtype() == d && g.dtype() == DType.F32 ? g.to(d) : g;
  }

  /**
   * The dtype of a GEMM product of a and b on {@code backend}: their half dtype when both share one and the backend
   * {@linkplain Backend#matmulWritesHalf writes it} (accumulated in F32, rounded once on store: the op then returns
   * it as it is, and its gradient arrives in that dtype), else {@link #computeDtype}.
   */
  private static DType outDtype(Backend backend, Tensor a, Tensor b) {
    DType d = a.dtype();
    return d.isHalf() && b.dtype() == d && backend.matmulReadsHalf() && backend.matmulWritesHalf() ? d
        : computeDtype(a, b);
  }

  /** g in F32: the gradient of an F32 bias, which a product written in a half dtype hands back in that dtype. */
  private static Tensor widened(Tensor g) {
    return g.dtype().isHalf() ? g.to(DType.F32) : g;
  }

  /** The dtype a GEMM of a and b writes: F32 when either is BF16/F16 (read exactly, accumulated in F32), else a's. */
  private static DType computeDtype(Tensor a, Tensor b) {
    return a.dtype().isHalf() || b.dtype().isHalf() ? DType.F32 : a.dtype();
  }

  /**
   * A GEMM operand for {@code backend}: a BF16/F16 one as it is for a backend that {@linkplain
   * Backend#matmulReadsHalf reads half operands} (the CPU widens it while packing, reading half the bytes), else
   * widened to F32 first; the op records the operand itself either way.
   */
  private static Tensor gemmOperand(Backend backend, Tensor t) {
    if (!t.dtype().isHalf() || backend.matmulReadsHalf()) return t;
    try (Grad ignored = Grad.off()) {
      return t.to(DType.F32);
    }
  }

  /** x @ y for 2-d x and y: {@link #matmul} for one float dtype, else (a half operand) in F32 through bmm3. */
  private static Tensor mm(Tensor x, Tensor y) {
    if (x.dtype() == y.dtype() && !x.dtype().isHalf()) return x.matmul(y);
    return bmm3(x.unsqueeze(0), y.unsqueeze(0)).squeeze(0);
  }

  /** Outer product of two vectors. */
  public static Tensor outer(Tensor a, Tensor b) {
    if (Autocast.dtype() != null) {
      a = Autocast.input(OUTER.name(), a);
      b = Autocast.input(OUTER.name(), b);
    }
    if (a.dim() != 1 || b.dim() != 1) throw Check.fail("outer", "expects 1-d tensors", "a", a, "b", b);
    return a.unsqueeze(1).mul(b.unsqueeze(0));
  }

  /** bias + a @ b for 2-d a, b, with the bias (broadcast to [m, n]) as GEMM's starting C. */
  public static Tensor addmm(Tensor bias, Tensor a, Tensor b) {
    Tensor out = addmmUntraced(bias, a, b);
    return Tracing.active() ? Tracing.op(ADDMM.name(), out, new Tensor[] {bias, a, b}, new Object[] {},
        in -> addmm(in[0], in[1], in[2])) : out;
  }

  private static Tensor addmmUntraced(Tensor bias, Tensor a, Tensor b) {
    if (Autocast.dtype() != null) {
      bias = Autocast.input(ADDMM.name(), bias);
      a = Autocast.input(ADDMM.name(), a);
      b = Autocast.input(ADDMM.name(), b);
    }
    return addmmAsGiven(bias, a, b);
  }

  private static Tensor addmmAsGiven(Tensor bias, Tensor a, Tensor b) {
    checkFloat("addmm", a, b);
    if (a.dim() != 2 || b.dim() != 2) throw Check.fail("addmm", "expects 2-d matrices", "a", a, "b", b);
    int m = a.shapeRef()[0];
    int k = a.shapeRef()[1];
    int n = b.shapeRef()[1];
    if (k != b.shapeRef()[0]) {
      throw Check.fail("addmm", "inner dimensions differ (" + k + " vs " + b.shapeRef()[0] + ")", "a", a, "b", b);
    }
    int[] outShape = {m, n};
    int[] bs = Shapes.broadcast("addmm", bias.shapeRef(), outShape);
    if (!Arrays.equals(bs, outShape)) {
      throw Check.fail("addmm", "bias does not broadcast to the product's shape " + Arrays.toString(outShape),
          "bias", bias, "a", a, "b", b);
    }
    Check.sameDevice("addmm", bias, a);
    // half operands: the bias rounded to their dtype (as torch has it), then the F32 GEMM's starting C
    Tensor biasT = ElementwiseOps.on(a.device(), a.dtype().isHalf() ? bias.to(a.dtype()).to(DType.F32)
        : bias.to(a.dtype()));
    Tensor out = product(a, b, biasT, m, n);
    int[] biasShape = bias.shape();
    return roundedTo(a.dtype(), Autograd.record(ADDMM.name(), out, (ctx, g) -> {
      Tensor gh = narrowedGradient(g, ctx.in(1), ctx.in(2));
      return new Tensor[] {
          ctx.edgeNeeded(0) ? widened(g).sumTo(biasShape) : null,
          ctx.edgeNeeded(1) ? mm(gh, ctx.in(2).t()).to(ctx.in(1).dtype()) : null,
          ctx.edgeNeeded(2) ? mm(ctx.in(1).t(), gh).to(ctx.in(2).dtype()) : null};
    }, new Tensor[] {biasT, a, b}));
  }

  /**
   * y = x W^T + b for a 2-d x [m, in], weight [out, in] and bias [out] or null, as one autograd node
   * whose edges are x, W and b themselves. Going through {@code addmm(b, x, W.t())} would route
   * W's gradient through a transpose node and hand the parameter a transposed view, which the
   * gradient accumulation must then copy element by element; here dW = g^T x is computed straight
   * into W's layout (GEMM packs the transposed g), dx = g W, db = g summed over rows.
   */
  public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
    Tensor out = linearUntraced(x, weight, bias);
    return Tracing.active() ? Tracing.op(LINEAR.name(), out, new Tensor[] {x, weight, bias}, new Object[] {},
        in -> linear(in[0], in[1], in[2])) : out;
  }

  private static Tensor linearUntraced(Tensor x, Tensor weight, Tensor bias) {
    if (Autocast.dtype() != null) {
      x = Autocast.input(LINEAR.name(), x);
      weight = Autocast.input(LINEAR.name(), weight);
      bias = Autocast.input(LINEAR.name(), bias);
    }
    checkFloat("linear", x, weight);
    if (x.dim() != 2 || weight.dim() != 2 || x.shapeRef()[1] != weight.shapeRef()[1]) {
      throw Check.fail("linear", "expects x [m, in] and weight [out, in]", "x", x, "weight", weight);
    }
    int out = weight.shapeRef()[0];
    if (bias != null && (bias.dim() != 1 || bias.shapeRef()[0] != out)) {
      throw Check.fail("linear", "bias must be [out_features] = [" + out + "]", "bias", bias, "weight", weight);
    }
    return linearOfCheckedShapesAsGiven(x, weight, bias);
  }

  /**
   * {@link #linear} for a caller that has checked the shapes itself, with the message its own
   * users read ({@code F.linear}, {@code nn.Linear}), so that linear's shapes are checked once
   * per call: x [..., in] with any leading dimensions (kept), weight [out, in], bias [out] or
   * null. The shapes are only asserted here; the dtypes are checked as in {@link #linear}.
   */
  public static Tensor linearOfCheckedShapes(Tensor x, Tensor weight, Tensor bias) {
    Tensor out = linearOfCheckedShapesUntraced(x, weight, bias);
    return Tracing.active() ? Tracing.op(LINEAR.name(), out, new Tensor[] {x, weight, bias}, new Object[] {},
        in -> linearOfCheckedShapes(in[0], in[1], in[2])) : out;
  }

  private static Tensor linearOfCheckedShapesUntraced(Tensor x, Tensor weight, Tensor bias) {
    if (Autocast.dtype() != null) {
      x = Autocast.input(LINEAR.name(), x);
      weight = Autocast.input(LINEAR.name(), weight);
      bias = Autocast.input(LINEAR.name(), bias);
    }
    return linearOfCheckedShapesAsGiven(x, weight, bias);
  }

  private static Tensor linearOfCheckedShapesAsGiven(Tensor x, Tensor weight, Tensor bias) {
    checkFloat("linear", x, weight);
    assert weight.dim() == 2 && x.dim() >= 1 && x.shapeRef()[x.dim() - 1] == weight.shapeRef()[1]
        && (bias == null || (bias.dim() == 1 && bias.shapeRef()[0] == weight.shapeRef()[0]))
        : "linear: unchecked shapes x=" + Arrays.toString(x.shapeRef()) + ", weight=" + Arrays.toString(weight.shapeRef());
    if (x.dtype().isHalf()) bias = halfBias(bias, x);
    if (x.dim() == 2) return roundedTo(x.dtype(), linear2d(x, weight, bias));
    Tensor y = linear2d(x.reshape(-1, weight.shapeRef()[1]), weight, bias);
    int[] shape = x.shape();
    shape[shape.length - 1] = weight.shapeRef()[0];
    return roundedTo(x.dtype(), y.reshape(shape));
  }

  /**
   * linear's GEMM and autograd node, for shapes already checked: x [m, in], weight [out, in], bias [out] or null.
   * Half x and weight (one dtype) come with an F32 bias (already rounded to it); the product is then F32, the GEMM
   * reading the half operands, and their gradients are rounded to their dtype.
   */
  private static Tensor linear2d(Tensor x, Tensor weight, Tensor bias) {
    int m = x.shapeRef()[0];
    int out = weight.shapeRef()[0];
    if (bias != null && bias.device() != x.device()) {
      throw Check.fail("linear", "tensors are on different devices (" + x.device() + " vs " + bias.device() + ")",
          "x", x, "bias", bias);
    }
    Tensor biasT = bias == null ? null : bias.to(computeDtype(x, weight));
    Tensor y = linearProduct(x, weight, biasT, m, out);
    return Autograd.record(LINEAR.name(), y, (ctx, g) -> {
      Tensor gh = narrowedGradient(g, ctx.in(0), ctx.in(1));
      return new Tensor[] {
          ctx.edgeNeeded(0) ? mm(gh, ctx.in(1)).to(ctx.in(0).dtype()) : null,
          ctx.edgeNeeded(1) ? weightGrad(gh, ctx.in(0), ctx.in(1)) : null,
          ctx.edgeNeeded(2) ? widened(g).sumTo(new int[] {out}) : null};
    }, new Tensor[] {x, weight, biasT});
  }

  /**
   * dW = g^T x for {@link #linear}. For a float32 leaf weight of at least {@link #DEFER_MIN} elements whose
   * optimizer {@linkplain Deferred#consumeInBlocks consumes} its gradient in blocks, and whose gradient is
   * larger than its two factors (a batch of 32 against a 2048 x 2048 layer: 16 MB against 0.5 MB), the product is left
   * {@linkplain Deferred deferred}: copies of g and x are kept, and the GEMM runs when something reads
   * the gradient, or inside the optimizer's step, which takes it a block of rows at a time while the block
   * is in cache ({@link dev.ember.backend.Backend#matmulRows}): the gradient is never written to memory and
   * read back. Whoever reads it gets the bits the eager product would have had.
   */
  private static Tensor weightGrad(Tensor g, Tensor x, Tensor weight) {
    int m = g.shapeRef()[0];
    int out = g.shapeRef()[1];
    int in = x.shapeRef()[1];
    long size = (long) in * out;
    if (g.dtype() != DType.F32 || !weight.isLeaf() || size < DEFER_MIN || 2L * m * (in + out) > size
        || weight.dtype() != DType.F32 || !weight.device().isCpu() || !Deferred.consumedInBlocks(weight)
        || Tracing.active()) { // a traced backward computes it as an op of the graph
      Tensor dw = mm(Views.transpose(g, 0, 1), x);
      if (Tracing.active()) dw = Tracing.op("mm_tn", dw, new Tensor[] {g, x}, new Object[0],
          t -> mm(Views.transpose(t[0], 0, 1), t[1]));
      return dw.to(weight.dtype());
    }
    // The copies leave every scope: the gradient may be read after the step's scope closed. release()
    // hands them back to the pool (zeroGrad, or once the product is computed).
    return deferredWeightGrad(MemoryScope.escape(g.cloneContiguous()), MemoryScope.escape(x.cloneContiguous()), true);
  }

  /**
   * g^T x as a contiguous float32 [out, in] tensor {@linkplain Deferred deferred} over g [m, out] and x [m, in] as
   * given (not copied: they must stay unchanged until it is computed or released): computed whole when read, or a
   * block of rows at a time by an optimizer that consumes it in blocks, with the bits of {@code mm(g^T, x)} either
   * way. {@code owned}: g and x are this gradient's alone and go back to the pool once it is computed or dropped
   * (eager's copies); a compiled step passes its graph's own values, which it still holds.
   */
  public static Tensor deferredWeightGrad(Tensor g, Tensor x, boolean owned) {
    int out = g.shapeRef()[1];
    int in = x.shapeRef()[1];
    return new Tensor(Storage.deferred(out * in, new WeightGrad(g, x, owned)), new int[] {out, in}, new int[] {in, 1},
        0);
  }

  /**
   * Smallest weight (elements) whose gradient is deferred: 4 MB, past L2, where the round trip through
   * memory is what deferral saves. Below it the copies of g and x cost more than they save: the MNIST
   * MLP's 784 x 128 layer at batch 32 (a 100 KB copy of the batch per step) went from 166-234 to
   * 253-304 us per step with SGD, while seed_small's 1024 x 512 layers were unchanged.
   */
  private static final long DEFER_MIN = 1L << 20;

  /** The deferred weight gradient g^T x of {@link #weightGrad}, from contiguous copies of g [m, out] and x [m, in]. */
  private static final class WeightGrad implements Deferred {
    private Tensor g;
    private Tensor x;
    private final boolean owned;

    WeightGrad(Tensor g, Tensor x, boolean owned) {
      this.g = g;
      this.x = x;
      this.owned = owned;
    }

    @Override
    public void computeInto(float[] dst, int off) {
      int out = g.shapeRef()[1];
      int in = x.shapeRef()[1];
      Tensor c = new Tensor(Storage.wrap(dst), new int[] {1, out, in}, new int[] {0, in, 1}, off);
      Device.CPU.backend().matmul(Views.batchOfOne(Views.transpose(g, 0, 1)), Views.batchOfOne(x), c, 0f);
    }

    @Override
    public void computeBlocks(Blocks blocks) {
      int in = x.shapeRef()[1];
      Device.CPU.backend().matmulRows(Views.transpose(g, 0, 1), x,
          (r0, r1, c, off) -> blocks.accept(r0 * in, r1 * in, c, off));
    }

    @Override
    public boolean sgdInto(dev.ember.backend.View param, float lr, float wd, float sign) {
      return Device.CPU.backend().matmulRowsSgd(Views.transpose(g, 0, 1), x, param, lr, wd, sign);
    }

    @Override
    public void release() {
      if (owned) {
        MemoryScope.recycle(g);
        MemoryScope.recycle(x);
      }
      g = null;
      x = null;
    }
  }

  /**
   * a @ b [m, n] for 2-d a and b (either may be a transposed view; GEMM packs it), computed on top of
   * {@code bias} broadcast to [m, n] when it is not null: the bias is GEMM's starting C.
   */
  private static Tensor product(Tensor a, Tensor b, Tensor bias, int m, int n) {
    Backend backend = ElementwiseOps.backend(a);
    Tensor out = a.newEmpty(outDtype(backend, a, b), m, n); // the bias copy or GEMM's beta 0 writes all
    if (bias != null) backend.copy(Views.expand(bias, new int[] {m, n}), out);
    backend.matmul(Views.batchOfOne(gemmOperand(backend, a)), Views.batchOfOne(gemmOperand(backend, b)),
        Views.batchOfOne(out), bias != null);
    return out;
  }

  /**
   * x weight^T + bias [m, n] for x [m, in] and weight [n, in], the product of linear and linear_epilogue: float32
   * through {@link Backend#matmulWeightRows} (the CPU reads the weight's rows where they are for a batch much smaller
   * than the weight, rather than packing its transpose on every call), with the bits of
   * {@link #product product(x, weight^T, bias, m, n)}, which takes every other dtype.
   */
  private static Tensor linearProduct(Tensor x, Tensor weight, Tensor bias, int m, int n) {
    if (x.dtype() != DType.F32 || weight.dtype() != DType.F32) {
      return product(x, Views.transpose(weight, 0, 1), bias, m, n);
    }
    Tensor out = x.newEmpty(DType.F32, m, n);
    Backend backend = ElementwiseOps.backend(out);
    if (bias != null) backend.copy(Views.expand(bias, new int[] {m, n}), out);
    backend.matmulWeightRows(x, weight, out, bias != null ? 1f : 0f);
    return out;
  }

  /** The activations {@link #linearEpilogue} applies. */
  private static final java.util.Set<UnaryOp> EPILOGUE_ACTIVATIONS = java.util.EnumSet.of(UnaryOp.RELU, UnaryOp.GELU,
      UnaryOp.GELU_TANH, UnaryOp.SILU, UnaryOp.TANH, UnaryOp.SIGMOID, UnaryOp.LEAKY_RELU);

  /** Whether {@link #linearEpilogue} takes {@code op} as its activation. */
  public static boolean isEpilogueActivation(UnaryOp op) {
    return EPILOGUE_ACTIVATIONS.contains(op);
  }

  /**
   * {@code act(linear(x, weight, bias)) + residual} as one op, with the bits of those ops run in turn (a graph
   * compiler's GEMM epilogue): the GEMM starts from the bias as linear's does, then the activation and the residual
   * add run on one block of the product at a time ({@link Backend#epilogue}), in place in the product unless the
   * backward needs the values they overwrite. One buffer instead of three, and the product is read once more
   * instead of three times. x is [..., in], weight [out, in], bias [out] or null; {@code activation} is null (none)
   * or one of relu, gelu, gelu tanh, silu, tanh, sigmoid, leaky relu ({@code param} its negative slope);
   * {@code residual} is null or of the output's shape and dtype. Its backward is the activation's rule, then
   * linear's. Half operands, and calls under autocast, run the three ops themselves.
   *
   * @throws dev.ember.tensor.TensorArgumentException for another activation, shapes linear does not take, or a
   *     residual of another shape, dtype or device than the output
   */
  public static Tensor linearEpilogue(Tensor x, Tensor weight, Tensor bias, UnaryOp activation, double param,
      Tensor residual) {
    Tensor out = linearEpilogueUntraced(x, weight, bias, activation, param, residual);
    return Tracing.active() ? Tracing.op(LINEAR_EPILOGUE.name(), out, new Tensor[] {x, weight, bias, residual},
        new Object[] {"activation", activation == null ? "none" : Unary.of(activation).def().name(), "param", param},
        in -> linearEpilogue(in[0], in[1], in[2], activation, param, in[3])) : out;
  }

  private static Tensor linearEpilogueUntraced(Tensor x, Tensor weight, Tensor bias, UnaryOp activation, double param,
      Tensor residual) {
    String op = LINEAR_EPILOGUE.name();
    if (activation != null && !EPILOGUE_ACTIVATIONS.contains(activation)) {
      throw Check.fail(op, "activation must be one of " + EPILOGUE_ACTIVATIONS + ", got " + activation, "x", x);
    }
    checkFloat(op, x, weight);
    if (x.dim() < 1 || weight.dim() != 2 || x.shapeRef()[x.dim() - 1] != weight.shapeRef()[1]) {
      throw Check.fail(op, "expects x [..., in] and weight [out, in]", "x", x, "weight", weight);
    }
    int outF = weight.shapeRef()[0];
    if (bias != null && (bias.dim() != 1 || bias.shapeRef()[0] != outF)) {
      throw Check.fail(op, "bias must be [out_features] = [" + outF + "]", "bias", bias, "weight", weight);
    }
    int[] shape = x.shape();
    shape[shape.length - 1] = outF;
    if (residual != null && (!Arrays.equals(residual.shapeRef(), shape) || residual.dtype() != x.dtype()
        || residual.device() != x.device())) {
      throw Check.fail(op, "residual must be a " + x.dtype().torchName() + " tensor of the output's shape "
          + Arrays.toString(shape) + " on " + x.device(), "x", x, "weight", weight, "residual", residual);
    }
    if (Autocast.dtype() != null || x.dtype().isHalf()) { // the ops themselves: their casts and roundings
      Tensor y = linearOfCheckedShapesUntraced(x, weight, bias);
      if (activation != null) y = Unary.of(activation).apply(y, param);
      return residual == null ? y : y.add(residual);
    }
    if (bias != null && bias.device() != x.device()) {
      throw Check.fail(op, "tensors are on different devices (" + x.device() + " vs " + bias.device() + ")",
          "x", x, "bias", bias);
    }
    Tensor x2 = x.dim() == 2 ? x : x.reshape(-1, weight.shapeRef()[1]);
    int m = x2.shapeRef()[0];
    Tensor biasT = bias == null ? null : bias.to(computeDtype(x, weight));
    Tensor res2; // the kernel's view; the node records the residual itself, whose gradient arrives as eager's add gives it
    try (Grad ignored = Grad.off()) {
      res2 = residual == null || residual.dim() == 2 ? residual : residual.reshape(m, outF);
    }
    boolean needGrad = Grad.enabled() && (x2.requiresGrad() || weight.requiresGrad()
        || (biasT != null && biasT.requiresGrad()) || (residual != null && residual.requiresGrad()));
    Unary act = activation == null ? null : Unary.of(activation);
    Tensor z = linearProduct(x2, weight, biasT, m, outF);
    // in place unless the backward reads what would be overwritten: the product (the activation's input), or the
    // activation's output under the residual sum
    Tensor a = act == null ? z : needGrad ? z.newEmpty(z.shapeRef()) : z;
    Tensor y = residual == null ? a : needGrad && act != null && act.def().reads().output() ? a.newEmpty(a.shapeRef()) : a;
    if (act != null || residual != null) ElementwiseOps.backend(y).epilogue(activation, param, z, a, res2, y);
    Tensor out = Autograd.record(op, y, (ctx, g) -> {
      Tensor gz = g;
      if (act != null) gz = act.gradient(param, z, y == a ? ctx.out() : a, g);
      return new Tensor[] {
          ctx.edgeNeeded(0) ? mm(gz, ctx.in(1)).to(ctx.in(0).dtype()) : null,
          ctx.edgeNeeded(1) ? weightGrad(gz, ctx.in(0), ctx.in(1)) : null,
          ctx.edgeNeeded(2) ? gz.sumTo(new int[] {outF}) : null,
          ctx.edgeNeeded(3) ? g.reshape(shape) : null};
    }, new Tensor[] {x2, weight, biasT, residual});
    return x.dim() == 2 ? out : out.reshape(shape);
  }

  /** A half linear's bias in F32, after rounding to x's half dtype (the dtype it would have in torch). */
  private static Tensor halfBias(Tensor bias, Tensor x) {
    return bias == null ? null : bias.to(x.dtype()).to(DType.F32);
  }

  /** Dot product of two vectors. */
  public static Tensor dot(Tensor a, Tensor b) {
    Tensor out = dotUntraced(a, b);
    return Tracing.active() ? Tracing.op(DOT.name(), out, new Tensor[] {a, b}, new Object[] {},
        in -> dot(in[0], in[1])) : out;
  }

  private static Tensor dotUntraced(Tensor a, Tensor b) {
    if (a.dim() != 1 || b.dim() != 1 || a.shapeRef()[0] != b.shapeRef()[0]) {
      throw Check.fail("dot", "expects two 1-d tensors of the same length", "a", a, "b", b);
    }
    if (Autocast.dtype() != null) {
      a = Autocast.input(DOT.name(), a);
      b = Autocast.input(DOT.name(), b);
    }
    return matmulAsGiven(a, b);
  }

  static boolean isF64(Tensor t) {
    return t.dtype() == DType.F64;
  }
}
