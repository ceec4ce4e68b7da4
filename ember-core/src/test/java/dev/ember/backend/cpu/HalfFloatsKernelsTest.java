package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.HalfFloatsFixture;
import dev.ember.tensor.HalfFloatsFixture.Section;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** The bulk half-float kernels, scalar and Vector API, against PyTorch's fixture and against each other. */
class HalfFloatsKernelsTest {
  private static final int[] SPECIAL_BITS = {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000,
      0xFFC00000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF, 0x00000001, 0x477FF000, 0x477FEFFF, 0x33000000,
      0x33000001, 0x3F808000, 0x3F818000, 0x7F7F8000};

  private static List<HalfKernels> sets() {
    HalfKernels v = HalfKernels.vectorOrNull();
    return v == null ? List.of(HalfKernels.scalar()) : List.of(HalfKernels.scalar(), v);
  }

  @Test
  void theVectorSetIsLoadedWhenTheModuleIsReadable() {
    boolean readable = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    Assumptions.assumeTrue(readable, "jdk.incubator.vector is not readable in this JVM");
    assertNotNull(HalfKernels.vectorOrNull());
    assertEquals("cpu-vector", HalfKernels.vectorOrNull().name());
    assertEquals("scalar".equals(System.getProperty("ember.kernels")) ? "cpu-scalar" : "cpu-vector",
        HalfKernels.instance().name());
  }

  @Test
  void decodeMatchesTorchOnAllPatterns() {
    for (HalfKernels k : sets()) {
      for (Section s : new Section[] {HalfFloatsFixture.BF16, HalfFloatsFixture.F16}) {
        short[] src = new short[65536 + 3];
        for (int h = 0; h < 65536; h++) src[3 + h] = (short) h;
        float[] dst = new float[65536 + 5];
        if (s == HalfFloatsFixture.BF16) k.fromBf16(src, 3, dst, 5, 65536);
        else k.fromF16(src, 3, dst, 5, 65536);
        int[] got = new int[65536];
        for (int h = 0; h < 65536; h++) got[h] = Float.floatToRawIntBits(dst[5 + h]);
        assertBitsEqual(k.name() + " " + s.name() + " to float", s.decode(), got);
      }
    }
  }

  @Test
  void encodeMatchesTorchOnEveryRoundingCase() {
    for (HalfKernels k : sets()) {
      for (Section s : new Section[] {HalfFloatsFixture.BF16, HalfFloatsFixture.F16}) {
        float[] in = s.inputFloats();
        float[] src = new float[in.length + 7];
        System.arraycopy(in, 0, src, 7, in.length);
        short[] dst = new short[in.length + 1];
        if (s == HalfFloatsFixture.BF16) k.toBf16(src, 7, dst, 1, in.length);
        else k.toF16(src, 7, dst, 1, in.length);
        int[] want = new int[in.length];
        int[] got = new int[in.length];
        for (int i = 0; i < in.length; i++) {
          want[i] = s.encoded()[i] & 0xFFFF;
          got[i] = dst[1 + i] & 0xFFFF;
        }
        assertBitsEqual(k.name() + " float to " + s.name(), want, got);
      }
    }
  }

  @Test
  void vectorAndScalarAgreeOnEverySizeAndOffset() {
    HalfKernels v = HalfKernels.vectorOrNull();
    Assumptions.assumeTrue(v != null, "jdk.incubator.vector is not readable: no vector set to compare");
    HalfKernels s = HalfKernels.scalar();
    SplittableRandom rnd = new SplittableRandom(35);
    for (int n = 0; n <= 67; n++) {
      for (int rep = 0; rep < 4; rep++) {
        int so = rnd.nextInt(4);
        int d = rnd.nextInt(4);
        float[] f = new float[so + n + 2];
        short[] h = new short[so + n + 2];
        for (int i = 0; i < f.length; i++) {
          int r = rnd.nextInt(4);
          f[i] = r == 0 ? Float.intBitsToFloat(rnd.nextInt())
              : r == 1 ? Float.intBitsToFloat(SPECIAL_BITS[rnd.nextInt(SPECIAL_BITS.length)])
              : (float) (rnd.nextGaussian() * Math.pow(10, rnd.nextInt(-9, 6)));
          h[i] = (short) rnd.nextInt();
        }
        String at = " n=" + n + " so=" + so + " d=" + d;
        short[] hv = filled(new short[d + n + 2]);
        short[] hs = filled(new short[d + n + 2]);
        v.toBf16(f, so, hv, d, n);
        s.toBf16(f, so, hs, d, n);
        assertArrayEquals(hs, hv, "toBf16" + at);
        v.toF16(f, so, hv, d, n);
        s.toF16(f, so, hs, d, n);
        assertArrayEquals(hs, hv, "toF16" + at);
        float[] fv = new float[d + n + 2];
        float[] fs = new float[d + n + 2];
        Arrays.fill(fv, 42f);
        Arrays.fill(fs, 42f);
        v.fromBf16(h, so, fv, d, n);
        s.fromBf16(h, so, fs, d, n);
        assertArrayEquals(bits(fs), bits(fv), "fromBf16" + at);
        v.fromF16(h, so, fv, d, n);
        s.fromF16(h, so, fs, d, n);
        assertArrayEquals(bits(fs), bits(fv), "fromF16" + at);
        assertEquals(42f, fv[fv.length - 1], "fromF16 wrote past n" + at);
      }
    }
  }

  @Test
  void rangesOutsideTheArraysAreRejectedNamingTheOp() {
    for (HalfKernels k : sets()) {
      var e = assertThrows(IndexOutOfBoundsException.class, () -> k.toBf16(new float[8], 2, new short[8], 0, 7));
      assertTrue(e.getMessage().startsWith("toBf16: src range [2, 9)"), e.getMessage());
      e = assertThrows(IndexOutOfBoundsException.class, () -> k.fromF16(new short[8], 0, new float[4], 1, 4));
      assertTrue(e.getMessage().startsWith("fromF16: dst range [1, 5)"), e.getMessage());
      e = assertThrows(IndexOutOfBoundsException.class, () -> k.toF16(new float[8], 0, new short[8], 0, -1));
      assertTrue(e.getMessage().contains("n=-1"), e.getMessage());
      e = assertThrows(IndexOutOfBoundsException.class, () -> k.fromBf16(new short[8], -1, new float[8], 0, 1));
      assertTrue(e.getMessage().startsWith("fromBf16: src range [-1, 0)"), e.getMessage());
    }
  }

  private static short[] filled(short[] a) {
    Arrays.fill(a, (short) 0x1234);
    return a;
  }

  private static int[] bits(float[] f) {
    int[] b = new int[f.length];
    for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
    return b;
  }

  private static void assertBitsEqual(String what, int[] want, int[] got) {
    int bad = 0;
    StringBuilder first = new StringBuilder();
    for (int i = 0; i < want.length; i++) {
      if (want[i] != got[i] && bad++ < 5) {
        first.append(" [").append(i).append("] 0x").append(Integer.toHexString(got[i])).append(" (torch 0x")
            .append(Integer.toHexString(want[i])).append(")");
      }
    }
    if (bad > 0) fail(what + ": " + bad + " of " + want.length + " differ from torch:" + first);
  }
}
