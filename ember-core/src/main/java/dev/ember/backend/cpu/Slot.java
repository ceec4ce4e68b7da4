package dev.ember.backend.cpu;

import dev.ember.backend.View;
import dev.ember.tensor.DType;

/**
 * The backing array and element offset of a contiguous F32 or F64 view, for the optimizer update kernels.
 * Exactly one of {@link #f} and {@link #d} is non-null.
 */
public final class Slot {
  /** The float32 array, or null for float64. */
  public final float[] f;
  /** The float64 array, or null for float32. */
  public final double[] d;
  /** The element offset of the view's first element (negative for a block of a larger value). */
  public final int off;

  /** A float32 array seen from element offset {@code off} (negative for a block of a larger tensor). */
  public Slot(float[] f, int off) {
    this.f = f;
    this.d = null;
    this.off = off;
  }

  /** The storage of a contiguous F32 or F64 view. */
  public Slot(View t) {
    boolean f32 = t.dtype() == DType.F32;
    this.f = f32 ? t.storage().floats() : null;
    this.d = f32 ? null : t.storage().doubles();
    this.off = t.offset();
  }
}
