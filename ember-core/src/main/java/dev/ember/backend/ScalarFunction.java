package dev.ember.backend;

/**
 * An elementwise op's value at one element, in double: the reference formula an op defines when it has no
 * {@link UnaryOp} primitive of its own, run by {@link Backend#map}.
 */
@FunctionalInterface
public interface ScalarFunction {
  /** The op's value at {@code x}; {@code param} is its scalar parameter (0 for ops without one). */
  double apply(double x, double param);
}
