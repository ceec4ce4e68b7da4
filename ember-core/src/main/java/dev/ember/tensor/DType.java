package dev.ember.tensor;

/**
 * Element types. F32 is the default compute type; F64 is used for gradient checks and references;
 * I64/I32 hold labels and indices; BOOL holds masks (stored as bytes 0/1).
 *
 * BF16 and F16 are storage types (bit patterns in {@code short[]}, converted by {@link HalfFloats}): ops on
 * them compute in F32 and round once on store, as PyTorch's CPU kernels.
 *
 * <p>I8 holds quantized values ({@code byte[]} storage, like BOOL's but signed numbers). The switch statements
 * over {@code DType} are exhaustive, so the compiler lists every place to extend when a type is added.
 */
public enum DType {
  F32("float32", 4, true),
  F64("float64", 8, true),
  I64("int64", 8, false),
  I32("int32", 4, false),
  BOOL("bool", 1, false),
  /** bfloat16: 1 sign, 8 exponent, 7 mantissa bits (the top half of a float32). */
  BF16("bfloat16", 2, true),
  /** IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits. */
  F16("float16", 2, true),
  /**
   * Signed 8-bit integer ({@code byte[]} storage): the values of quantized tensors (int8 weights with their
   * scale and zero point kept beside them, see {@code dev.ember.quant}). Arithmetic on it follows PyTorch's
   * integer promotion; quantized kernels read the bytes directly.
   */
  I8("int8", 1, false);

  private final String torchName;
  private final int itemSize;
  private final boolean floating;

  DType(String torchName, int itemSize, boolean floating) {
    this.torchName = torchName;
    this.itemSize = itemSize;
    this.floating = floating;
  }

  /**
   * Significand bits, the hidden one included ({@code std::numeric_limits<T>::digits}): 24 float32, 53 float64, 8
   * bfloat16, 11 float16; 0 for the integer dtypes.
   */
  public int digits() {
    return switch (this) {
      case F32 -> 24;
      case F64 -> 53;
      case BF16 -> 8;
      case F16 -> 11;
      default -> 0;
    };
  }

  /**
   * Whether this dtype holds {@code s} as it is: any number for a floating dtype (rounded to it, as PyTorch rounds a
   * Python float scalar), an integral s within range for an integer one, 0 or 1 for BOOL. A Java double does not say
   * whether it was written as an integer, so a scalar that this does not hold is taken as floating.
   */
  public boolean holds(double s) {
    return switch (this) {
      case BOOL -> s == 0 || s == 1;
      case I8 -> s == Math.rint(s) && s >= Byte.MIN_VALUE && s <= Byte.MAX_VALUE;
      case I32 -> s == Math.rint(s) && s >= Integer.MIN_VALUE && s <= Integer.MAX_VALUE;
      case I64 -> s == Math.rint(s) && s >= -0x1p63 && s < 0x1p63;
      default -> true;
    };
  }

  /** The name PyTorch prints ({@code float32}, {@code int64}, ...). */
  public String torchName() {
    return torchName;
  }

  public int itemSize() {
    return itemSize;
  }

  public boolean isFloatingPoint() {
    return floating;
  }

  /** Whether this is one of the 16-bit float storage types (BF16, F16), computed in F32. */
  public boolean isHalf() {
    return this == BF16 || this == F16;
  }

  /**
   * Result type of an arithmetic op between two tensors, as PyTorch's type promotion: a float beats any integer
   * or bool (bf16 + int64 is bf16), and BF16 with F16 gives F32 (neither holds the other).
   */
  public static DType promote(DType a, DType b) {
    if (a == b) return a;
    if (a == F64 || b == F64) return F64;
    if (a == F32 || b == F32) return F32;
    if (a.isHalf() && b.isHalf()) return F32;
    if (a.isHalf()) return a;
    if (b.isHalf()) return b;
    if (a == I64 || b == I64) return I64;
    if (a == I32 || b == I32) return I32;
    if (a == I8 || b == I8) return I8;
    return BOOL;
  }
}
