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

import java.util.ArrayList;
import java.util.List;

/**
 * ember-core's op definitions, the first part of {@link Ops#definitions()}: the unary and binary elementwise ops from
 * their definition enums, then the other families' definitions, which live here until their families are written
 * as definitions too.
 */
final class CoreOps {
  private CoreOps() {}

  static List<OpDef> definitions() {
    List<OpDef> defs = new ArrayList<>();
    for (Unary u : Unary.values()) defs.add(u.def());
    for (Binary b : Binary.values()) defs.add(b.def());
    defs.addAll(List.of(
        // elementwise ops that are not one primitive
        of("clamp", 1, PROMOTED, INPUTS), of("to", 1, REQUESTED, NOTHING), of("where", 3, PROMOTED, INPUTS),
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
        of("take_along_dim", 2, PROMOTED, INPUTS), of("embedding", 2, PROMOTED, INPUTS)));
    return List.copyOf(defs);
  }
}
