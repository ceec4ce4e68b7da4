package dev.ember.backend.cpu;

import dev.ember.tensor.HalfFloats;

/** The plain-Java half-float conversions: one {@link HalfFloats} call per element. */
public final class ScalarHalfKernels implements HalfKernels {
  static final ScalarHalfKernels INSTANCE = new ScalarHalfKernels();

  private ScalarHalfKernels() {}

  @Override
  public String name() {
    return "cpu-scalar";
  }

  @Override
  public void toBf16(float[] src, int so, short[] dst, int d, int n) {
    check("toBf16", src.length, so, dst.length, d, n);
    for (int i = 0; i < n; i++) dst[d + i] = HalfFloats.bf16(src[so + i]);
  }

  @Override
  public void fromBf16(short[] src, int so, float[] dst, int d, int n) {
    check("fromBf16", src.length, so, dst.length, d, n);
    for (int i = 0; i < n; i++) dst[d + i] = HalfFloats.bf16ToFloat(src[so + i]);
  }

  @Override
  public void toF16(float[] src, int so, short[] dst, int d, int n) {
    check("toF16", src.length, so, dst.length, d, n);
    for (int i = 0; i < n; i++) dst[d + i] = HalfFloats.f16(src[so + i]);
  }

  @Override
  public void fromF16(short[] src, int so, float[] dst, int d, int n) {
    check("fromF16", src.length, so, dst.length, d, n);
    for (int i = 0; i < n; i++) dst[d + i] = HalfFloats.f16ToFloat(src[so + i]);
  }

  static void check(String op, int srcLength, int so, int dstLength, int d, int n) {
    HalfKernels.checkRange(op, "src", so, n, srcLength);
    HalfKernels.checkRange(op, "dst", d, n, dstLength);
  }
}
