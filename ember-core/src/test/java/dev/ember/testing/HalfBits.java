package dev.ember.testing;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;

/** The raw 16-bit patterns of BF16/F16 tensors, for bitwise comparisons in tests. */
public final class HalfBits {
  private HalfBits() {}

  /** The bit patterns of a BF16/F16 tensor's elements, in row-major order. */
  public static short[] bits(Tensor t) {
    Tensor c = t.contiguous();
    short[] out = new short[(int) c.numel()];
    System.arraycopy(c.storage().halves(), c.offset(), out, 0, out.length);
    return out;
  }

  /** An F32 result rounded element by element to {@code dtype} with HalfFloats: the bits a half op must give. */
  public static short[] rounded(DType dtype, Tensor f32) {
    assertEquals(DType.F32, f32.dtype());
    float[] v = f32.toFloatArray();
    short[] out = new short[v.length];
    for (int i = 0; i < v.length; i++) out[i] = dtype == DType.BF16 ? HalfFloats.bf16(v[i]) : HalfFloats.f16(v[i]);
    return out;
  }
}
