package dev.ember.backend;

/** Reductions over a set of axes every backend implements. */
public enum ReduceOp {
  SUM, PROD, MAX, MIN
}
