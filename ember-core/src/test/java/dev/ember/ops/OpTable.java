package dev.ember.ops;

import static dev.ember.ops.OpInfo.op;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Ref;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * Every op with its oracle, samples and error cases. Adding an op to Ember means adding an entry
 * here; {@link OpTableTest} then checks forward values (float64 and float32) against the oracle,
 * gradients against central differences, non-contiguous inputs, and the error messages.
 */
public final class OpTable {
  private OpTable() {}

  public static Stream<OpInfo> all() {
    return build().stream();
  }

  public static Stream<OpInfo> differentiable() {
    return build().stream().filter(o -> o.differentiable);
  }

  /** sigmoid(x0 * 2 + x1), x1 a ROW (bias-like) input: the op table's fused program. */
  static final dev.ember.backend.ElementwiseProgram FUSED_SAMPLE = fusedSample();

  private static dev.ember.backend.ElementwiseProgram fusedSample() {
    var b = dev.ember.backend.ElementwiseProgram.builder();
    int x = b.full();
    int bias = b.row();
    int two = b.constant(2);
    b.unary(dev.ember.backend.UnaryOp.SIGMOID, b.binary(dev.ember.backend.BinaryOp.ADD,
        b.binary(dev.ember.backend.BinaryOp.MUL, x, two), bias));
    return b.build();
  }

  static double sigmoid(double x) {
    return 1 / (1 + Math.exp(-x));
  }

  private static Tensor idx(long[] v, int... shape) {
    return Tensor.of(v, shape);
  }

  static List<OpInfo> build() {
    List<OpInfo> t = new ArrayList<>();
    // ---------------------------------------------------------------- unary
    t.add(op("neg").unary(Tensor::neg).refUnary(x -> -x));
    t.add(op("abs").unary(Tensor::abs).refUnary(Math::abs));
    t.add(op("sign").unary(Tensor::sign).refUnary(Math::signum));
    t.add(op("exp").unary(Tensor::exp).refUnary(Math::exp));
    t.add(op("log").unary(Tensor::log).refUnary(Math::log).domain(0.1, 3));
    t.add(op("log1p").unary(Tensor::log1p).refUnary(Math::log1p).domain(-0.9, 3));
    t.add(op("expm1").unary(Tensor::expm1).refUnary(Math::expm1));
    t.add(op("sqrt").unary(Tensor::sqrt).refUnary(Math::sqrt).domain(0.1, 3));
    t.add(op("rsqrt").unary(Tensor::rsqrt).refUnary(x -> 1 / Math.sqrt(x)).domain(0.1, 3));
    t.add(op("square").unary(Tensor::square).refUnary(x -> x * x));
    t.add(op("reciprocal").unary(Tensor::reciprocal).refUnary(x -> 1 / x).domain(0.2, 3));
    t.add(op("sin").unary(Tensor::sin).refUnary(Math::sin));
    t.add(op("cos").unary(Tensor::cos).refUnary(Math::cos));
    t.add(op("tanh").unary(Tensor::tanh).refUnary(Math::tanh));
    t.add(op("sigmoid").unary(Tensor::sigmoid).refUnary(OpTable::sigmoid).domain(-6, 6));
    t.add(op("relu").unary(Tensor::relu).refUnary(x -> Math.max(x, 0)));
    t.add(op("leaky_relu").unary(x -> ElementwiseOps.leakyRelu(x, 0.1)).refUnary(x -> x > 0 ? x : 0.1 * x));
    t.add(op("elu").unary(x -> ElementwiseOps.elu(x, 1.3)).refUnary(x -> x > 0 ? x : 1.3 * Math.expm1(x)));
    t.add(op("gelu").unary(x -> ElementwiseOps.gelu(x, false)).refUnary(x -> 0.5 * x * (1 + Ref.erf(x / Math.sqrt(2))))
        .domain(-3, 3));
    t.add(op("gelu_tanh").unary(x -> ElementwiseOps.gelu(x, true))
        .refUnary(x -> 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x * x * x)))).domain(-3, 3));
    t.add(op("silu").unary(ElementwiseOps::silu).refUnary(x -> x * sigmoid(x)).domain(-5, 5));
    t.add(op("softplus").unary(x -> ElementwiseOps.softplus(x, 2)).refUnary(x -> 2 * x > 20 ? x : Math.log1p(Math.exp(2 * x)) / 2)
        .domain(-4, 4).error(l -> ElementwiseOps.softplus(l.get(0), -1), "[3]", "softplus: beta must be positive, got -1.0: x=[3]"));
    t.add(op("mish").unary(ElementwiseOps::mish).refUnary(x -> x * Math.tanh(Math.log1p(Math.exp(x)))).domain(-5, 5));
    t.add(op("pow_scalar").unary(x -> x.pow(2.5)).refUnary(x -> Math.pow(x, 2.5)).domain(0.2, 2));
    t.add(op("pow_int_scalar").def("pow_scalar").unary(x -> x.pow(3)).refUnary(x -> x * x * x));
    t.add(op("floor").unary(Tensor::floor).refUnary(Math::floor).domain(-3, 3));
    t.add(op("ceil").unary(Tensor::ceil).refUnary(Math::ceil).domain(-3, 3));
    t.add(op("round").unary(Tensor::round).refUnary(Math::rint).domain(-3, 3));
    t.add(op("trunc").unary(Tensor::trunc).refUnary(x -> x < 0 ? Math.ceil(x) : Math.floor(x)).domain(-3, 3));
    t.add(op("clamp").unary(x -> x.clamp(-0.5, 0.7)).refUnary(x -> Math.min(Math.max(x, -0.5), 0.7))
        .error(l -> l.get(0).clamp(1, 0), "[2]", "clamp: min must not exceed max (min 1.0, max 0.0): x=[2]"));
    // the cast's gradient is checked in CastTest: central differences cannot see through float32 rounding
    t.add(op("to_f32").def("to").unary(x -> x.to(DType.F32)).refUnary(x -> (float) x).noGrad());

    // ---------------------------------------------------------------- binary arithmetic
    t.add(op("add").binary(Tensor::add).refBinary(Double::sum)
        .error("[2, 3] x [4]", "add: cannot broadcast (3 vs 4 at axis -1): a=[2, 3], b=[4]"));
    t.add(op("sub").binary(Tensor::sub).refBinary((a, b) -> a - b)
        .error("[2, 3] x [2, 2]", "sub: cannot broadcast (3 vs 2 at axis -1): a=[2, 3], b=[2, 2]"));
    t.add(op("mul").binary(Tensor::mul).refBinary((a, b) -> a * b)
        .error("[5, 3] x [4, 3]", "mul: cannot broadcast (5 vs 4 at axis -2): a=[5, 3], b=[4, 3]"));
    t.add(op("div").binary(Tensor::div).refBinary((a, b) -> a / b).domain(0.3, 2));
    t.add(op("pow").binary(Tensor::pow).refBinary(Math::pow).domain(0.3, 2));
    t.add(op("maximum").binary(Tensor::maximum).refBinary(Math::max));
    t.add(op("minimum").binary(Tensor::minimum).refBinary(Math::min));
    t.add(op("add_scalar").def("add").unary(x -> x.add(1.5)).refUnary(x -> x + 1.5));
    t.add(op("sub_scalar").def("add").unary(x -> x.sub(0.25)).refUnary(x -> x - 0.25));
    t.add(op("mul_scalar").def("mul").unary(x -> x.mul(-3)).refUnary(x -> -3 * x));
    t.add(op("div_scalar").def("div").unary(x -> x.div(4)).refUnary(x -> x / 4));
    t.add(op("where").fn(l -> ElementwiseOps.where(l.get(0).gt(0), l.get(1), l.get(2)))
        .ref(l -> Ref.where(Ref.map(l.get(0), v -> v > 0 ? 1 : 0), l.get(1), l.get(2)))
        .shapes("[3, 4] x [3, 4] x [3, 4]", "[3, 1] x [4] x []", "[0] x [0] x [1]"));

    // ---------------------------------------------------------------- comparisons and logic (BOOL out)
    t.add(op("eq").binary((a, b) -> a.round().eq(b.round())).refBinary((a, b) -> Math.rint(a) == Math.rint(b) ? 1 : 0).noGrad());
    t.add(op("ne").binary((a, b) -> a.round().ne(b.round())).refBinary((a, b) -> Math.rint(a) != Math.rint(b) ? 1 : 0).noGrad());
    t.add(op("lt").binary(Tensor::lt).refBinary((a, b) -> a < b ? 1 : 0).noGrad());
    t.add(op("le").binary(Tensor::le).refBinary((a, b) -> a <= b ? 1 : 0).noGrad());
    t.add(op("gt").binary(Tensor::gt).refBinary((a, b) -> a > b ? 1 : 0).noGrad()
        .error("[2] x [3]", "gt: cannot broadcast (2 vs 3 at axis -1): a=[2], b=[3]"));
    t.add(op("ge").binary(Tensor::ge).refBinary((a, b) -> a >= b ? 1 : 0).noGrad());
    t.add(op("logical_and").binary((a, b) -> ElementwiseOps.logicalAnd(a.gt(0), b.gt(0)))
        .refBinary((a, b) -> a > 0 && b > 0 ? 1 : 0).noGrad());
    t.add(op("logical_or").binary((a, b) -> ElementwiseOps.logicalOr(a.gt(0), b.gt(0)))
        .refBinary((a, b) -> a > 0 || b > 0 ? 1 : 0).noGrad());
    t.add(op("logical_xor").binary((a, b) -> ElementwiseOps.logicalXor(a.gt(0), b.gt(0)))
        .refBinary((a, b) -> (a > 0) != (b > 0) ? 1 : 0).noGrad());
    t.add(op("logical_not").unary(a -> ElementwiseOps.logicalNot(a.gt(0))).refUnary(a -> a > 0 ? 0 : 1).noGrad());
    t.add(op("isnan").unary(a -> ElementwiseOps.isnan(a.log())).refUnary(a -> Double.isNaN(Math.log(a)) ? 1 : 0).noGrad());
    t.add(op("isinf").unary(a -> ElementwiseOps.isinf(a.round().reciprocal()))
        .refUnary(a -> Double.isInfinite(1 / Math.rint(a)) ? 1 : 0).noGrad());
    t.add(op("isfinite").unary(a -> ElementwiseOps.isfinite(a.round().reciprocal().mul(a.log())))
        .refUnary(a -> Double.isFinite(1 / Math.rint(a) * Math.log(a)) ? 1 : 0).noGrad());
    t.add(op("to_i64").def("to").unary(a -> a.mul(3).to(DType.I64)).refUnary(a -> (long) (3 * a)).noGrad());
    t.add(op("to_bool").def("to")
        .unary(a -> a.round().to(DType.BOOL)).refUnary(a -> Math.rint(a) != 0 ? 1 : 0).noGrad());

    ReductionEntries.add(t);
    StructureEntries.add(t);
    // ---------------------------------------------------------------- fused
    t.add(op("fused_elementwise").fn(l -> FusedOps.elementwise(FUSED_SAMPLE, l.get(0), l.get(1)))
        .refBinary((a, b) -> sigmoid(a * 2 + b))
        .shapes("[3, 4] x [4]", "[2, 3, 5] x [5]", "[7] x [7]", "[0, 3] x [3]")
        .error("[3, 4] x [3]", "fused_elementwise: input 1 (ROW) does not fit the output [3, 4] of"
            + " sigmoid(add(mul(x0, 2.0), x1)): input=[3]"));
    return t;
  }
}
