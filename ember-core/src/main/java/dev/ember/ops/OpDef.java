package dev.ember.ops;

import java.util.Objects;

/**
 * What every op declares about itself, once: its name, how many tensors it takes, its dtype policy, whether it has a
 * gradient and what that gradient reads. The name is the one the op records on the autograd tape (when it records
 * one node under its own name) and the key of the op table the test suite is generated from: every definition in
 * {@link Ops#definitions()} needs a table entry, and every entry names a definition.
 *
 * <p>The forward, the checks and the backward rule live with the op's implementation, next to its definition: the
 * constants of {@link Unary} and {@link Binary} carry theirs, the other families declare theirs beside their ops.
 * This record is the part that tests, tools and a compiler read without running the op.
 *
 * @param name unique lower-case name, e.g. {@code "mul"}, {@code "log_softmax"}, {@code "conv2d"}
 * @param arity number of tensor inputs, or {@link #VARIADIC} (cat, stack)
 * @param dtypes which dtypes it accepts, computes in and returns
 * @param differentiable whether it records a gradient (for floating inputs)
 * @param reads what its backward reads besides the upstream gradient ({@link Reads#NOTHING} without a gradient)
 */
public record OpDef(String name, int arity, DTypePolicy dtypes, boolean differentiable, Reads reads) {
  /** The arity of an op taking a list of tensors. */
  public static final int VARIADIC = -1;

  /** Checks the fields: a non-empty name, an arity of at least 1 (or VARIADIC), no reads without a gradient. */
  public OpDef {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(dtypes, "dtypes");
    Objects.requireNonNull(reads, "reads");
    if (name.isEmpty()) throw new IllegalArgumentException("OpDef: empty name");
    if (arity < 1 && arity != VARIADIC) throw new IllegalArgumentException("OpDef " + name + ": arity " + arity);
    if (!differentiable && reads != Reads.NOTHING) {
      throw new IllegalArgumentException("OpDef " + name + ": an op without a gradient reads nothing for it");
    }
  }

  /** A differentiable op. */
  public static OpDef of(String name, int arity, DTypePolicy dtypes, Reads reads) {
    return new OpDef(name, arity, dtypes, true, reads);
  }

  /** An op without a gradient (comparisons, argmax, ...). */
  public static OpDef noGrad(String name, int arity, DTypePolicy dtypes) {
    return new OpDef(name, arity, dtypes, false, Reads.NOTHING);
  }
}
