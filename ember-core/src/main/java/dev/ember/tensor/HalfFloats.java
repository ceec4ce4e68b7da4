package dev.ember.tensor;

/**
 * Bit-exact conversions between float32 and the two 16-bit float formats, with PyTorch's semantics
 * (checked against torch 1.13 on all 65,536 bit patterns of each type and on every rounding case; see
 * the fixture script {@code halffloats/make_fixture.py} in the test resources).
 *
 * <ul>
 *   <li><b>BF16</b> (bfloat16: 1 sign, 8 exponent, 7 mantissa bits) is the top half of a float32.
 *       {@link #bf16} rounds to nearest, ties to even, as {@code c10::BFloat16}: values past the largest
 *       finite BF16 round to infinity, subnormals and negative zero are kept, and every NaN becomes the
 *       canonical {@code 0x7FC0} (sign and payload dropped). {@link #bf16ToFloat} is exact: the 16 bits
 *       move to the top of a float32, NaN payloads and signs included.
 *   <li><b>F16</b> (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits). {@link #f16} rounds to nearest
 *       even as {@code c10::Half}: magnitudes from 65520 up become infinity, results below the smallest
 *       normal become subnormals (or signed zero), and a NaN becomes {@code sign | 0x7E00} (sign kept,
 *       payload dropped). {@link #f16ToFloat} is exact for numbers; a NaN keeps its sign and payload and
 *       is made quiet ({@code sign | 0x7FC00000 | payload &lt;&lt; 13}), as the x86 conversion does.
 * </ul>
 *
 * <p>PyTorch itself is not consistent about BF16 NaNs: its AVX2/AVX-512 kernel for a contiguous
 * {@code Tensor.to(torch.bfloat16)} writes {@code 0xFFFF} for every NaN, while the scalar path (0-dim and
 * strided tensors, {@code torch.tensor(..., dtype=torch.bfloat16)}) writes {@code 0x7FC0}. Ember follows
 * {@code c10::BFloat16}, the scalar path, everywhere; both are NaNs.
 */
public final class HalfFloats {
  /** The BF16 every float32 NaN converts to. */
  public static final short BF16_NAN = (short) 0x7FC0;

  private HalfFloats() {}

  /** float32 to BF16 bits, round to nearest even; any NaN gives {@link #BF16_NAN}. */
  public static short bf16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7FFFFFFF) > 0x7F800000) return BF16_NAN;
    // Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to nearest, ties to even; a carry
    // out of the mantissa bumps the exponent, which turns the largest finite values into infinity.
    return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
  }

  /** BF16 bits to float32, exact (NaN payloads and signs included). */
  public static float bf16ToFloat(short h) {
    return Float.intBitsToFloat((h & 0xFFFF) << 16);
  }

  /** float32 to F16 bits, round to nearest even; a NaN gives {@code sign | 0x7E00}. */
  public static short f16(float f) {
    int bits = Float.floatToRawIntBits(f);
    if ((bits & 0x7FFFFFFF) > 0x7F800000) return (short) (((bits >>> 16) & 0x8000) | 0x7E00);
    return Float.floatToFloat16(f); // IEEE 754 round to nearest even for every non-NaN input
  }

  /** F16 bits to float32, exact for numbers; a NaN keeps sign and payload and is made quiet. */
  public static float f16ToFloat(short h) {
    int a = h & 0x7FFF;
    if (a > 0x7C00) return Float.intBitsToFloat(((h & 0x8000) << 16) | 0x7FC00000 | (a & 0x3FF) << 13);
    return Float.float16ToFloat(h);
  }
}
