package dev.ember.tensor;

import static dev.ember.testing.HalfBits.bits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.function.IntFunction;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** BF16 and F16 as tensor dtypes: storage, creation, conversions both ways, item, printing, bulk I/O. */
class HalfDTypeTest {
  /** Values that exercise rounding (ties, overflow, subnormals, NaN, signed zero) in both formats. */
  static final float[] VALUES = {0f, -0f, 1f, -2.5f, 1.1f, 3.14159f, 65504f, 65520f, 1e5f, 3.4e38f, 1e-8f, 6e-8f,
      1.00390625f, 1.01171875f, Float.MIN_VALUE, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, 257f,
      -1e-40f};

  static short round(DType t, float v) {
    return t == DType.BF16 ? HalfFloats.bf16(v) : HalfFloats.f16(v);
  }

  static float widen(DType t, short h) {
    return t == DType.BF16 ? HalfFloats.bf16ToFloat(h) : HalfFloats.f16ToFloat(h);
  }


  /**
   * rand and uniform_ of a half dtype draw as torch's: each value keeps the dtype's significand bits of one 32-bit
   * output, so it is exact in the dtype and below 1 (they threw a NullPointerException once, then were float32's
   * numbers rounded, which differed from torch's in every element). randn is float32's numbers rounded once (torch's
   * half Box-Muller is not followed).
   */
  @Test
  void randAndUniformOfAHalfDtypeDrawAsTorch() {
    // torch.manual_seed(0); torch.rand(5, dtype=torch.bfloat16 / torch.float16)
    // torch.manual_seed(3); torch.empty(4, dtype=...).uniform_(-2, 3)
    Map<DType, double[][]> torch = Map.of(
        DType.BF16, new double[][] {{0.671875, 0.18359375, 0.45703125, 0.75, 0.26171875},
            {0.0703125, 0.96875, 2.859375, 0.55859375}},
        DType.F16, new double[][] {{0.333984375, 0.27294921875, 0.80712890625, 0.59375, 0.40771484375},
            {2.6328125, 2.12109375, 1.107421875, 2.0703125}});
    for (DType t : new DType[] {DType.BF16, DType.F16}) {
      Tensor r = Tensor.rand(new Generator(0), t, 5);
      assertEquals(t, r.dtype());
      for (int i = 0; i < 5; i++) assertEquals(torch.get(t)[0][i], r.storage().getDouble(i), t + " rand " + i);
      Tensor u = Tensor.empty(t, 4);
      dev.ember.tensor.Device.CPU.backend().random().uniform(u, -2, 3, new Generator(3));
      for (int i = 0; i < 4; i++) assertEquals(torch.get(t)[1][i], u.storage().getDouble(i), t + " uniform_ " + i);
      Tensor many = Tensor.rand(new Generator(7), t, 4096);
      for (int i = 0; i < 4096; i++) {
        double v = many.storage().getDouble(i);
        assertTrue(v >= 0 && v < 1, t + " rand in [0, 1): " + v);
      }
      Tensor fn = Tensor.randn(new Generator(9), DType.F32, 300);
      Tensor hn = Tensor.randn(new Generator(9), t, 300);
      for (int i = 0; i < 300; i++) {
        assertEquals(widen(t, round(t, fn.storage().floats()[i])), hn.storage().getDouble(i), t + " randn " + i);
      }
      Generator a = new Generator(3);
      Generator b = new Generator(3);
      Tensor.rand(a, DType.F32, 10);
      Tensor.rand(b, t, 10);
      assertEquals(a.nextDouble(), b.nextDouble(), "one 32-bit output per element, as float32's");
    }
  }


  @Test
  void dtypeProperties() {
    assertEquals("bfloat16", DType.BF16.torchName());
    assertEquals("float16", DType.F16.torchName());
    assertEquals(2, DType.BF16.itemSize());
    assertEquals(2, DType.F16.itemSize());
    assertTrue(DType.BF16.isFloatingPoint() && DType.F16.isFloatingPoint());
    assertTrue(DType.BF16.isHalf() && DType.F16.isHalf() && !DType.F32.isHalf());
  }

  @Test
  void promotionFollowsTorch() {
    assertEquals(DType.BF16, DType.promote(DType.BF16, DType.BF16));
    assertEquals(DType.F16, DType.promote(DType.F16, DType.F16));
    assertEquals(DType.F32, DType.promote(DType.BF16, DType.F16));
    assertEquals(DType.F32, DType.promote(DType.F16, DType.BF16));
    assertEquals(DType.F32, DType.promote(DType.BF16, DType.F32));
    assertEquals(DType.F64, DType.promote(DType.F64, DType.F16));
    for (DType i : new DType[] {DType.I64, DType.I32, DType.BOOL}) {
      assertEquals(DType.BF16, DType.promote(DType.BF16, i));
      assertEquals(DType.F16, DType.promote(i, DType.F16));
    }
  }

  @Test
  void creationRoundsTheFillValue() {
    for (DType t : new DType[] {DType.BF16, DType.F16}) {
      Tensor z = Tensor.zeros(t, 2, 3);
      assertEquals(t, z.dtype());
      assertArrayEquals(new short[6], bits(z));
      Tensor f = Tensor.full(1.1, t, 4);
      for (short h : bits(f)) assertEquals(round(t, 1.1f), h);
      assertArrayEquals(new short[3], bits(Tensor.empty(t, 3)));
      Tensor ones = Tensor.ones(t, 2);
      assertArrayEquals(new float[] {1, 1}, ones.toFloatArray());
    }
  }

  @Test
  void floatToHalfAndBackMatchesHalfFloatsBitwise() {
    for (DType t : new DType[] {DType.BF16, DType.F16}) {
      Tensor h = Tensor.of(VALUES, VALUES.length).to(t);
      assertEquals(t, h.dtype());
      short[] got = bits(h);
      float[] back = h.to(DType.F32).toFloatArray();
      for (int i = 0; i < VALUES.length; i++) {
        assertEquals(round(t, VALUES[i]), got[i], t + " of " + VALUES[i]);
        assertEquals(Float.floatToRawIntBits(widen(t, got[i])), Float.floatToRawIntBits(back[i]),
            t + " back of " + VALUES[i]);
      }
    }
  }

  @Test
  void stridedConversionsMatchTheContiguousOnes() {
    float[] v = new float[24];
    for (int i = 0; i < v.length; i++) v[i] = (float) Math.sin(i) * 1000 + 0.3f * i;
    Tensor x = Tensor.of(v, 4, 6).transpose(0, 1); // not contiguous: the element-wise path
    for (DType t : new DType[] {DType.BF16, DType.F16}) {
      Tensor h = x.to(t);
      Tensor ref = x.contiguous().to(t);
      assertArrayEquals(bits(ref), bits(h), t.toString());
      assertArrayEquals(ref.to(DType.F32).toFloatArray(), h.transpose(0, 1).transpose(0, 1).to(DType.F32).toFloatArray());
    }
  }

  @Test
  void conversionsBetweenEveryDtypeGoThroughFloat() {
    Tensor bf = Tensor.of(new float[] {2.75f, -2.5f, 0f, 300.5f}, 4).to(DType.BF16);
    // half -> integers truncate the float value toward zero, as torch
    assertArrayEquals(new long[] {2, -2, 0, 300}, toLongs(bf.to(DType.I64)));
    assertArrayEquals(new long[] {2, -2, 0, 300}, toLongs(bf.to(DType.I32)));
    assertArrayEquals(new long[] {1, 1, 0, 1}, toLongs(bf.to(DType.BOOL)));
    // integers -> half round the value: 257 is not a BF16, it rounds to even 256
    Tensor ints = Tensor.of(new long[] {257, -3, 1 << 20}, 3);
    assertArrayEquals(new float[] {256, -3, 1 << 20}, ints.to(DType.BF16).toFloatArray());
    assertArrayEquals(new float[] {257, -3, Float.POSITIVE_INFINITY}, ints.to(DType.F16).toFloatArray());
    assertArrayEquals(new float[] {1, 0}, Tensor.of(new boolean[] {true, false}, 2).to(DType.F16).toFloatArray());
    // F64 -> half, and BF16 <-> F16 through the exact float32 value
    assertArrayEquals(new short[] {HalfFloats.f16(0.1f)}, bits(Tensor.of(new double[] {0.1}, 1).to(DType.F16)));
    Tensor f16 = Tensor.of(new float[] {1.1f, 70000f}, 2).to(DType.F16);
    Tensor viaBf = f16.to(DType.BF16);
    assertArrayEquals(new short[] {HalfFloats.bf16(HalfFloats.f16ToFloat(HalfFloats.f16(1.1f))),
        HalfFloats.bf16(Float.POSITIVE_INFINITY)}, bits(viaBf));
    assertEquals(1.1f, (float) viaBf.to(DType.F64).toDoubleArray()[0], 0.01f);
    assertSame(bf, bf.to(DType.BF16));
  }

  private static long[] toLongs(Tensor t) {
    long[] out = new long[(int) t.numel()];
    for (int i = 0; i < out.length; i++) out[i] = t.storage().getLong(t.offset() + i);
    return out;
  }

  @Test
  void itemAndElementAccessReturnTheHalfValue() {
    assertEquals(HalfFloats.bf16ToFloat(HalfFloats.bf16(3.14159f)), Tensor.scalar(3.14159, DType.BF16).item());
    assertEquals(HalfFloats.f16ToFloat(HalfFloats.f16(3.14159f)), Tensor.scalar(3.14159, DType.F16).item());
    assertTrue(Double.isNaN(Tensor.scalar(Double.NaN, DType.F16).item()));
    Tensor x = Tensor.zeros(DType.BF16, 3);
    x.storage().setDouble(1, 1.0 / 3);
    assertEquals(HalfFloats.bf16ToFloat(HalfFloats.bf16(1f / 3)), x.getDouble(1));
    x.storage().setLong(2, 257);
    assertEquals(256, x.storage().getLong(2));
  }

  @Test
  void printsLikePyTorch() {
    assertEquals("tensor([1., 2.], dtype=torch.bfloat16)", Tensor.of(new float[] {1, 2}, 2).to(DType.BF16).toString());
    assertEquals("tensor([1.5000, 2.2500], dtype=torch.float16)",
        Tensor.of(new float[] {1.5f, 2.25f}, 2).to(DType.F16).toString());
    // torch: tensor([3.1406, 0.1001], dtype=torch.bfloat16) (the stored values, not the float32 inputs)
    assertEquals("tensor([3.1406, 0.1001], dtype=torch.bfloat16)",
        Tensor.of(new float[] {3.14159f, 0.1f}, 2).to(DType.BF16).toString());
    assertEquals("tensor([inf, nan], dtype=torch.float16)",
        Tensor.of(new float[] {1e6f, Float.NaN}, 2).to(DType.F16).toString());
    assertEquals("tensor([], dtype=torch.bfloat16)", Tensor.zeros(DType.BF16, 0).toString());
    assertEquals("tensor(0.5000, dtype=torch.float16)", Tensor.scalar(0.5, DType.F16).toString());
  }

  @Test
  void tensorDataMovesTheBitPatterns() {
    for (DType t : new DType[] {DType.BF16, DType.F16}) {
      short[] raw = {round(t, 1.5f), round(t, -2f), round(t, 1e-3f), round(t, 7f)};
      Tensor w = TensorData.wrapHalf(raw, t, 2, 2);
      assertEquals(t, w.dtype());
      assertSame(raw, w.storage().halves(), "wrap does not copy");
      ByteBuffer bb = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN);
      TensorData.read(w, 1, 3, bb);
      assertEquals(0, bb.position());
      assertEquals(raw[1], bb.getShort(0));
      assertEquals(raw[3], bb.getShort(4));
      Tensor dst = Tensor.zeros(t, 4);
      TensorData.write(bb, dst, 0, 3);
      assertArrayEquals(new short[] {raw[1], raw[2], raw[3], 0}, bits(dst));
      Tensor seg = Tensor.zeros(t, 2);
      TensorData.write(java.lang.foreign.MemorySegment.ofArray(new byte[] {0x00, 0x3C, 0x00, (byte) 0xC0}),
          java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, seg, 0, 2);
      assertArrayEquals(new short[] {0x3C00, (short) 0xC000}, bits(seg));
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TensorData.wrapHalf(new short[2], DType.F32, 2));
    assertTrue(e.getMessage().contains("TensorData.wrapHalf") && e.getMessage().contains("float32"), e.getMessage());
  }

  @Test
  void gradientFlowsThroughCastsToHalfRounded() {
    Tensor x = Tensor.of(new float[] {1, 2, 3}, 3).requiresGrad(true);
    Tensor y = x.to(DType.BF16).to(DType.F32);
    assertArrayEquals(new float[] {1, 2, 3}, y.toFloatArray());
    y.backward(Tensor.of(new float[] {1.1f, 0.5f, 3.14159f}, 3));
    float[] g = x.grad().toFloatArray();
    for (int i = 0; i < 3; i++) {
      float want = HalfFloats.bf16ToFloat(HalfFloats.bf16(new float[] {1.1f, 0.5f, 3.14159f}[i]));
      assertEquals(want, g[i], "the gradient passes through bfloat16 on its way back");
    }
  }

  @Test
  void pooledBuffersOfHalfDtypesAreRecycledZeroed() {
    IntFunction<Tensor> make = n -> Tensor.full(7, DType.F16, n);
    try (MemoryScope outer = MemoryScope.open()) {
      try (MemoryScope s = MemoryScope.open()) {
        make.apply(16);
      }
      Tensor again = Tensor.zeros(DType.F16, 16);
      assertArrayEquals(new short[16], bits(again));
      assertFalse(again.storage().isReleased());
    }
  }
}
