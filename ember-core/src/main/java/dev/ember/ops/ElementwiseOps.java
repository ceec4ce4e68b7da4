package dev.ember.ops;

import dev.ember.autograd.Tracing;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Backward;
import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.MemoryOverlap;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.List;

/**
 * Elementwise ops: the public entry points of the {@link Unary} and {@link Binary} definitions (which hold each op's
 * forward, dtype policy and backward), and the ops that are not one primitive: where, clamp, cast, the predicates
 * built from comparisons, and the in-place forms.
 */
public final class ElementwiseOps {
  private ElementwiseOps() {}

  // The definitions of the elementwise ops that are not one primitive (see OpDef); Unary and Binary define the rest.
  static final OpDef WHERE = OpDef.of("where", 3, DTypePolicy.PROMOTED, Reads.INPUTS);
  static final OpDef CLAMP = OpDef.of("clamp", 1, DTypePolicy.PROMOTED, Reads.INPUTS);
  /** The cast {@code x.to(dtype)}; only a cast between floating dtypes records a gradient. */
  static final OpDef CAST = OpDef.of("to", 1, DTypePolicy.REQUESTED, Reads.NOTHING);
  static final OpDef LOGICAL_NOT = OpDef.noGrad("logical_not", 1, DTypePolicy.PREDICATE);
  static final OpDef ISNAN = OpDef.noGrad("isnan", 1, DTypePolicy.PREDICATE);
  static final OpDef ISINF = OpDef.noGrad("isinf", 1, DTypePolicy.PREDICATE);
  static final OpDef ISFINITE = OpDef.noGrad("isfinite", 1, DTypePolicy.PREDICATE);
  static final List<OpDef> DEFINITIONS = List.of(WHERE, CLAMP, CAST, LOGICAL_NOT, ISNAN, ISINF, ISFINITE);

  /**
   * The device an op on these operands runs on, once {@link Check#sameDevice} has passed: the first one not on the
   * CPU (a 0-d CPU tensor goes along with a device tensor, as in PyTorch), else the CPU.
   */
  static Device deviceOf(Tensor... operands) {
    for (Tensor t : operands) if (!t.device().isCpu()) return t.device();
    return Device.CPU;
  }

  /** t on {@code device}: itself, or (a 0-d CPU scalar meeting a device tensor) its copy there, differentiable. */
  static Tensor on(Device device, Tensor t) {
    if (t.device() == device) return t;
    if (t.dim() == 0 && t.device().isCpu() && !t.requiresGrad() && fillsExactly(t)) {
      // a host scalar (mul(2.5), where's 0): filled on the device, which queues a fill, instead of copied up, which on
      // a GPU waits for every queued kernel first
      Tensor d = Tensor.uninitialized(device, t.dtype());
      device.backend().fill(d, t.storage().getDouble(t.offset()));
      return d;
    }
    return t.to(device);
  }

  /** Whether a fill with host scalar t's value as a double reproduces it: floats, BOOL, integers within 2^53. */
  private static boolean fillsExactly(Tensor t) {
    if (t.dtype().isFloatingPoint() || t.dtype() == DType.BOOL) return true;
    long v = t.storage().getLong(t.offset());
    return Math.abs(v) <= (1L << 53);
  }

  /**
   * The backend that computes into {@code out}: its device's. Ops allocate their outputs on their inputs' device
   * ({@link Tensor#newEmpty}, {@link Tensor#uninitialized(dev.ember.tensor.Device, DType, int...)}), so the output
   * names the device the op runs on.
   */
  static Backend backend(dev.ember.backend.View out) {
    Storage st = out.storage();
    return st.onDevice() ? st.device().backend() : Device.CPU.backend();
  }

  /** op(x) for a unary primitive without a parameter, as its {@link Unary} constant defines it. */
  public static Tensor unary(UnaryOp op, Tensor x) {
    return Unary.of(op).apply(x, 0);
  }

  /** op(x) for a unary primitive with its parameter, as its {@link Unary} constant defines it. */
  public static Tensor unary(UnaryOp op, Tensor x, double param) {
    return Unary.of(op).apply(x, param);
  }

  public static Tensor leakyRelu(Tensor x, double negativeSlope) {
    return Unary.LEAKY_RELU.apply(x, negativeSlope);
  }

  public static Tensor elu(Tensor x, double alpha) {
    return Unary.ELU.apply(x, alpha);
  }

  /** GELU, exact (erf) or with the tanh approximation. */
  public static Tensor gelu(Tensor x, boolean tanhApproximation) {
    return (tanhApproximation ? Unary.GELU_TANH : Unary.GELU).apply(x, 0);
  }

  public static Tensor silu(Tensor x) {
    return Unary.SILU.apply(x, 0);
  }

  public static Tensor softplus(Tensor x, double beta) {
    if (beta <= 0) throw Check.fail("softplus", "beta must be positive, got " + beta, "x", x);
    return Unary.SOFTPLUS.apply(x, beta);
  }

  /** x tanh(softplus(x)) (PyTorch's F.mish). */
  public static Tensor mish(Tensor x) {
    return Unary.MISH.apply(x, 0);
  }

  public static Tensor powScalar(Tensor x, double exponent) {
    return Unary.POW_SCALAR.apply(x, exponent);
  }

  // ------------------------------------------------------------------ binary

  public static Tensor add(Tensor a, Tensor b) {
    return Binary.ADD.apply(a, b);
  }

  public static Tensor sub(Tensor a, Tensor b) {
    return Binary.SUB.apply(a, b);
  }

  public static Tensor mul(Tensor a, Tensor b) {
    return Binary.MUL.apply(a, b);
  }

  /** True division: integer operands divide as F32, as torch.div. */
  public static Tensor div(Tensor a, Tensor b) {
    return Binary.DIV.apply(a, b);
  }

  public static Tensor pow(Tensor a, Tensor b) {
    return Binary.POW.apply(a, b);
  }

  public static Tensor maximum(Tensor a, Tensor b) {
    return Binary.MAXIMUM.apply(a, b);
  }

  public static Tensor minimum(Tensor a, Tensor b) {
    return Binary.MINIMUM.apply(a, b);
  }

  /**
   * x + s. A BF16 or F16 x meets the scalar in F32 (not rounded to the half type first, as PyTorch's CPU kernels
   * take a Python scalar at full precision) and the sum is rounded once.
   */
  public static Tensor addScalar(Tensor x, double s) {
    if (x.dtype().isHalf()) return Binary.ADD.apply(x.to(DType.F32), Tensor.scalar(s, DType.F32)).to(x.dtype());
    return Binary.ADD.apply(x, scalarLike(x, s));
  }

  /** x * s; a BF16 or F16 x is multiplied in F32 by the unrounded scalar, as {@link #addScalar}. */
  public static Tensor mulScalar(Tensor x, double s) {
    if (x.dtype().isHalf()) return Binary.MUL.apply(x.to(DType.F32), Tensor.scalar(s, DType.F32)).to(x.dtype());
    return Binary.MUL.apply(x, scalarLike(x, s));
  }

  /** x / s; a BF16 or F16 x is divided in F32 by the unrounded scalar, as {@link #addScalar}. */
  public static Tensor divScalar(Tensor x, double s) {
    if (x.dtype().isHalf()) return Binary.DIV.apply(x.to(DType.F32), Tensor.scalar(s, DType.F32)).to(x.dtype());
    Tensor xf = x.dtype().isFloatingPoint() ? x : x.to(DType.F32);
    return Binary.DIV.apply(xf, Tensor.scalar(s, xf.dtype()));
  }

  /**
   * A 0-d tensor of x's dtype, or F32 when x is integral and s is not, or does not fit x's dtype (as PyTorch's
   * promotion for a float scalar; int32 times 1e10 gave 2147483645, the scalar clamped to int32 and the product
   * wrapped).
   */
  private static Tensor scalarLike(Tensor x, double s) {
    DType dt = x.dtype();
    if (dt == DType.BOOL) dt = DType.I64;
    if (!dt.holds(s)) dt = DType.F32;
    return Tensor.scalar(s, dt);
  }

  // ------------------------------------------------------------------ comparisons, logic, selection

  /** a op b for a comparison or logical primitive: BOOL, broadcast, no gradient. */
  public static Tensor compare(BinaryOp op, Tensor a, Tensor b) {
    return Binary.of(op).apply(a, b);
  }

  public static Tensor logicalAnd(Tensor a, Tensor b) {
    return compare(BinaryOp.LOGICAL_AND, a, b);
  }

  public static Tensor logicalOr(Tensor a, Tensor b) {
    return compare(BinaryOp.LOGICAL_OR, a, b);
  }

  public static Tensor logicalXor(Tensor a, Tensor b) {
    return compare(BinaryOp.LOGICAL_XOR, a, b);
  }

  public static Tensor logicalNot(Tensor a) {
    return compare(BinaryOp.EQ, a, Tensor.scalar(0, a.dtype()));
  }

  public static Tensor isnan(Tensor x) {
    return compare(BinaryOp.NE, x, x);
  }

  public static Tensor isinf(Tensor x) {
    if (!x.dtype().isFloatingPoint()) return Tensor.zeros(x.device(), DType.BOOL, x.shapeRef());
    return compare(BinaryOp.EQ, Unary.ABS.apply(x.detach(), 0), Tensor.scalar(Double.POSITIVE_INFINITY, x.dtype()));
  }

  public static Tensor isfinite(Tensor x) {
    return logicalNot(logicalOr(isnan(x), isinf(x)));
  }

  /** cond ? a : b, broadcasting all three; differentiable in a and b. */
  public static Tensor where(Tensor cond, Tensor a, Tensor b) {
    Tensor out = whereUntraced(cond, a, b);
    return Tracing.active() ? Tracing.op(WHERE.name(), out, new Tensor[] {cond, a, b}, new Object[0],
        in -> where(in[0], in[1], in[2])) : out;
  }

  private static Tensor whereUntraced(Tensor cond, Tensor a, Tensor b) {
    String name = WHERE.name();
    Check.sameDevice(name, cond, a);
    Check.sameDevice(name, cond, b);
    Check.sameDevice(name, a, b);
    int[] shape = Shapes.broadcast(name, Shapes.broadcast(name, cond.shapeRef(), a.shapeRef()), b.shapeRef());
    Device device = deviceOf(cond, a, b);
    cond = on(device, cond);
    DType dt = DType.promote(a.dtype(), b.dtype());
    Tensor a2 = on(device, a.to(dt));
    Tensor b2 = on(device, b.to(dt));
    Tensor out = Tensor.uninitialized(device, dt, shape);
    backend(out).where(Views.expand(cond, shape), Views.expand(a2, shape), Views.expand(b2, shape), out);
    return Autograd.record(WHERE.name(), out, (ctx, g) -> {
      Tensor zero = Tensor.scalar(0, g.dtype());
      Tensor c = ctx.in(2);
      return new Tensor[] {where(c, g, zero).sumTo(ctx.inShape(0)), where(c, zero, g).sumTo(ctx.inShape(1)), null};
    }, new Tensor[] {a2, b2, cond});
  }

  /** min(max(x, lo), hi); the gradient flows where lo &lt;= x &lt;= hi. NaN bounds are not allowed. */
  public static Tensor clamp(Tensor x, double lo, double hi) {
    Tensor out = clampUntraced(x, lo, hi);
    return Tracing.active() ? Tracing.op(CLAMP.name(), out, new Tensor[] {x}, new Object[] {"min", lo, "max", hi},
        in -> clamp(in[0], lo, hi)) : out;
  }

  private static Tensor clampUntraced(Tensor x, double lo, double hi) {
    if (Double.isNaN(lo) || Double.isNaN(hi) || lo > hi) {
      throw Check.fail(CLAMP.name(), "min must not exceed max (min " + lo + ", max " + hi + ")", "x", x);
    }
    if (x.dtype().isHalf()) return clamp(x.to(DType.F32), lo, hi).to(x.dtype());
    Tensor out = x.newEmpty(x.shapeRef());
    Tensor tmp = x.newEmpty(x.shapeRef());
    Backend be = backend(out);
    be.binary(BinaryOp.MAXIMUM, x, Views.expand(x.newFull(lo), x.shapeRef()), tmp);
    be.binary(BinaryOp.MINIMUM, tmp, Views.expand(x.newFull(hi), x.shapeRef()), out);
    return Autograd.record(CLAMP.name(), out, (ctx, g) -> {
      Tensor xi = ctx.in(0);
      Tensor inside = logicalAnd(xi.ge(lo), xi.le(hi)).to(g.dtype());
      return new Tensor[] {g.mul(inside)};
    }, new Tensor[] {x});
  }

  /** Type conversion; differentiable between floating types (the gradient converts back). */
  public static Tensor cast(Tensor x, DType dtype) {
    Tensor out = castUntraced(x, dtype);
    return Tracing.active() ? Tracing.op(CAST.name(), out, new Tensor[] {x}, new Object[] {"dtype", dtype},
        in -> cast(in[0], dtype)) : out;
  }

  private static Tensor castUntraced(Tensor x, DType dtype) {
    Tensor out = Tensor.uninitialized(x.device(), dtype, x.shapeRef());
    backend(out).copy(x, out);
    if (!dtype.isFloatingPoint() || !x.dtype().isFloatingPoint()) return out;
    DType from = x.dtype();
    return Autograd.record(CAST.name(), out, (ctx, g) -> new Tensor[] {g.to(from)}, new Tensor[] {x});
  }

  // ------------------------------------------------------------------ in place
  // Each writes self and bumps its version naming the op. While recording, with self or an operand requiring grad,
  // the write is recorded as PyTorch does (Autograd.inPlace checks, Autograd.recordInPlace rebases self's history);
  // a backward reads self's new value where that tells it enough (relu_ from its output) and keeps a copy otherwise.

  /** op(self) written into self, as its {@link Unary} constant defines it (relu_, exp_, ...). */
  public static Tensor unary_(UnaryOp op, Tensor self) {
    return Unary.of(op).applyInPlace(self, 0);
  }

  /** op(self, param) written into self (leaky_relu_, elu_, pow_). */
  public static Tensor unary_(UnaryOp op, Tensor self, double param) {
    return Unary.of(op).applyInPlace(self, param);
  }

  public static Tensor leakyRelu_(Tensor x, double negativeSlope) {
    return Unary.LEAKY_RELU.applyInPlace(x, negativeSlope);
  }

  public static Tensor elu_(Tensor x, double alpha) {
    return Unary.ELU.applyInPlace(x, alpha);
  }

  public static Tensor silu_(Tensor x) {
    return Unary.SILU.applyInPlace(x, 0);
  }

  public static Tensor mish_(Tensor x) {
    return Unary.MISH.applyInPlace(x, 0);
  }

  /**
   * self = self op other (other broadcasts to self's shape). Bumps self's version. Recorded for add, sub, mul and div
   * with rules that keep no copy of self unless mul's operand needs it; for maximum, minimum and pow with the
   * out-of-place rule, given a copy of self's old value. Refuses, as PyTorch, a self with several elements at one
   * location and an other that partly overlaps it ({@link MemoryOverlap}): the result would depend on the kernel's
   * order.
   */
  public static Tensor inPlace(BinaryOp op, Tensor self, Tensor other) {
    Tensor out = inPlaceUntraced(op, self, other);
    return Tracing.active() ? Tracing.op(op.name().toLowerCase() + "_", out, new Tensor[] {self, other},
        new Object[0], in -> inPlace(op, in[0], in[1])) : out;
  }

  private static Tensor inPlaceUntraced(BinaryOp op, Tensor self, Tensor other) {
    String name = op.name().toLowerCase() + "_";
    MemoryOverlap.checkWritable(name, self, "other", other);
    if (!op.returnsBool()) { // the out-of-place result's type must cast to self's, as PyTorch's in-place ops check
      DType result = op == BinaryOp.DIV && !self.dtype().isFloatingPoint() && !other.dtype().isFloatingPoint()
          ? DType.F32 : DType.promote(self.dtype(), other.dtype()); // true division of integers is floating
      boolean casts = self.dtype().isFloatingPoint()
          || !result.isFloatingPoint() && (self.dtype() != DType.BOOL || result == DType.BOOL);
      if (!casts) {
        throw Check.fail(name, "result type " + result.torchName() + " can't be cast to the desired output type "
            + self.dtype().torchName(), "self", self, "other", other);
      }
    }
    boolean record = Autograd.inPlace(name, self, other);
    int[] shape = Shapes.broadcast(name, self.shapeRef(), other.shapeRef());
    if (!java.util.Arrays.equals(shape, self.shapeRef())) {
      throw Check.fail(name, "result shape " + Shapes.str(shape) + " differs from the tensor's shape", "self", self,
          "other", other);
    }
    Check.sameDevice(name, self, other);
    if (MemoryOverlap.checkOperand(name, self, "other", other) == MemoryOverlap.Status.TOO_HARD && !record) {
      other = other.clone(); // the out-of-place result whatever order the kernel takes, as when recording (below)
    }
    Tensor[] operands = {self, other};
    Tensor[] saved = {null, null};
    Backward rule = null;
    if (record) {
      if (other.storage() == self.storage()) other = other.clone(); // x.mul_(x): the operand keeps its old value
      operands[1] = other;
      boolean needSelf = self.requiresGrad();
      boolean needOther = other.requiresGrad();
      int[] otherShape = other.shape();
      rule = switch (op) {
        case ADD -> (ctx, g) -> new Tensor[] {g, needOther ? g.sumTo(otherShape) : null};
        case SUB -> (ctx, g) -> new Tensor[] {g, needOther ? g.neg().sumTo(otherShape) : null};
        case MUL -> (ctx, g) -> new Tensor[] {needSelf ? g.mul(ctx.in(1)) : null,
            needOther ? g.mul(ctx.in(0)).sumTo(otherShape) : null};
        case DIV -> (ctx, g) -> new Tensor[] {needSelf ? g.div(ctx.in(1)) : null, // d(a/b)/db = -(a/b)/b
            needOther ? g.mul(ctx.out()).div(ctx.in(1)).neg().sumTo(otherShape) : null};
        default -> Binary.of(op).rule(); // reads self's old value (a copy), the operand and the result
      };
      if (rule == null) throw Check.fail(name, "the result has no gradient", "self", self, "other", other);
      boolean general = op != BinaryOp.ADD && op != BinaryOp.SUB && op != BinaryOp.MUL && op != BinaryOp.DIV;
      if (op == BinaryOp.MUL || op == BinaryOp.DIV || general) saved[1] = other;
      if (op == BinaryOp.MUL && needOther || general) saved[0] = self.detach().cloneContiguous(); // self's value before
    }
    if (self.dtype().isHalf()) { // computed in F32 and rounded once into self, as the out-of-place op
      Tensor of = other.detach().to(DType.promote(self.dtype(), other.dtype())).to(DType.F32);
      Tensor r = Tensor.uninitialized(self.device(), DType.F32, shape);
      backend(r).binary(op, self.detach().to(DType.F32), Views.expand(on(self.device(), of), shape), r);
      backend(self).copy(r, self);
    } else {
      Tensor o = other.dtype() == self.dtype() ? other : other.detach().to(self.dtype());
      o = on(self.device(), o.detach());
      backend(self).binary(op, self, Views.expand(o, shape), self);
    }
    self.storage().bumpVersion(name);
    return record ? Autograd.recordInPlace(name, self, rule, operands, saved) : self;
  }

  /**
   * Copies src (broadcast, converted, moved between devices) into self; differentiable in src. Refuses overlap as
   * {@link #inPlace} does.
   */
  public static Tensor copy_(Tensor self, Tensor src) {
    Tensor out = copyUntraced(self, src);
    return Tracing.active() ? Tracing.op("copy_", out, new Tensor[] {self, src}, new Object[0],
        in -> copy_(in[0], in[1])) : out;
  }

  private static Tensor copyUntraced(Tensor self, Tensor src) {
    MemoryOverlap.checkWritable("copy_", self, "src", src);
    boolean record = Autograd.inPlace("copy_", self, src);
    int[] shape = Shapes.broadcast("copy_", self.shapeRef(), src.shapeRef());
    if (!java.util.Arrays.equals(shape, self.shapeRef())) {
      throw Check.fail("copy_", "source does not broadcast to the destination", "self", self, "src", src);
    }
    boolean tooHard = MemoryOverlap.checkOperand("copy_", self, "src", src) == MemoryOverlap.Status.TOO_HARD;
    if (tooHard || record && src.storage() == self.storage()) src = src.clone(); // read before written
    Tensor from = src;
    if (src.device() != self.device()) src = src.detach().to(self.device()); // copy_ moves between devices
    backend(self).copy(Views.expand(src, shape), self);
    self.storage().bumpVersion("copy_");
    if (!record) return self;
    int[] srcShape = from.shape();
    Device srcDevice = from.device();
    boolean needSrc = from.requiresGrad();
    return Autograd.recordInPlace("copy_", self, (ctx, g) -> new Tensor[] {Tensor.zerosLike(g), // self's old value is gone
        needSrc ? on(srcDevice, g.sumTo(srcShape)) : null}, new Tensor[] {self, from}, new Tensor[2]);
  }

  public static Tensor fill_(Tensor self, double value) {
    boolean record = Autograd.inPlace("fill_", self);
    Storage st = self.storage();
    if (self.spansStorage()) {
      st.discardDeferred(); // every element is overwritten: a deferred value need not be computed first
    }
    backend(self).fill(self, value);
    st.bumpVersion("fill_");
    if (!record) return self;
    return Autograd.recordInPlace("fill_", self, (ctx, g) -> new Tensor[] {Tensor.zerosLike(g)}, new Tensor[] {self},
        new Tensor[1]);
  }

  /** min(max(self, lo), hi) into self; the gradient flows where lo &lt;= self &lt;= hi (a mask kept, not a copy). */
  public static Tensor clamp_(Tensor self, double lo, double hi) {
    Tensor out = clampInPlaceUntraced(self, lo, hi);
    return Tracing.active() ? Tracing.op("clamp_", out, new Tensor[] {self}, new Object[] {"min", lo, "max", hi},
        in -> clamp_(in[0], lo, hi)) : out;
  }

  private static Tensor clampInPlaceUntraced(Tensor self, double lo, double hi) {
    MemoryOverlap.checkWritable("clamp_", self);
    boolean record = Autograd.inPlace("clamp_", self);
    if (Double.isNaN(lo) || Double.isNaN(hi) || lo > hi) {
      throw Check.fail("clamp_", "min must not exceed max (min " + lo + ", max " + hi + ")", "x", self);
    }
    Tensor inside = record ? logicalAnd(self.ge(lo), self.le(hi)) : null;
    if (self.dtype().isHalf()) { // clamping a half value gives a half value: no rounding, F32 only for the kernel
      backend(self).copy(clamp(self.detach().to(DType.F32), lo, hi), self);
    } else {
      Backend be = backend(self);
      be.binary(BinaryOp.MAXIMUM, self, Views.expand(self.newFull(lo), self.shapeRef()), self);
      be.binary(BinaryOp.MINIMUM, self, Views.expand(self.newFull(hi), self.shapeRef()), self);
    }
    self.storage().bumpVersion("clamp_");
    if (!record) return self;
    return Autograd.recordInPlace("clamp_", self, (ctx, g) -> new Tensor[] {g.mul(inside.to(g.dtype()))},
        new Tensor[] {self}, new Tensor[1]);
  }
}
