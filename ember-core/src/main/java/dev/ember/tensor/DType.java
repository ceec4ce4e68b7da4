package dev.ember.tensor;

/**
 * Element types. F32 is the default compute type; F64 is used for gradient checks and references;
 * I64/I32 hold labels and indices; BOOL holds masks (stored as bytes 0/1).
 *
 * <p>Room is left for BF16, F16 (storage for mixed precision, computed in f32) and I8
 * (quantization): each will be a new constant with its own storage array kind, and the existing
 * switch statements over {@code DType} are exhaustive, so the compiler lists every place to extend.
 */
public enum DType {
  F32("float32", 4, true),
  F64("float64", 8, true),
  I64("int64", 8, false),
  I32("int32", 4, false),
  BOOL("bool", 1, false);

  private final String torchName;
  private final int itemSize;
  private final boolean floating;

  DType(String torchName, int itemSize, boolean floating) {
    this.torchName = torchName;
    this.itemSize = itemSize;
    this.floating = floating;
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

  /** Result type of an arithmetic op between two tensors, as PyTorch's type promotion. */
  public static DType promote(DType a, DType b) {
    if (a == b) return a;
    if (a == F64 || b == F64) return F64;
    if (a == F32 || b == F32) return F32;
    if (a == I64 || b == I64) return I64;
    if (a == I32 || b == I32) return I32;
    return BOOL;
  }
}
