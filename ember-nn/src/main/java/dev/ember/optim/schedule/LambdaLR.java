package dev.ember.optim.schedule;

import dev.ember.optim.Optimizer;
import java.util.List;
import java.util.function.LongToDoubleFunction;

/**
 * The learning rate is the base times a user function of the step, as {@code LambdaLR}:
 * {@code lr = base * f(t)} (one function for all groups, or one per group). The functions are
 * not part of {@link #stateDict()}: they must be supplied again when restoring.
 */
public final class LambdaLR extends LRScheduler {
  private final List<LongToDoubleFunction> lambdas;

  /** One multiplier function for every group. */
  public LambdaLR(Optimizer optimizer, LongToDoubleFunction lambda) {
    this(optimizer, java.util.Collections.nCopies(optimizer.paramGroups().size(), lambda));
  }

  /** One multiplier function per group. */
  public LambdaLR(Optimizer optimizer, List<LongToDoubleFunction> lambdas) {
    super(optimizer);
    require(lambdas.size() == optimizer.paramGroups().size(),
        "LambdaLR: expected " + optimizer.paramGroups().size() + " lr_lambdas, but got " + lambdas.size());
    this.lambdas = List.copyOf(lambdas);
    start();
  }

  @Override
  protected double lr(double base, int group, long t) {
    return base * lambdas.get(group).applyAsDouble(t);
  }
}
