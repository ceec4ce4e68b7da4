package dev.ember.backend;

/** Elementwise binary primitives (with broadcasting strides) every backend implements. */
public enum BinaryOp {
  ADD, SUB, MUL, DIV, POW, MAXIMUM, MINIMUM,
  /** comparisons write BOOL outputs */
  EQ, NE, LT, LE, GT, GE,
  /** logical ops read any dtype as (x != 0) and write BOOL outputs */
  LOGICAL_AND, LOGICAL_OR, LOGICAL_XOR;

  public boolean isComparison() {
    return ordinal() >= EQ.ordinal() && ordinal() <= GE.ordinal();
  }

  public boolean isLogical() {
    return ordinal() >= LOGICAL_AND.ordinal();
  }

  public boolean returnsBool() {
    return isComparison() || isLogical();
  }
}
