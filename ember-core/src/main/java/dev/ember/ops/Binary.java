package dev.ember.ops;

import static dev.ember.ops.DTypePolicy.FLOATING;
import static dev.ember.ops.DTypePolicy.PREDICATE;
import static dev.ember.ops.DTypePolicy.PROMOTED;
import static dev.ember.ops.ElementwiseOps.where;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;
import static dev.ember.ops.Reads.NOTHING;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Autograd;
import dev.ember.autograd.Backward;
import dev.ember.autograd.Tracing;
import dev.ember.backend.BinaryOp;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;

/**
 * The binary elementwise ops, each defined once by its constant: name, dtype policy, what its backward reads, its
 * backend {@link BinaryOp} primitive and its backward. Operands broadcast (NumPy rules); a backward reduces each
 * gradient back to its input's shape. Comparisons and logical ops ({@link DTypePolicy#PREDICATE}) write BOOL and
 * have no gradient.
 */
public enum Binary {
  ADD("add", PROMOTED, NOTHING, BinaryOp.ADD,
      (ctx, g) -> new Tensor[] {g.sumTo(ctx.inShape(0)), g.sumTo(ctx.inShape(1))}),
  SUB("sub", PROMOTED, NOTHING, BinaryOp.SUB,
      (ctx, g) -> new Tensor[] {g.sumTo(ctx.inShape(0)), g.neg().sumTo(ctx.inShape(1))}),
  // only inputs that take a gradient are computed (and read): x.mul(2) must not read or reduce for the 2
  MUL("mul", PROMOTED, INPUTS, BinaryOp.MUL, (ctx, g) -> new Tensor[] {
      ctx.edgeNeeded(0) ? g.mul(ctx.in(1)).sumTo(ctx.inShape(0)) : null,
      ctx.edgeNeeded(1) ? g.mul(ctx.in(0)).sumTo(ctx.inShape(1)) : null}),
  /** True division: integer operands divide as F32, as torch.div. */
  DIV("div", FLOATING, INPUTS, BinaryOp.DIV, (ctx, g) -> {
    Tensor b = ctx.in(1);
    return new Tensor[] {ctx.edgeNeeded(0) ? g.div(b).sumTo(ctx.inShape(0)) : null,
        ctx.edgeNeeded(1) ? g.mul(ctx.in(0)).div(b.square()).neg().sumTo(ctx.inShape(1)) : null};
  }),
  // PyTorch's pow_backward_self and pow_backward_exponent: d/da = b a^(b-1), 0 where b == 0 (at a == 0 it is
  // 0 * inf); d/db = a^b log a, 0 where a == 0 and b >= 0 (0 * -inf, or 1 * -inf at b == 0), -inf at a == 0, b < 0
  POW("pow", PROMOTED, INPUTS_AND_OUTPUT, BinaryOp.POW, (ctx, g) -> {
    Tensor a = ctx.in(0);
    Tensor b = ctx.in(1);
    Tensor zero = Tensor.scalar(0, g.dtype());
    Tensor ga = where(b.eq(0), zero, g.mul(b.mul(a.pow(b.sub(1)))));
    Tensor gb = g.mul(where(ElementwiseOps.logicalAnd(a.eq(0), b.ge(0)), zero, ctx.out().mul(a.log())));
    return new Tensor[] {ga.sumTo(ctx.inShape(0)), gb.sumTo(ctx.inShape(1))};
  }),
  MAXIMUM("maximum", PROMOTED, INPUTS, BinaryOp.MAXIMUM, (ctx, g) -> extremeGrad(true, ctx.in(0), ctx.in(1), g,
      ctx.inShape(0), ctx.inShape(1))),
  MINIMUM("minimum", PROMOTED, INPUTS, BinaryOp.MINIMUM, (ctx, g) -> extremeGrad(false, ctx.in(0), ctx.in(1), g,
      ctx.inShape(0), ctx.inShape(1))),
  EQ("eq", BinaryOp.EQ),
  NE("ne", BinaryOp.NE),
  LT("lt", BinaryOp.LT),
  LE("le", BinaryOp.LE),
  GT("gt", BinaryOp.GT),
  GE("ge", BinaryOp.GE),
  /** Logical ops read any dtype as (x != 0). */
  LOGICAL_AND("logical_and", BinaryOp.LOGICAL_AND),
  LOGICAL_OR("logical_or", BinaryOp.LOGICAL_OR),
  LOGICAL_XOR("logical_xor", BinaryOp.LOGICAL_XOR);

  /** The definition of each primitive, by ordinal: {@link ElementwiseOps} finds it without a map. */
  private static final Binary[] BY_PRIMITIVE = new Binary[BinaryOp.values().length];

  static {
    for (Binary b : values()) BY_PRIMITIVE[b.primitive.ordinal()] = b;
    for (BinaryOp op : BinaryOp.values()) {
      if (BY_PRIMITIVE[op.ordinal()] == null) throw new IllegalStateException("BinaryOp." + op + " has no definition");
    }
  }

  private final OpDef def;
  private final BinaryOp primitive;
  private final Backward rule;
  /** Whether autocast casts this op's inputs ({@link Autocast}'s lists name it): the others never read its state. */
  private final boolean autocast;

  /** A differentiable op. */
  Binary(String name, DTypePolicy dtypes, Reads reads, BinaryOp primitive, Backward rule) {
    this.def = OpDef.of(name, 2, dtypes, reads);
    this.primitive = primitive;
    this.rule = rule;
    this.autocast = Autocast.policy(name) != Autocast.Policy.UNCHANGED;
  }

  /** A comparison or logical op: BOOL out, no gradient. */
  Binary(String name, BinaryOp primitive) {
    this.def = OpDef.noGrad(name, 2, PREDICATE);
    this.primitive = primitive;
    this.rule = null;
    this.autocast = Autocast.policy(name) != Autocast.Policy.UNCHANGED;
  }

  /** The definition this constant gives the registry. */
  public OpDef def() {
    return def;
  }

  /** The definition of a backend primitive. */
  static Binary of(BinaryOp op) {
    return BY_PRIMITIVE[op.ordinal()];
  }

  /** The backward rule (null for a comparison or logical op): in-place ops reuse it. */
  Backward rule() {
    return rule;
  }

  /**
   * a op b, broadcast, recorded for autograd: both operands are first converted to the dtype the op computes in
   * (from their promoted dtype); comparisons and logical ops compare the operands as they are and write BOOL.
   */
  Tensor apply(Tensor a, Tensor b) {
    Tensor out = applyUntraced(a, b);
    return Tracing.active() ? Tracing.op(def.name(), out, new Tensor[] {a, b}, new Object[0], in -> apply(in[0], in[1]))
        : out;
  }

  private Tensor applyUntraced(Tensor a, Tensor b) {
    String name = def.name();
    if (autocast) {
      a = Autocast.input(name, a);
      b = Autocast.input(name, b);
    }
    Check.sameDevice(name, a, b);
    int[] shape = Shapes.broadcast(name, a.shapeRef(), b.shapeRef());
    Device device = ElementwiseOps.deviceOf(a, b);
    DType promoted = DType.promote(a.dtype(), b.dtype());
    if (promoted.isHalf()) { // both operands in the half dtype (as torch), then compared or computed in F32
      a = a.to(promoted).to(DType.F32);
      b = b.to(promoted).to(DType.F32);
    } else if (a.dtype().isHalf() || b.dtype().isHalf()) { // bf16 with f16, or a half with a wider float
      a = a.to(promoted);
      b = b.to(promoted);
    }
    if (rule == null) {
      a = ElementwiseOps.on(device, a);
      b = ElementwiseOps.on(device, b);
      Tensor out = Tensor.uninitialized(device, DType.BOOL, shape);
      ElementwiseOps.backend(out).binary(primitive, Views.expand(a, shape), Views.expand(b, shape), out);
      return out;
    }
    DType dt = def.dtypes().computeIn(DType.promote(a.dtype(), b.dtype()));
    DType result = def.dtypes().result(promoted);
    Tensor a2 = ElementwiseOps.on(device, a.to(dt));
    Tensor b2 = ElementwiseOps.on(device, b.to(dt));
    Tensor out = Tensor.uninitialized(device, dt, shape);
    ElementwiseOps.backend(out).binary(primitive, Views.expand(a2, shape), Views.expand(b2, shape), out);
    Tensor r = Autograd.record(name, out, rule, new Tensor[] {a2, b2});
    return promoted.isHalf() ? r.to(result) : r; // one rounding, on store
  }

  /** maximum's (max) or minimum's gradient: ties split it evenly, as PyTorch. */
  private static Tensor[] extremeGrad(boolean max, Tensor a, Tensor b, Tensor g, int[] sa, int[] sb) {
    Tensor wins = (max ? a.gt(b) : a.lt(b)).to(g.dtype());
    Tensor ties = a.eq(b).to(g.dtype()).mul(0.5);
    Tensor wa = wins.add(ties);
    return new Tensor[] {g.mul(wa).sumTo(sa), g.mul(wa.neg().add(1)).sumTo(sb)};
  }
}
