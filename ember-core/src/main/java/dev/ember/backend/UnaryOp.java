package dev.ember.backend;

/**
 * Elementwise unary primitives every backend implements. Some take one scalar parameter
 * (the {@code param} argument of {@link Backend#unary}): LEAKY_RELU (negative slope), ELU (alpha),
 * POW_SCALAR (exponent), SOFTPLUS (beta; threshold fixed at 20 as in PyTorch). An op needs a primitive here only
 * for a kernel of its own; an op without one is a composite of primitives (see {@code dev.ember.ops.Unary}).
 */
public enum UnaryOp {
  NEG, ABS, SIGN, EXP, LOG, LOG1P, EXPM1, SQRT, RSQRT, SQUARE, RECIPROCAL,
  SIN, COS, TANH, SIGMOID, RELU, LEAKY_RELU, ELU, GELU, GELU_TANH, SILU, SOFTPLUS,
  POW_SCALAR, FLOOR, CEIL, ROUND, TRUNC
}
