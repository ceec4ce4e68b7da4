package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.HalfFloatsFixture.Section;
import java.util.function.IntUnaryOperator;
import org.junit.jupiter.api.Test;

/** HalfFloats against PyTorch 1.13, bit for bit, plus named cases that say what each rule is. */
class HalfFloatsTest {
  @Test
  void bf16ToFloatMatchesTorchOnAllPatterns() {
    assertDecode(HalfFloatsFixture.BF16, h -> Float.floatToRawIntBits(HalfFloats.bf16ToFloat((short) h)));
  }

  @Test
  void f16ToFloatMatchesTorchOnAllPatterns() {
    assertDecode(HalfFloatsFixture.F16, h -> Float.floatToRawIntBits(HalfFloats.f16ToFloat((short) h)));
  }

  @Test
  void bf16MatchesTorchOnEveryRoundingCase() {
    assertEncode(HalfFloatsFixture.BF16, f -> HalfFloats.bf16(Float.intBitsToFloat(f)));
  }

  @Test
  void f16MatchesTorchOnEveryRoundingCase() {
    assertEncode(HalfFloatsFixture.F16, f -> HalfFloats.f16(Float.intBitsToFloat(f)));
  }

  @Test
  void fixtureCoversEveryPatternAndEnoughInputs() {
    for (Section s : new Section[] {HalfFloatsFixture.BF16, HalfFloatsFixture.F16}) {
      assertEquals(65536, s.decode().length, s.name());
      assertTrue(s.inputs().length > 4 * 60000, s.name() + ": " + s.inputs().length + " encode inputs");
    }
  }

  @Test
  void bf16NamedCases() {
    assertBf16(0x0000, 0.0f);
    assertBf16(0x8000, -0.0f);
    assertBf16(0x7F80, Float.POSITIVE_INFINITY);
    assertBf16(0xFF80, Float.NEGATIVE_INFINITY);
    assertBf16(0x3F80, 1.0f);
    assertBf16(0x3F80, Float.intBitsToFloat(0x3F808000)); // tie: to even (down)
    assertBf16(0x3F82, Float.intBitsToFloat(0x3F818000)); // tie: to even (up)
    assertBf16(0x3F81, Float.intBitsToFloat(0x3F808001)); // just above the tie
    assertBf16(0x7F7F, Float.intBitsToFloat(0x7F7F7FFF)); // just below the overflow threshold
    assertBf16(0x7F80, Float.intBitsToFloat(0x7F7F8000)); // the threshold itself rounds (to even) to infinity
    assertBf16(0x7F80, Float.MAX_VALUE);
    assertBf16(0x0000, Float.MIN_VALUE); // float32's smallest subnormal rounds to zero
    assertBf16(0x0001, Float.intBitsToFloat(0x00008001)); // subnormals round like the rest
    // NaNs: sign and payload dropped, as c10::BFloat16
    for (int nan : new int[] {0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7FC12345}) {
      assertBf16(0x7FC0, Float.intBitsToFloat(nan));
    }
    assertEquals(0xFF810000, Float.floatToRawIntBits(HalfFloats.bf16ToFloat((short) 0xFF81)), "bf16 NaN widens as is");
  }

  @Test
  void f16NamedCases() {
    assertF16(0x0000, 0.0f);
    assertF16(0x8000, -0.0f);
    assertF16(0x7C00, Float.POSITIVE_INFINITY);
    assertF16(0x3C00, 1.0f);
    assertF16(0x7BFF, 65504f); // largest finite
    assertF16(0x7BFF, 65519.996f);
    assertF16(0x7C00, 65520f); // the overflow threshold rounds (to even) to infinity
    assertF16(0xFC00, -65520f);
    assertF16(0x0001, 0x1p-24f); // smallest subnormal
    assertF16(0x0000, 0x1p-25f); // half of it: tie to even, zero
    assertF16(0x8001, -0x1.000002p-25f); // just above the half: rounds up, sign kept
    assertF16(0x0400, 0x1p-14f); // smallest normal
    // NaNs: sign kept, payload dropped, as c10::Half
    assertF16(0x7E00, Float.intBitsToFloat(0x7F800001));
    assertF16(0xFE00, Float.intBitsToFloat(0xFFC12345));
    // widening a NaN keeps sign and payload and makes it quiet
    assertEquals(0x7FC02000, Float.floatToRawIntBits(HalfFloats.f16ToFloat((short) 0x7C01)));
    assertEquals(0xFFC00000, Float.floatToRawIntBits(HalfFloats.f16ToFloat((short) 0xFE00)));
    assertEquals(0x33800000, Float.floatToRawIntBits(HalfFloats.f16ToFloat((short) 0x0001)));
  }

  /**
   * The JDK's IEEE conversions agree with torch on every number; they differ only on NaNs (the JDK keeps
   * payloads), which is why HalfFloats special-cases NaN. Fails if a JDK change makes them diverge on numbers.
   */
  @Test
  void jdkConversionsDifferFromTorchOnlyOnNaNs() {
    Section f16 = HalfFloatsFixture.F16;
    for (int h = 0; h < 65536; h++) {
      if ((h & 0x7FFF) > 0x7C00) continue;
      assertEquals(f16.decode()[h], Float.floatToRawIntBits(Float.float16ToFloat((short) h)), "pattern " + hex(h));
    }
    int nanDiffs = 0;
    for (int k = 0; k < f16.inputs().length; k++) {
      float f = Float.intBitsToFloat(f16.inputs()[k]);
      short jdk = Float.floatToFloat16(f);
      if (Float.isNaN(f)) {
        if (jdk != f16.encoded()[k]) nanDiffs++;
      } else {
        assertEquals(f16.encoded()[k], jdk, "input " + hex(f16.inputs()[k]));
      }
    }
    assertTrue(nanDiffs > 0, "the JDK now drops NaN payloads as torch does");
  }

  static void assertDecode(Section s, IntUnaryOperator ours) {
    int bad = 0;
    StringBuilder first = new StringBuilder();
    for (int h = 0; h < 65536; h++) {
      int got = ours.applyAsInt(h);
      if (got != s.decode()[h] && bad++ < 5) {
        first.append(" ").append(hex(h)).append("->").append(hex(got)).append(" (torch ").append(hex(s.decode()[h]))
            .append(")");
      }
    }
    if (bad > 0) fail(s.name() + " to float: " + bad + " of 65536 patterns differ from torch:" + first);
  }

  static void assertEncode(Section s, IntUnaryOperator ours) {
    int bad = 0;
    StringBuilder first = new StringBuilder();
    for (int k = 0; k < s.inputs().length; k++) {
      int got = ours.applyAsInt(s.inputs()[k]) & 0xFFFF;
      int want = s.encoded()[k] & 0xFFFF;
      if (got != want && bad++ < 5) {
        first.append(" ").append(hex(s.inputs()[k])).append("->").append(hex(got)).append(" (torch ")
            .append(hex(want)).append(")");
      }
    }
    if (bad > 0) fail("float to " + s.name() + ": " + bad + " of " + s.inputs().length + " inputs differ:" + first);
  }

  private static void assertBf16(int want, float f) {
    assertEquals(hex(want), hex(HalfFloats.bf16(f) & 0xFFFF), "bf16(" + f + " = " + hex(Float.floatToRawIntBits(f)) + ")");
  }

  private static void assertF16(int want, float f) {
    assertEquals(hex(want), hex(HalfFloats.f16(f) & 0xFFFF), "f16(" + f + " = " + hex(Float.floatToRawIntBits(f)) + ")");
  }

  static String hex(int v) {
    return "0x" + Integer.toHexString(v).toUpperCase();
  }
}
