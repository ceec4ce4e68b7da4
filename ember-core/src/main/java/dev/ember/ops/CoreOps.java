package dev.ember.ops;

import static dev.ember.ops.DTypePolicy.ACCUMULATING;
import static dev.ember.ops.DTypePolicy.FLOATING;
import static dev.ember.ops.DTypePolicy.FLOATING_ONLY;
import static dev.ember.ops.DTypePolicy.INDEX;
import static dev.ember.ops.DTypePolicy.NUMERIC;
import static dev.ember.ops.DTypePolicy.PREDICATE;
import static dev.ember.ops.DTypePolicy.PROMOTED;
import static dev.ember.ops.DTypePolicy.REQUESTED;
import static dev.ember.ops.OpDef.VARIADIC;
import static dev.ember.ops.OpDef.noGrad;
import static dev.ember.ops.OpDef.of;
import static dev.ember.ops.Reads.INPUTS;
import static dev.ember.ops.Reads.INPUTS_AND_OUTPUT;
import static dev.ember.ops.Reads.NOTHING;
import static dev.ember.ops.Reads.OUTPUT;

import java.util.List;

/** ember-core's op definitions, family by family: the first part of {@link Ops#definitions()}. */
final class CoreOps {
  private CoreOps() {}

  static List<OpDef> definitions() {
    return List.of(
        // unary elementwise
        of("neg", 1, NUMERIC, NOTHING), of("abs", 1, NUMERIC, INPUTS), of("sign", 1, NUMERIC, NOTHING),
        of("exp", 1, FLOATING, OUTPUT), of("log", 1, FLOATING, INPUTS), of("log1p", 1, FLOATING, INPUTS),
        of("expm1", 1, FLOATING, OUTPUT), of("sqrt", 1, FLOATING, OUTPUT), of("rsqrt", 1, FLOATING, OUTPUT),
        of("square", 1, NUMERIC, INPUTS), of("reciprocal", 1, FLOATING, OUTPUT), of("sin", 1, FLOATING, INPUTS),
        of("cos", 1, FLOATING, INPUTS), of("tanh", 1, FLOATING, OUTPUT), of("sigmoid", 1, FLOATING, OUTPUT),
        of("relu", 1, NUMERIC, INPUTS), of("leaky_relu", 1, FLOATING, INPUTS),
        of("elu", 1, FLOATING, INPUTS_AND_OUTPUT), of("gelu", 1, FLOATING, INPUTS), of("gelu_tanh", 1, FLOATING, INPUTS),
        of("silu", 1, FLOATING, INPUTS), of("softplus", 1, FLOATING, INPUTS), of("pow_scalar", 1, FLOATING, INPUTS),
        of("floor", 1, NUMERIC, NOTHING), of("ceil", 1, NUMERIC, NOTHING), of("round", 1, NUMERIC, NOTHING),
        of("trunc", 1, NUMERIC, NOTHING), of("clamp", 1, PROMOTED, INPUTS), of("to", 1, REQUESTED, NOTHING),
        // binary elementwise
        of("add", 2, PROMOTED, NOTHING), of("sub", 2, PROMOTED, NOTHING), of("mul", 2, PROMOTED, INPUTS),
        of("div", 2, FLOATING, INPUTS), of("pow", 2, PROMOTED, INPUTS_AND_OUTPUT), of("maximum", 2, PROMOTED, INPUTS),
        of("minimum", 2, PROMOTED, INPUTS), of("where", 3, PROMOTED, INPUTS),
        // comparisons and logic
        noGrad("eq", 2, PREDICATE), noGrad("ne", 2, PREDICATE), noGrad("lt", 2, PREDICATE),
        noGrad("le", 2, PREDICATE), noGrad("gt", 2, PREDICATE), noGrad("ge", 2, PREDICATE),
        noGrad("logical_and", 2, PREDICATE), noGrad("logical_or", 2, PREDICATE), noGrad("logical_xor", 2, PREDICATE),
        noGrad("logical_not", 1, PREDICATE), noGrad("isnan", 1, PREDICATE), noGrad("isinf", 1, PREDICATE),
        noGrad("isfinite", 1, PREDICATE),
        // reductions, softmax, scans
        of("sum", 1, ACCUMULATING, NOTHING), of("mean", 1, FLOATING_ONLY, NOTHING),
        of("var", 1, FLOATING_ONLY, INPUTS), of("std", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT),
        of("amax", 1, PROMOTED, INPUTS_AND_OUTPUT), of("amin", 1, PROMOTED, INPUTS_AND_OUTPUT),
        of("max", 1, PROMOTED, NOTHING), of("min", 1, PROMOTED, NOTHING), noGrad("argmax", 1, INDEX),
        noGrad("argmin", 1, INDEX), of("prod", 1, ACCUMULATING, INPUTS_AND_OUTPUT),
        of("logsumexp", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT), of("norm", 1, FLOATING_ONLY, INPUTS_AND_OUTPUT),
        noGrad("all", 1, PREDICATE), noGrad("any", 1, PREDICATE), of("softmax", 1, FLOATING_ONLY, OUTPUT),
        of("log_softmax", 1, FLOATING_ONLY, OUTPUT), of("cumsum", 1, ACCUMULATING, NOTHING),
        // linear algebra
        of("matmul", 2, PROMOTED, INPUTS), of("bmm", 2, PROMOTED, INPUTS), of("outer", 2, PROMOTED, INPUTS),
        of("addmm", 3, PROMOTED, INPUTS), of("linear", 3, FLOATING_ONLY, INPUTS), of("dot", 2, PROMOTED, INPUTS),
        // movement
        of("reshape", 1, PROMOTED, NOTHING), of("view", 1, PROMOTED, NOTHING), of("permute", 1, PROMOTED, NOTHING),
        of("transpose", 1, PROMOTED, NOTHING), of("t", 1, PROMOTED, NOTHING), of("expand", 1, PROMOTED, NOTHING),
        of("broadcast_to", 1, PROMOTED, NOTHING), of("narrow", 1, PROMOTED, NOTHING),
        of("slice", 1, PROMOTED, NOTHING), of("select", 1, PROMOTED, NOTHING), of("squeeze", 1, PROMOTED, NOTHING),
        of("unsqueeze", 1, PROMOTED, NOTHING), of("flatten", 1, PROMOTED, NOTHING),
        of("contiguous", 1, PROMOTED, NOTHING), of("cat", VARIADIC, PROMOTED, NOTHING),
        of("stack", VARIADIC, PROMOTED, NOTHING), of("split", 1, PROMOTED, NOTHING),
        of("chunk", 1, PROMOTED, NOTHING),
        // indexing
        of("gather", 2, PROMOTED, INPUTS), of("scatter", 3, PROMOTED, INPUTS), of("scatter_add", 3, PROMOTED, INPUTS),
        of("index_select", 2, PROMOTED, INPUTS), of("masked_fill", 2, PROMOTED, INPUTS),
        of("masked_select", 2, PROMOTED, INPUTS), noGrad("one_hot", 1, INDEX),
        of("take_along_dim", 2, PROMOTED, INPUTS), of("embedding", 2, PROMOTED, INPUTS));
  }
}
