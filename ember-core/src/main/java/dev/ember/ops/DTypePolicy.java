package dev.ember.ops;

import dev.ember.tensor.DType;

/**
 * Which dtypes an op accepts, which one it computes in and which one it returns. The compute dtype is a function of
 * the inputs' dtype (for several inputs, their {@link DType#promote promoted} dtype), so a backend or a compiler can
 * tell an op's result dtype without running it.
 *
 * <p>The 16-bit floats BF16 and F16 are storage types: every op but the cast computes on them in F32 and (for the
 * ops whose result is a float) rounds the result once to the input's half dtype, as PyTorch's CPU kernels do. The
 * op layer ({@code Unary}, {@code Binary}, {@code ReduceOps}, {@code LinalgOps}) does the conversions, so no backend
 * kernel sees a half operand, except the GEMM of a backend that {@linkplain
 * dev.ember.backend.Backend#matmulReadsHalf reads them} (widening them itself, with the same bits).
 */
public enum DTypePolicy {
  /** Any dtype; F32 and F64 compute in themselves, integers and BOOL are converted to F32 first (exp, div, ...). */
  FLOATING,
  /** F32 and F64 only; the op fails on any other dtype (mean, var, softmax, ...). */
  FLOATING_ONLY,
  /** Integers and floats compute in their own dtype; BOOL is converted to F32 first (neg, abs, relu, floor, ...). */
  NUMERIC,
  /** Floats in their own dtype, integers and BOOL accumulate in I64 (sum, prod, cumsum), as PyTorch. */
  ACCUMULATING,
  /** Any dtype, kept: the op computes in and returns its inputs' promoted dtype (add, where, reshape, gather, ...). */
  PROMOTED,
  /** Any dtype, compared in the inputs' promoted dtype; the result is BOOL (comparisons, logical ops, isnan). */
  PREDICATE,
  /** Any dtype; the result holds I64 indices (argmax, argmin). */
  INDEX,
  /** Any dtype in, the dtype the caller asks for out (the cast {@code to}). */
  REQUESTED;

  /** Whether the op accepts inputs of {@code dtype} (for several inputs: of that promoted dtype). */
  public boolean accepts(DType dtype) {
    return this != FLOATING_ONLY || dtype.isFloatingPoint();
  }

  /**
   * The dtype the op computes in for inputs of {@code dtype} (their promoted dtype); for {@link #REQUESTED} the
   * input's own, the conversion being the op.
   */
  public DType computeIn(DType dtype) {
    if (dtype.isHalf() && this != REQUESTED) return DType.F32;
    return switch (this) {
      case FLOATING -> dtype.isFloatingPoint() ? dtype : DType.F32;
      case NUMERIC -> dtype == DType.BOOL ? DType.F32 : dtype;
      case ACCUMULATING -> dtype.isFloatingPoint() ? dtype : DType.I64;
      default -> dtype;
    };
  }

  /** The dtype of the result for inputs of {@code dtype} (for {@link #REQUESTED}: the input's, before the cast). */
  public DType result(DType dtype) {
    return switch (this) {
      case PREDICATE -> DType.BOOL;
      case INDEX -> DType.I64;
      default -> dtype.isHalf() ? dtype : computeIn(dtype);
    };
  }
}
