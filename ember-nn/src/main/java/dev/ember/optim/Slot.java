package dev.ember.optim;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;

/**
 * The backing array and element offset of a contiguous F32 or F64 tensor, for the kernels. Exactly
 * one of {@link #f} and {@link #d} is non-null.
 */
final class Slot {
  final float[] f;
  final double[] d;
  final int off;

  /** A float32 array seen from element offset {@code off} (negative for a block of a larger tensor: see Kernels.forGradient). */
  Slot(float[] f, int off) {
    this.f = f;
    this.d = null;
    this.off = off;
  }

  Slot(Tensor t) {
    boolean f32 = t.dtype() == DType.F32;
    this.f = f32 ? t.storage().floats() : null;
    this.d = f32 ? null : t.storage().doubles();
    this.off = t.offset();
  }
}
