package dev.ember.ops;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.function.Supplier;

/**
 * Elementwise ops: forward on the backend, backward written with tensor ops. Binary ops broadcast
 * (NumPy rules) and their backward reduces the gradient back to each input's shape.
 */
public final class ElementwiseOps {
  private ElementwiseOps() {}

  static Backend backend() {
    return dev.ember.tensor.Device.CPU.backend();
  }

  private static final double SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

  /** Ops that keep integer dtypes; all others compute in floating point (integers promote to F32). */
  private static boolean keepsIntegers(UnaryOp op) {
    return switch (op) {
      case NEG, ABS, SIGN, SQUARE, RELU, FLOOR, CEIL, ROUND, TRUNC -> true;
      default -> false;
    };
  }

  public static Tensor unary(UnaryOp op, Tensor x) {
    return unary(op, x, 0);
  }

  public static Tensor unary(UnaryOp op, Tensor x, double param) {
    if (x.dtype() == DType.BOOL || (!x.dtype().isFloatingPoint() && !keepsIntegers(op))) x = x.to(DType.F32);
    Tensor out = Tensor.uninitialized(x.dtype(), x.shapeRef()); // the kernels write every element
    backend().unary(op, param, x, out);
    // read (and version-check) only what the rule uses: exp's backward must not fail because x changed
    return Autograd.record(name(op), out, (ctx, g) -> new Tensor[] {unaryGrad(op, param,
        readsInput(op) ? ctx.in(0) : null, readsOutput(op) ? ctx.out() : null, g)}, new Tensor[] {x});
  }

  private static boolean readsInput(UnaryOp op) {
    return switch (op) {
      case NEG, SIGN, FLOOR, CEIL, ROUND, TRUNC, EXP, EXPM1, SQRT, RSQRT, RECIPROCAL, TANH, SIGMOID -> false;
      default -> true;
    };
  }

  private static boolean readsOutput(UnaryOp op) {
    return switch (op) {
      case EXP, EXPM1, SQRT, RSQRT, RECIPROCAL, TANH, SIGMOID, ELU -> true;
      default -> false;
    };
  }

  static String name(UnaryOp op) {
    return switch (op) {
      case LEAKY_RELU -> "leaky_relu";
      case GELU_TANH -> "gelu_tanh";
      case POW_SCALAR -> "pow";
      default -> op.name().toLowerCase();
    };
  }

  private static Tensor unaryGrad(UnaryOp op, double p, Tensor x, Tensor out, Tensor g) {
    return switch (op) {
      case NEG -> g.neg();
      case ABS -> g.mul(x.sign());
      case SIGN, FLOOR, CEIL, ROUND, TRUNC -> Tensor.zerosLike(g);
      case EXP -> g.mul(out);
      case LOG -> g.div(x);
      case LOG1P -> g.div(x.add(1));
      case EXPM1 -> g.mul(out.add(1));
      case SQRT -> g.div(out.mul(2));
      case RSQRT -> g.mul(out.mul(out).mul(out).mul(-0.5));
      case SQUARE -> g.mul(x.mul(2));
      case RECIPROCAL -> g.mul(out.mul(out)).neg();
      case SIN -> g.mul(x.cos());
      case COS -> g.mul(x.sin()).neg();
      case TANH -> fusedGrad(op, out, g, () -> g.mul(out.mul(out).neg().add(1)));
      case SIGMOID -> fusedGrad(op, out, g, () -> g.mul(out.mul(out.neg().add(1))));
      case RELU -> fusedGrad(op, x, g, () -> g.mul(x.gt(0).to(g.dtype())));
      case LEAKY_RELU -> g.mul(where(x.gt(0), Tensor.scalar(1, g.dtype()), Tensor.scalar(p, g.dtype())));
      case ELU -> g.mul(where(x.gt(0), Tensor.scalar(1, g.dtype()), out.add(p)));
      case GELU -> {
        // d/dx x*Phi(x) = Phi(x) + x*phi(x)
        Tensor cdf = unary(UnaryOp.GELU, x).div(x); // Phi(x) except at 0
        Tensor phi = x.square().mul(-0.5).exp().mul(1 / Math.sqrt(2 * Math.PI));
        Tensor safeCdf = where(x.eq(0), Tensor.scalar(0.5, x.dtype()), cdf);
        yield g.mul(safeCdf.add(x.mul(phi)));
      }
      case GELU_TANH -> {
        Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(SQRT_2_OVER_PI);
        Tensor th = inner.tanh();
        Tensor dInner = x.square().mul(3 * 0.044715).add(1).mul(SQRT_2_OVER_PI);
        Tensor d = th.add(1).mul(0.5).add(x.mul(0.5).mul(th.square().neg().add(1)).mul(dInner));
        yield g.mul(d);
      }
      case SILU -> {
        Tensor s = x.sigmoid();
        yield g.mul(s.mul(x.mul(s.neg().add(1)).add(1)));
      }
      case SOFTPLUS -> g.mul(where(x.mul(p).gt(20), Tensor.scalar(1, x.dtype()), x.mul(p).sigmoid()));
      case POW_SCALAR -> p == 0 ? Tensor.zerosLike(g) : g.mul(x.pow(p - 1).mul(p));
    };
  }

  /**
   * The backward of RELU (ref = x), TANH or SIGMOID (ref = the output) as one backend pass, the same bits
   * as {@code composite}: when g and ref are F32 or F64 of one dtype and shape and the backward is not
   * itself being recorded. Otherwise the composite, which takes three or four passes and as many new
   * buffers: at 1024 x 1024, tanh's backward went from 4 ops to 1.
   */
  private static Tensor fusedGrad(UnaryOp op, Tensor ref, Tensor g, Supplier<Tensor> composite) {
    DType dt = g.dtype();
    if (!Grad.enabled() && (dt == DType.F32 || dt == DType.F64) && ref.dtype() == dt
        && java.util.Arrays.equals(ref.shapeRef(), g.shapeRef())) {
      Tensor out = Tensor.uninitialized(dt, g.shapeRef());
      backend().unaryBackward(op, g, ref, out);
      return out;
    }
    return composite.get();
  }

  public static Tensor leakyRelu(Tensor x, double negativeSlope) {
    return unary(UnaryOp.LEAKY_RELU, x, negativeSlope);
  }

  public static Tensor elu(Tensor x, double alpha) {
    return unary(UnaryOp.ELU, x, alpha);
  }

  /** GELU, exact (erf) or with the tanh approximation. */
  public static Tensor gelu(Tensor x, boolean tanhApproximation) {
    return unary(tanhApproximation ? UnaryOp.GELU_TANH : UnaryOp.GELU, x);
  }

  public static Tensor silu(Tensor x) {
    return unary(UnaryOp.SILU, x);
  }

  public static Tensor softplus(Tensor x, double beta) {
    if (beta <= 0) throw Check.fail("softplus", "beta must be positive, got " + beta, "x", x);
    return unary(UnaryOp.SOFTPLUS, x, beta);
  }

  public static Tensor powScalar(Tensor x, double exponent) {
    return unary(UnaryOp.POW_SCALAR, x, exponent);
  }

  // ------------------------------------------------------------------ binary

  public static Tensor add(Tensor a, Tensor b) {
    return binary("add", BinaryOp.ADD, a, b);
  }

  public static Tensor sub(Tensor a, Tensor b) {
    return binary("sub", BinaryOp.SUB, a, b);
  }

  public static Tensor mul(Tensor a, Tensor b) {
    return binary("mul", BinaryOp.MUL, a, b);
  }

  public static Tensor div(Tensor a, Tensor b) {
    if (!a.dtype().isFloatingPoint() && !b.dtype().isFloatingPoint()) {
      a = a.to(DType.F32); // true division, as torch.div
      b = b.to(DType.F32);
    }
    return binary("div", BinaryOp.DIV, a, b);
  }

  public static Tensor pow(Tensor a, Tensor b) {
    return binary("pow", BinaryOp.POW, a, b);
  }

  public static Tensor maximum(Tensor a, Tensor b) {
    return binary("maximum", BinaryOp.MAXIMUM, a, b);
  }

  public static Tensor minimum(Tensor a, Tensor b) {
    return binary("minimum", BinaryOp.MINIMUM, a, b);
  }

  static Tensor binary(String name, BinaryOp op, Tensor a, Tensor b) {
    Check.sameDevice(name, a, b);
    int[] shape = Shapes.broadcast(name, a.shapeRef(), b.shapeRef());
    DType dt = DType.promote(a.dtype(), b.dtype());
    Tensor a2 = a.to(dt);
    Tensor b2 = b.to(dt);
    Tensor out = Tensor.uninitialized(dt, shape);
    backend().binary(op, Views.expand(a2, shape), Views.expand(b2, shape), out);
    return Autograd.record(name, out, (ctx, g) -> binaryGrad(op, ctx, g),
        new Tensor[] {a2, b2});
  }

  private static Tensor[] binaryGrad(BinaryOp op, dev.ember.autograd.Ctx ctx, Tensor g) {
    int[] sa = ctx.inShape(0);
    int[] sb = ctx.inShape(1);
    return switch (op) {
      case ADD -> new Tensor[] {g.sumTo(sa), g.sumTo(sb)};
      case SUB -> new Tensor[] {g.sumTo(sa), g.neg().sumTo(sb)};
      // only inputs that take a gradient are computed (and read): x.mul(2) must not read or reduce for the 2
      case MUL -> new Tensor[] {ctx.edgeNeeded(0) ? g.mul(ctx.in(1)).sumTo(sa) : null,
          ctx.edgeNeeded(1) ? g.mul(ctx.in(0)).sumTo(sb) : null};
      case DIV -> {
        Tensor b = ctx.in(1);
        yield new Tensor[] {ctx.edgeNeeded(0) ? g.div(b).sumTo(sa) : null,
            ctx.edgeNeeded(1) ? g.mul(ctx.in(0)).div(b.square()).neg().sumTo(sb) : null};
      }
      case POW -> {
        Tensor a = ctx.in(0);
        Tensor b = ctx.in(1);
        Tensor ga = g.mul(b).mul(a.pow(b.sub(1)));
        // d/db a^b = a^b log a; defined as 0 where a == 0 and b >= 0 (as PyTorch)
        Tensor logA = where(a.eq(0), Tensor.scalar(0, a.dtype()), a.log());
        Tensor gb = g.mul(ctx.out()).mul(logA);
        yield new Tensor[] {ga.sumTo(sa), gb.sumTo(sb)};
      }
      case MAXIMUM, MINIMUM -> {
        Tensor a = ctx.in(0);
        Tensor b = ctx.in(1);
        // ties split the gradient evenly, as PyTorch
        Tensor wins = (op == BinaryOp.MAXIMUM ? a.gt(b) : a.lt(b)).to(g.dtype());
        Tensor ties = a.eq(b).to(g.dtype()).mul(0.5);
        Tensor wa = wins.add(ties);
        yield new Tensor[] {g.mul(wa).sumTo(sa), g.mul(wa.neg().add(1)).sumTo(sb)};
      }
      default -> throw new AssertionError(op + " has no gradient");
    };
  }

  public static Tensor addScalar(Tensor x, double s) {
    return binary("add", BinaryOp.ADD, x, scalarLike(x, s));
  }

  public static Tensor mulScalar(Tensor x, double s) {
    return binary("mul", BinaryOp.MUL, x, scalarLike(x, s));
  }

  public static Tensor divScalar(Tensor x, double s) {
    Tensor xf = x.dtype().isFloatingPoint() ? x : x.to(DType.F32);
    return binary("div", BinaryOp.DIV, xf, Tensor.scalar(s, xf.dtype()));
  }

  /** A 0-d tensor of x's dtype, or F32 when x is integral and s is not (as PyTorch's scalar promotion). */
  private static Tensor scalarLike(Tensor x, double s) {
    DType dt = x.dtype();
    if (!dt.isFloatingPoint() && s != Math.rint(s)) dt = DType.F32;
    if (dt == DType.BOOL) dt = DType.I64;
    return Tensor.scalar(s, dt);
  }

  // ------------------------------------------------------------------ comparisons, logic, selection

  public static Tensor compare(BinaryOp op, Tensor a, Tensor b) {
    String name = op.name().toLowerCase();
    Check.sameDevice(name, a, b);
    int[] shape = Shapes.broadcast(name, a.shapeRef(), b.shapeRef());
    Tensor out = Tensor.uninitialized(DType.BOOL, shape);
    backend().binary(op, Views.expand(a, shape), Views.expand(b, shape), out);
    return out;
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
    if (!x.dtype().isFloatingPoint()) return Tensor.zeros(DType.BOOL, x.shapeRef());
    return compare(BinaryOp.EQ, unary(UnaryOp.ABS, x.detach()), Tensor.scalar(Double.POSITIVE_INFINITY, x.dtype()));
  }

  public static Tensor isfinite(Tensor x) {
    return logicalNot(logicalOr(isnan(x), isinf(x)));
  }

  /** cond ? a : b, broadcasting all three; differentiable in a and b. */
  public static Tensor where(Tensor cond, Tensor a, Tensor b) {
    int[] shape = Shapes.broadcast("where", Shapes.broadcast("where", cond.shapeRef(), a.shapeRef()), b.shapeRef());
    DType dt = DType.promote(a.dtype(), b.dtype());
    Tensor a2 = a.to(dt);
    Tensor b2 = b.to(dt);
    Tensor out = Tensor.uninitialized(dt, shape);
    backend().where(Views.expand(cond, shape), Views.expand(a2, shape), Views.expand(b2, shape), out);
    return Autograd.record("where", out, (ctx, g) -> {
      Tensor zero = Tensor.scalar(0, g.dtype());
      Tensor c = ctx.in(2);
      return new Tensor[] {where(c, g, zero).sumTo(ctx.inShape(0)), where(c, zero, g).sumTo(ctx.inShape(1)), null};
    }, new Tensor[] {a2, b2, cond});
  }

  /** min(max(x, lo), hi); the gradient flows where lo &lt;= x &lt;= hi. NaN bounds are not allowed. */
  public static Tensor clamp(Tensor x, double lo, double hi) {
    if (Double.isNaN(lo) || Double.isNaN(hi) || lo > hi) {
      throw Check.fail("clamp", "min must not exceed max (min " + lo + ", max " + hi + ")", "x", x);
    }
    Tensor out = Tensor.uninitialized(x.dtype(), x.shapeRef());
    Tensor tmp = Tensor.uninitialized(x.dtype(), x.shapeRef());
    backend().binary(BinaryOp.MAXIMUM, x, Views.expand(Tensor.scalar(lo, x.dtype()), x.shapeRef()), tmp);
    backend().binary(BinaryOp.MINIMUM, tmp, Views.expand(Tensor.scalar(hi, x.dtype()), x.shapeRef()), out);
    return Autograd.record("clamp", out, (ctx, g) -> {
      Tensor xi = ctx.in(0);
      Tensor inside = logicalAnd(xi.ge(lo), xi.le(hi)).to(g.dtype());
      return new Tensor[] {g.mul(inside)};
    }, new Tensor[] {x});
  }

  /** Type conversion; differentiable between floating types (the gradient converts back). */
  public static Tensor cast(Tensor x, DType dtype) {
    Tensor out = Tensor.uninitialized(dtype, x.shapeRef());
    backend().copy(x, out);
    if (!dtype.isFloatingPoint() || !x.dtype().isFloatingPoint()) return out;
    DType from = x.dtype();
    return Autograd.record("to", out, (ctx, g) -> new Tensor[] {g.to(from)}, new Tensor[] {x});
  }

  // ------------------------------------------------------------------ in place

  private static void checkInPlace(String op, Tensor self) {
    if (Grad.enabled() && self.requiresGrad()) {
      throw new IllegalStateException(op + ": in-place change of a tensor " + java.util.Arrays.toString(self.shapeRef())
          + " that requires grad while recording; hint: wrap parameter updates in Grad.off(), or use the"
          + " out-of-place op");
    }
  }

  /** self = self op other (other broadcasts to self's shape). Bumps self's version. */
  public static Tensor inPlace(BinaryOp op, Tensor self, Tensor other) {
    String name = op.name().toLowerCase() + "_";
    checkInPlace(name, self);
    int[] shape = Shapes.broadcast(name, self.shapeRef(), other.shapeRef());
    if (!java.util.Arrays.equals(shape, self.shapeRef())) {
      throw Check.fail(name, "result shape " + Shapes.str(shape) + " differs from the tensor's shape", "self", self,
          "other", other);
    }
    Tensor o = other.dtype() == self.dtype() ? other : other.detach().to(self.dtype());
    backend().binary(op, self, Views.expand(o, shape), self);
    self.storage().bumpVersion();
    return self;
  }

  public static Tensor copy_(Tensor self, Tensor src) {
    checkInPlace("copy_", self);
    int[] shape = Shapes.broadcast("copy_", self.shapeRef(), src.shapeRef());
    if (!java.util.Arrays.equals(shape, self.shapeRef())) {
      throw Check.fail("copy_", "source does not broadcast to the destination", "self", self, "src", src);
    }
    backend().copy(Views.expand(src, shape), self);
    self.storage().bumpVersion();
    return self;
  }

  public static Tensor fill_(Tensor self, double value) {
    checkInPlace("fill_", self);
    Storage st = self.storage();
    if (self.spansStorage()) {
      st.discardDeferred(); // every element is overwritten: a deferred value need not be computed first
    }
    backend().fill(self, value);
    st.bumpVersion();
    return self;
  }

  public static Tensor clamp_(Tensor self, double lo, double hi) {
    checkInPlace("clamp_", self);
    if (Double.isNaN(lo) || Double.isNaN(hi) || lo > hi) {
      throw Check.fail("clamp_", "min must not exceed max (min " + lo + ", max " + hi + ")", "x", self);
    }
    backend().binary(BinaryOp.MAXIMUM, self, Views.expand(Tensor.scalar(lo, self.dtype()), self.shapeRef()), self);
    backend().binary(BinaryOp.MINIMUM, self, Views.expand(Tensor.scalar(hi, self.dtype()), self.shapeRef()), self);
    self.storage().bumpVersion();
    return self;
  }
}
