package dev.ember.ops;

import static dev.ember.ops.DTypePolicy.FLOATING;
import static dev.ember.ops.DTypePolicy.NUMERIC;
import static dev.ember.ops.ElementwiseOps.where;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;
import static dev.ember.ops.Reads.NOTHING;
import static dev.ember.ops.Reads.OUTPUT;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.autograd.Tracing;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.util.function.Supplier;

/**
 * The unary elementwise ops, each defined once by its constant: name, dtype policy, what its backward reads, its
 * forward (a backend {@link UnaryOp} primitive, or a composite of other ops run without recording, so that the op
 * is one node on the tape) and its backward, written with tensor ops so that it runs on every backend and can
 * itself be differentiated.
 *
 * <p>Adding an op is one constant here plus its public entry point (e.g. a {@code Tensor} method) and its op-table
 * entry: with a composite forward it needs no kernel; a hand-written kernel can come later as a primitive.
 */
public enum Unary {
  NEG("neg", NUMERIC, NOTHING, UnaryOp.NEG, (p, x, out, g) -> g.neg()),
  ABS("abs", NUMERIC, INPUTS, UnaryOp.ABS, (p, x, out, g) -> g.mul(x.sign())),
  SIGN("sign", NUMERIC, NOTHING, UnaryOp.SIGN, (p, x, out, g) -> Tensor.zerosLike(g)),
  EXP("exp", FLOATING, OUTPUT, UnaryOp.EXP, (p, x, out, g) -> g.mul(out)),
  LOG("log", FLOATING, INPUTS, UnaryOp.LOG, (p, x, out, g) -> g.div(x)),
  LOG1P("log1p", FLOATING, INPUTS, UnaryOp.LOG1P, (p, x, out, g) -> g.div(x.add(1))),
  EXPM1("expm1", FLOATING, OUTPUT, UnaryOp.EXPM1, (p, x, out, g) -> g.mul(out.add(1))),
  SQRT("sqrt", FLOATING, OUTPUT, UnaryOp.SQRT, (p, x, out, g) -> g.div(out.mul(2))),
  RSQRT("rsqrt", FLOATING, OUTPUT, UnaryOp.RSQRT, (p, x, out, g) -> g.mul(out.mul(out).mul(out).mul(-0.5))),
  SQUARE("square", NUMERIC, INPUTS, UnaryOp.SQUARE, (p, x, out, g) -> g.mul(x.mul(2))),
  RECIPROCAL("reciprocal", FLOATING, OUTPUT, UnaryOp.RECIPROCAL, (p, x, out, g) -> g.mul(out.mul(out)).neg()),
  SIN("sin", FLOATING, INPUTS, UnaryOp.SIN, (p, x, out, g) -> g.mul(x.cos())),
  COS("cos", FLOATING, INPUTS, UnaryOp.COS, (p, x, out, g) -> g.mul(x.sin()).neg()),
  TANH("tanh", FLOATING, OUTPUT, UnaryOp.TANH,
      (p, x, out, g) -> fusedGrad(UnaryOp.TANH, out, g, () -> g.mul(out.mul(out).neg().add(1)))),
  SIGMOID("sigmoid", FLOATING, OUTPUT, UnaryOp.SIGMOID,
      (p, x, out, g) -> fusedGrad(UnaryOp.SIGMOID, out, g, () -> g.mul(out.mul(out.neg().add(1))))),
  RELU("relu", NUMERIC, INPUTS, UnaryOp.RELU,
      (p, x, out, g) -> fusedGrad(UnaryOp.RELU, x, g, () -> g.mul(x.gt(0).to(g.dtype())))),
  LEAKY_RELU("leaky_relu", FLOATING, INPUTS, UnaryOp.LEAKY_RELU,
      (p, x, out, g) -> g.mul(where(x.gt(0), Tensor.scalar(1, g.dtype()), Tensor.scalar(p, g.dtype())))),
  ELU("elu", FLOATING, INPUTS_AND_OUTPUT, UnaryOp.ELU,
      (p, x, out, g) -> g.mul(where(x.gt(0), Tensor.scalar(1, g.dtype()), out.add(p)))),
  GELU("gelu", FLOATING, INPUTS, UnaryOp.GELU, Unary::geluGrad),
  GELU_TANH("gelu_tanh", FLOATING, INPUTS, UnaryOp.GELU_TANH, Unary::geluTanhGrad),
  SILU("silu", FLOATING, INPUTS, UnaryOp.SILU, (p, x, out, g) -> {
    Tensor s = x.sigmoid();
    return g.mul(s.mul(x.mul(s.neg().add(1)).add(1)));
  }),
  SOFTPLUS("softplus", FLOATING, INPUTS, UnaryOp.SOFTPLUS,
      (p, x, out, g) -> g.mul(where(x.mul(p).gt(20), Tensor.scalar(1, x.dtype()), x.mul(p).sigmoid()))),
  /** x to a constant power; recorded on the tape as {@code pow}, as the tensor-exponent {@code pow}. */
  POW_SCALAR("pow_scalar", "pow", FLOATING, INPUTS, UnaryOp.POW_SCALAR, null,
      (p, x, out, g) -> p == 0 ? Tensor.zerosLike(g) : g.mul(x.pow(p - 1).mul(p))),
  FLOOR("floor", NUMERIC, NOTHING, UnaryOp.FLOOR, (p, x, out, g) -> Tensor.zerosLike(g)),
  CEIL("ceil", NUMERIC, NOTHING, UnaryOp.CEIL, (p, x, out, g) -> Tensor.zerosLike(g)),
  ROUND("round", NUMERIC, NOTHING, UnaryOp.ROUND, (p, x, out, g) -> Tensor.zerosLike(g)),
  TRUNC("trunc", NUMERIC, NOTHING, UnaryOp.TRUNC, (p, x, out, g) -> Tensor.zerosLike(g)),
  /** x tanh(softplus(x)), as PyTorch's F.mish (Misra 2019): no kernel of its own, a composite forward. */
  MISH("mish", FLOATING, INPUTS, Unary::mish, Unary::mishGrad);

  /** A unary op's gradient: x is null unless its backward reads inputs, out unless it reads the output. */
  @FunctionalInterface
  interface Rule {
    Tensor grad(double param, Tensor x, Tensor out, Tensor g);
  }

  /** A forward written with other ops (run with recording off): the op's value at x. */
  @FunctionalInterface
  interface Composite {
    Tensor forward(Tensor x, double param);
  }

  private static final double SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);
  /** The definition of each primitive, by ordinal: {@link ElementwiseOps#unary} finds it without a map. */
  private static final Unary[] BY_PRIMITIVE = new Unary[UnaryOp.values().length];

  static {
    for (Unary u : values()) if (u.primitive != null) BY_PRIMITIVE[u.primitive.ordinal()] = u;
    for (UnaryOp op : UnaryOp.values()) {
      if (BY_PRIMITIVE[op.ordinal()] == null) throw new IllegalStateException("UnaryOp." + op + " has no definition");
    }
  }

  private final OpDef def;
  private final String tapeName;
  private final UnaryOp primitive;
  private final Composite composite;
  private final Rule rule;
  /** Whether autocast casts this op's input ({@link Autocast}'s lists name it): the others never read its state. */
  private final boolean autocast;

  /** An op with a backend primitive. */
  Unary(String name, DTypePolicy dtypes, Reads reads, UnaryOp primitive, Rule rule) {
    this(name, name, dtypes, reads, primitive, null, rule);
  }

  /** An op whose forward is a composite of other ops. */
  Unary(String name, DTypePolicy dtypes, Reads reads, Composite composite, Rule rule) {
    this(name, name, dtypes, reads, null, composite, rule);
  }

  Unary(String name, String tapeName, DTypePolicy dtypes, Reads reads, UnaryOp primitive, Composite composite,
      Rule rule) {
    this.def = OpDef.of(name, 1, dtypes, reads);
    this.tapeName = tapeName;
    this.primitive = primitive;
    this.composite = composite;
    this.rule = rule;
    this.autocast = Autocast.policy(name) != Autocast.Policy.UNCHANGED;
  }

  /** The definition this constant gives the registry. */
  public OpDef def() {
    return def;
  }

  /**
   * This op's gradient, as its own backward computes it: x is its input and out its output (each passed on only if
   * the backward reads it), g the upstream gradient. For an op fused with another (a GEMM epilogue), whose backward
   * must give the bits of the two ops' backwards in turn.
   */
  Tensor gradient(double param, Tensor x, Tensor out, Tensor g) {
    return rule.grad(param, def.reads().input() ? x : null, def.reads().output() ? out : null, g);
  }

  /** The definition of a backend primitive. */
  static Unary of(UnaryOp op) {
    return BY_PRIMITIVE[op.ordinal()];
  }

  /**
   * The op applied to x, recorded for autograd: x is first converted to the dtype the op computes in, the backend
   * writes every element of a new tensor, and only what the backward reads is kept for it (and version-checked):
   * exp's backward must not fail because x changed in place after the forward.
   */
  Tensor apply(Tensor x, double param) {
    Tensor out = applyUntraced(x, param);
    if (!Tracing.active()) return out;
    return Tracing.op(def.name(), out, new Tensor[] {x}, param != 0 ? new Object[] {"param", param} : new Object[0],
        in -> apply(in[0], param));
  }

  private Tensor applyUntraced(Tensor x, double param) {
    if (autocast) x = Autocast.input(def.name(), x);
    if (x.dtype().isHalf()) { // computed in F32, rounded once to the half dtype on store
      return apply(x.to(DType.F32), param).to(def.dtypes().result(x.dtype()));
    }
    DType dt = def.dtypes().computeIn(x.dtype());
    if (dt != x.dtype()) x = x.to(dt);
    Tensor out;
    if (primitive != null) {
      out = x.newEmpty(x.shapeRef()); // the kernels write every element
      ElementwiseOps.backend(out).unary(primitive, param, x, out);
    } else {
      try (Grad ignored = Grad.off()) {
        out = composite.forward(x, param);
      }
    }
    return Autograd.record(tapeName, out, (ctx, g) -> new Tensor[] {rule.grad(param,
        def.reads().input() ? ctx.in(0) : null, def.reads().output() ? ctx.out() : null, g)}, new Tensor[] {x});
  }

  /**
   * The op written into x (PyTorch's {@code relu_}, {@code exp_}, ...), recorded for autograd as an in-place op
   * (see {@link Autograd#recordInPlace}). Its backward reads x's new value where that determines the gradient (the
   * ops that read their output; relu, and leaky_relu and elu with a non-negative parameter, whose output has the
   * sign of their input) and otherwise a copy of x's old value, kept only when recording.
   */
  Tensor applyInPlace(Tensor x, double param) {
    Tensor out = applyInPlaceUntraced(x, param);
    if (!Tracing.active()) return out;
    return Tracing.op(def.name() + "_", out, new Tensor[] {x}, param != 0 ? new Object[] {"param", param}
        : new Object[0], in -> applyInPlace(in[0], param));
  }

  private Tensor applyInPlaceUntraced(Tensor x, double param) {
    String name = tapeName + "_";
    DType result = def.dtypes().result(x.dtype());
    if (result != x.dtype()) {
      throw Check.fail(name, "result type " + result.torchName() + " can't be cast to the desired output type "
          + x.dtype().torchName(), "x", x);
    }
    dev.ember.tensor.MemoryOverlap.checkWritable(name, x); // an expanded view: exp_ would apply exp to one element twice
    boolean record = Autograd.inPlace(name, x);
    boolean fromOutput = !def.reads().input() || this == RELU || (this == LEAKY_RELU || this == ELU) && param >= 0;
    Tensor old = record && !fromOutput ? x.detach().cloneContiguous() : null;
    if (primitive != null && !x.dtype().isHalf()) { // element i is read before it is written
      ElementwiseOps.backend(x).unary(primitive, param, x, x);
    } else {
      Tensor r;
      try (Grad ignored = Grad.off()) {
        r = apply(x.detach(), param);
      }
      ElementwiseOps.backend(x).copy(r, x);
    }
    x.storage().bumpVersion(name);
    if (!record) return x;
    boolean readsIn = def.reads().input();
    boolean readsOut = def.reads().output() || readsIn && fromOutput;
    return Autograd.recordInPlace(name, x, (ctx, g) -> {
      Tensor out = readsOut ? ctx.out() : null;
      return new Tensor[] {rule.grad(param, !readsIn ? null : fromOutput ? out : ctx.in(0), out, g)};
    }, new Tensor[] {x}, new Tensor[] {old});
  }

  /** d/dx x*Phi(x) = Phi(x) + x*phi(x). */
  private static Tensor geluGrad(double p, Tensor x, Tensor out, Tensor g) {
    Tensor cdf = GELU.apply(x, 0).div(x); // Phi(x) except at 0
    Tensor phi = x.square().mul(-0.5).exp().mul(1 / Math.sqrt(2 * Math.PI));
    Tensor safeCdf = where(x.eq(0), Tensor.scalar(0.5, x.dtype()), cdf);
    return g.mul(safeCdf.add(x.mul(phi)));
  }

  private static Tensor geluTanhGrad(double p, Tensor x, Tensor out, Tensor g) {
    Tensor inner = x.add(x.mul(x).mul(x).mul(0.044715)).mul(SQRT_2_OVER_PI);
    Tensor th = inner.tanh();
    Tensor dInner = x.square().mul(3 * 0.044715).add(1).mul(SQRT_2_OVER_PI);
    Tensor d = th.add(1).mul(0.5).add(x.mul(0.5).mul(th.square().neg().add(1)).mul(dInner));
    return g.mul(d);
  }

  /** x tanh(softplus(x)), softplus with PyTorch's threshold of 20: three vector passes, as F.mish always took. */
  private static Tensor mish(Tensor x, double p) {
    return x.mul(SOFTPLUS.apply(x, 1).tanh());
  }

  /** d/dx x tanh(sp(x)) = tanh(sp) + x (1 - tanh(sp)^2) sigmoid(x), as sp' = sigmoid. */
  private static Tensor mishGrad(double p, Tensor x, Tensor out, Tensor g) {
    Tensor t = SOFTPLUS.apply(x, 1).tanh();
    return g.mul(t.add(x.mul(x.sigmoid()).mul(t.square().neg().add(1))));
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
        && java.util.Arrays.equals(ref.shapeRef(), g.shapeRef()) && ref.device() == g.device()) {
      Tensor out = fusedGradKernel(op, g, ref);
      return Tracing.active() ? Tracing.op(op.name().toLowerCase(java.util.Locale.ROOT) + "_backward", out,
          new Tensor[] {g, ref}, new Object[0], in -> fusedGradKernel(op, in[0], in[1])) : out;
    }
    return composite.get();
  }

  /** The one backend pass of {@link #fusedGrad} (g and ref of one F32 or F64 dtype and one shape). */
  private static Tensor fusedGradKernel(UnaryOp op, Tensor g, Tensor ref) {
    Tensor out = g.newEmpty(g.shapeRef());
    ElementwiseOps.backend(out).unaryBackward(op, g, ref, out);
    return out;
  }
}
