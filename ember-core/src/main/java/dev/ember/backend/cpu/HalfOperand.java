package dev.ember.backend.cpu;

import dev.ember.tensor.HalfFloats;

/**
 * A GEMM operand held as BF16 or F16 bit patterns (a half tensor's storage), which
 * {@link FloatKernels#sgemmHalf} reads in place of a float32 array: each element is widened to float32 exactly
 * ({@link HalfFloats}) where the float32 GEMM would read it, so the product has the bits of the float32 GEMM on
 * the widened operand, while the operand's memory is read at two bytes an element.
 *
 * @param bits the bit patterns, indexed as the float32 array would be
 * @param bf16 true for BF16, false for F16
 */
public record HalfOperand(short[] bits, boolean bf16) {
  /** dst[d + i] = the float32 value of bits[so + i], for i &lt; n (the bulk {@link HalfKernels}). */
  public void toFloats(int so, float[] dst, int d, int n) {
    if (bf16) HalfKernels.instance().fromBf16(bits, so, dst, d, n);
    else HalfKernels.instance().fromF16(bits, so, dst, d, n);
  }

  /** The float32 value of bits[i]. */
  public float get(int i) {
    return bf16 ? HalfFloats.bf16ToFloat(bits[i]) : HalfFloats.f16ToFloat(bits[i]);
  }

  /**
   * Elements [off, off + span) widened into a new float32 array of {@code span} elements: the operand at offset 0
   * of the copy, for a kernel that reads float32 only.
   */
  public float[] widen(int off, int span) {
    float[] f = new float[span];
    toFloats(off, f, 0, span);
    return f;
  }

  /**
   * Elements a matrix at {@code off} spans: {@code rows} rows of {@code cols} elements, {@code ld} apart (a
   * transposed operand passes its stored rows and columns).
   */
  public static int span(int rows, int cols, int ld) {
    return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
  }
}
