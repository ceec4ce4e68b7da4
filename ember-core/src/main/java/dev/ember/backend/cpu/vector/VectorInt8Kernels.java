package dev.ember.backend.cpu.vector;

import dev.ember.backend.cpu.Int8Kernels;
import dev.ember.backend.cpu.ScalarInt8Kernels;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Int8Kernels} on the Vector API. The API has no int8 dot-product instruction (x86's vpmaddubsw/vpdpbusd),
 * and widening to int32 and multiplying with vpmulld (2 uops) ran at 21 GMAC/s on one AVX-512 core; this kernel
 * widens each L bytes (L = float lanes of the preferred shape, 16 on AVX-512) straight to floats (B2F) and
 * multiply-adds with FMA instead, 35 GMAC/s on the same core, and is still exact: every product is an integer of
 * magnitude at most 2^14, and a lane sums at most {@link #SEG_STEPS} of them before its sum (below 2^24, where
 * float32 holds every integer) is converted to int32 and reduced in integers. Four rows of A times four rows of
 * B per step: 8 widenings feed 16 FMAs into 16 accumulators, each loaded B vector used by four A rows. Leftover
 * rows take the 1 x 4 path and leftover columns the 1 x 1 path; the k tail is scalar.
 *
 * <p>{@link #panelDot}, the product for larger batches, widens each operand once instead: A was widened to floats
 * once per product, and B comes packed k-major in panels of 2L output channels, so one k step loads two B vectors
 * (two widenings) and broadcasts one float per A row (a load, no ALU work): 8 rows x 2L columns make 16 FMAs per 2
 * widenings, against 16 FMAs per 8 widenings above. The same 2^24 bound holds: a lane sums at most
 * {@link #PANEL_SEG} products before it is added to the int32 result.
 */
public final class VectorInt8Kernels implements Int8Kernels {
  private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
  private static final int L = F.length();
  private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(L * 8));
  /** Vector steps per segment: 1024 products of |x| &lt;= 2^14 per lane keep the lane sum within 2^24. */
  static final int SEG_STEPS = 1024;
  private static final int SEG = SEG_STEPS * L;

  /** k steps per segment of {@link #panelDot}: one lane sums one product per step, 1024 * 2^14 = 2^24. */
  static final int PANEL_SEG = 1024;
  /** Rows of A per panel tile: 8 rows x 2 vectors = 16 accumulators, plus 2 B vectors, in 32 registers. */
  private static final int MR = 8;
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED.length() == L
      ? IntVector.SPECIES_PREFERRED : VectorSpecies.of(int.class, F.vectorShape());
  /** 1.5 * 2^23: t + MAGIC rounds |t| &lt; 2^22 to the nearest integer, ties to even (float32 RNE). */
  private static final float MAGIC = 12582912f;

  public VectorInt8Kernels() {}

  @Override
  public int panelWidth() {
    return 2 * L;
  }

  @Override
  public void panelDot(float[] a, int aOff, int rows, int k, byte[] bp, int bpOff, int[] acc, int accOff, int ldAcc) {
    for (int r = 0; r < rows; r++) java.util.Arrays.fill(acc, accOff + r * ldAcc, accOff + r * ldAcc + 2 * L, 0);
    for (int p0 = 0; p0 < k; p0 += PANEL_SEG) {
      int p1 = Math.min(k, p0 + PANEL_SEG);
      int r = 0;
      for (; r + MR <= rows; r += MR) panel8(a, aOff + r * k, k, bp, bpOff, p0, p1, acc, accOff + r * ldAcc, ldAcc);
      for (; r + 4 <= rows; r += 4) panel4(a, aOff + r * k, k, bp, bpOff, p0, p1, acc, accOff + r * ldAcc, ldAcc);
      for (; r < rows; r++) panel1(a, aOff + r * k, bp, bpOff, p0, p1, acc, accOff + r * ldAcc);
    }
  }

  private static void panel8(float[] a, int ao, int k, byte[] bp, int bo, int p0, int p1, int[] acc, int co, int ld) {
    FloatVector c00 = FloatVector.zero(F), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    FloatVector c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00, c70 = c00, c71 = c00;
    int w = 2 * L;
    for (int p = p0; p < p1; p++) {
      FloatVector b0 = (FloatVector) ByteVector.fromArray(B, bp, bo + p * w).convertShape(VectorOperators.B2F, F, 0);
      FloatVector b1 = (FloatVector) ByteVector.fromArray(B, bp, bo + p * w + L).convertShape(VectorOperators.B2F, F, 0);
      FloatVector x = FloatVector.broadcast(F, a[ao + p]);
      c00 = x.fma(b0, c00); c01 = x.fma(b1, c01);
      x = FloatVector.broadcast(F, a[ao + k + p]);
      c10 = x.fma(b0, c10); c11 = x.fma(b1, c11);
      x = FloatVector.broadcast(F, a[ao + 2 * k + p]);
      c20 = x.fma(b0, c20); c21 = x.fma(b1, c21);
      x = FloatVector.broadcast(F, a[ao + 3 * k + p]);
      c30 = x.fma(b0, c30); c31 = x.fma(b1, c31);
      x = FloatVector.broadcast(F, a[ao + 4 * k + p]);
      c40 = x.fma(b0, c40); c41 = x.fma(b1, c41);
      x = FloatVector.broadcast(F, a[ao + 5 * k + p]);
      c50 = x.fma(b0, c50); c51 = x.fma(b1, c51);
      x = FloatVector.broadcast(F, a[ao + 6 * k + p]);
      c60 = x.fma(b0, c60); c61 = x.fma(b1, c61);
      x = FloatVector.broadcast(F, a[ao + 7 * k + p]);
      c70 = x.fma(b0, c70); c71 = x.fma(b1, c71);
    }
    ((IntVector) c00.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c01.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c10.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c11.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c20.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c21.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c30.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c31.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c40.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c41.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c50.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c51.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c60.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c61.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c70.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c71.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
  }

  private static void panel4(float[] a, int ao, int k, byte[] bp, int bo, int p0, int p1, int[] acc, int co, int ld) {
    FloatVector c00 = FloatVector.zero(F), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00, c30 = c00, c31 = c00;
    int w = 2 * L;
    for (int p = p0; p < p1; p++) {
      FloatVector b0 = (FloatVector) ByteVector.fromArray(B, bp, bo + p * w).convertShape(VectorOperators.B2F, F, 0);
      FloatVector b1 = (FloatVector) ByteVector.fromArray(B, bp, bo + p * w + L).convertShape(VectorOperators.B2F, F, 0);
      FloatVector x = FloatVector.broadcast(F, a[ao + p]);
      c00 = x.fma(b0, c00); c01 = x.fma(b1, c01);
      x = FloatVector.broadcast(F, a[ao + k + p]);
      c10 = x.fma(b0, c10); c11 = x.fma(b1, c11);
      x = FloatVector.broadcast(F, a[ao + 2 * k + p]);
      c20 = x.fma(b0, c20); c21 = x.fma(b1, c21);
      x = FloatVector.broadcast(F, a[ao + 3 * k + p]);
      c30 = x.fma(b0, c30); c31 = x.fma(b1, c31);
    }
    ((IntVector) c00.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c01.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c10.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c11.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c20.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c21.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
    co += ld;
    ((IntVector) c30.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c31.convert(VectorOperators.F2I, 0)).add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
  }

  /**
   * One row (a batch of 1 is all of this): four k steps per iteration into separate accumulators, so eight FMA
   * chains hide the FMA latency; their float sum stays exact (the segment's total is within 2^24).
   */
  private static void panel1(float[] a, int ao, byte[] bp, int bo, int p0, int p1, int[] acc, int co) {
    FloatVector c0 = FloatVector.zero(F), c1 = c0, d0 = c0, d1 = c0, e0 = c0, e1 = c0, f0 = c0, f1 = c0;
    int w = 2 * L;
    int p = p0;
    for (; p + 4 <= p1; p += 4) {
      int o = bo + p * w;
      FloatVector x = FloatVector.broadcast(F, a[ao + p]);
      c0 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o).convertShape(VectorOperators.B2F, F, 0), c0);
      c1 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + L).convertShape(VectorOperators.B2F, F, 0), c1);
      x = FloatVector.broadcast(F, a[ao + p + 1]);
      d0 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + w).convertShape(VectorOperators.B2F, F, 0), d0);
      d1 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + w + L).convertShape(VectorOperators.B2F, F, 0), d1);
      x = FloatVector.broadcast(F, a[ao + p + 2]);
      e0 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + 2 * w).convertShape(VectorOperators.B2F, F, 0), e0);
      e1 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + 2 * w + L).convertShape(VectorOperators.B2F, F, 0), e1);
      x = FloatVector.broadcast(F, a[ao + p + 3]);
      f0 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + 3 * w).convertShape(VectorOperators.B2F, F, 0), f0);
      f1 = x.fma((FloatVector) ByteVector.fromArray(B, bp, o + 3 * w + L).convertShape(VectorOperators.B2F, F, 0), f1);
    }
    for (; p < p1; p++) {
      FloatVector x = FloatVector.broadcast(F, a[ao + p]);
      c0 = x.fma((FloatVector) ByteVector.fromArray(B, bp, bo + p * w).convertShape(VectorOperators.B2F, F, 0), c0);
      c1 = x.fma((FloatVector) ByteVector.fromArray(B, bp, bo + p * w + L).convertShape(VectorOperators.B2F, F, 0), c1);
    }
    ((IntVector) c0.add(d0).add(e0.add(f0)).convert(VectorOperators.F2I, 0))
        .add(IntVector.fromArray(I, acc, co)).intoArray(acc, co);
    ((IntVector) c1.add(d1).add(e1.add(f1)).convert(VectorOperators.F2I, 0))
        .add(IntVector.fromArray(I, acc, co + L)).intoArray(acc, co + L);
  }

  /**
   * Clamps {@code t = x / scale} to {@code [qmin - zeroPoint, qmax - zeroPoint]} (integers, so clamping before
   * rounding is the same as after) with compare-and-blend (NaN is ruled out first, so Java's min/max semantics, a
   * few more instructions each, are not needed), then rounds by the float adder: {@code t + 1.5 * 2^23} lands in
   * [2^23, 2^24), where the float spacing is 1, so the addition rounds t half to even and the sum's bits are
   * {@code 0x4B400000 + rint(t)}; subtracting {@code 0x4B400000 - zeroPoint} leaves {@code rint(t) + zeroPoint}.
   */
  @Override
  public void quantize(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax, byte[] out,
      int outOff) {
    float inv = 1.0f / scale;
    float lo = qmin - zeroPoint;
    float hi = qmax - zeroPoint;
    int bits = Float.floatToRawIntBits(MAGIC) - zeroPoint;
    int i = 0;
    for (int end = n - n % L; i < end; i += L) {
      FloatVector t = FloatVector.fromArray(F, x, off + i).mul(inv);
      if (t.compare(VectorOperators.NE, t).anyTrue()) break;   // NaN: the scalar loop names the element
      t = t.blend(lo, t.compare(VectorOperators.LT, lo)).blend(hi, t.compare(VectorOperators.GT, hi));
      IntVector q = t.add(MAGIC).reinterpretAsInts().sub(bits);
      ((ByteVector) q.convertShape(VectorOperators.I2B, B, 0)).intoArray(out, outOff + i);
    }
    ScalarInt8Kernels.quantizeScalar(x, off + i, n - i, scale, zeroPoint, qmin, qmax, out, outOff + i);
  }

  /**
   * The int32 sums less the correction converted to floats (I2F: the same rounding as the scalar int or long
   * conversion), scaled, and rounded as {@link #quantize} does: clamped to the integers {@code [outMin - outZero,
   * outMax - outZero]} first, then rounded by adding 1.5 * 2^23. A vector holding NaN (only an overflowing scale
   * product makes one) goes to the scalar loop, which gives NaN's bits.
   */
  @Override
  public void requantizeRow(int[] acc, int accOff, int n, int corr, float scale, float bias, boolean hasBias,
      float inv, int outZero, int outMin, int outMax, byte[] out, int outOff) {
    float lo = outMin - outZero;
    float hi = outMax - outZero;
    int bits = Float.floatToRawIntBits(MAGIC) - outZero;
    int i = 0;
    for (int end = n - n % L; i < end; i += L) {
      FloatVector v = (FloatVector) IntVector.fromArray(I, acc, accOff + i).sub(corr).convert(VectorOperators.I2F, 0);
      v = v.mul(scale);
      if (hasBias) v = v.add(bias);
      FloatVector t = v.mul(inv);
      if (t.compare(VectorOperators.NE, t).anyTrue()) {
        Int8Kernels.super.requantizeRow(acc, accOff + i, L, corr, scale, bias, hasBias, inv, outZero, outMin, outMax,
            out, outOff + i);
        continue;
      }
      t = t.blend(lo, t.compare(VectorOperators.LT, lo)).blend(hi, t.compare(VectorOperators.GT, hi));
      IntVector q = t.add(MAGIC).reinterpretAsInts().sub(bits);
      ((ByteVector) q.convertShape(VectorOperators.I2B, B, 0)).intoArray(out, outOff + i);
    }
    Int8Kernels.super.requantizeRow(acc, accOff + i, n - i, corr, scale, bias, hasBias, inv, outZero, outMin, outMax,
        out, outOff + i);
  }

  @Override
  public void requantizeColumns(int[] acc, int accOff, int n, int[] corr, float[] scale, float[] bias, int col,
      float inv, int outZero, int outMin, int outMax, byte[] out, int outOff) {
    float lo = outMin - outZero;
    float hi = outMax - outZero;
    int bits = Float.floatToRawIntBits(MAGIC) - outZero;
    int i = 0;
    for (int end = n - n % L; i < end; i += L) {
      IntVector d = IntVector.fromArray(I, acc, accOff + i).sub(IntVector.fromArray(I, corr, col + i));
      FloatVector v = ((FloatVector) d.convert(VectorOperators.I2F, 0)).mul(FloatVector.fromArray(F, scale, col + i));
      if (bias != null) v = v.add(FloatVector.fromArray(F, bias, col + i));
      FloatVector t = v.mul(inv);
      if (t.compare(VectorOperators.NE, t).anyTrue()) {
        Int8Kernels.super.requantizeColumns(acc, accOff + i, L, corr, scale, bias, col + i, inv, outZero, outMin,
            outMax, out, outOff + i);
        continue;
      }
      t = t.blend(lo, t.compare(VectorOperators.LT, lo)).blend(hi, t.compare(VectorOperators.GT, hi));
      IntVector q = t.add(MAGIC).reinterpretAsInts().sub(bits);
      ((ByteVector) q.convertShape(VectorOperators.I2B, B, 0)).intoArray(out, outOff + i);
    }
    Int8Kernels.super.requantizeColumns(acc, accOff + i, n - i, corr, scale, bias, col + i, inv, outZero, outMin,
        outMax, out, outOff + i);
  }

  /** Four accumulators each for min and max: Java's min/max take several instructions, so one chain would crawl. */
  @Override
  public float[] minMax(float[] x, int off, int n) {
    FloatVector lo0 = FloatVector.broadcast(F, Float.POSITIVE_INFINITY), lo1 = lo0, lo2 = lo0, lo3 = lo0;
    FloatVector hi0 = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY), hi1 = hi0, hi2 = hi0, hi3 = hi0;
    int i = 0;
    for (int end = n - n % (4 * L); i < end; i += 4 * L) {
      FloatVector v0 = FloatVector.fromArray(F, x, off + i), v1 = FloatVector.fromArray(F, x, off + i + L);
      FloatVector v2 = FloatVector.fromArray(F, x, off + i + 2 * L), v3 = FloatVector.fromArray(F, x, off + i + 3 * L);
      lo0 = lo0.min(v0); lo1 = lo1.min(v1); lo2 = lo2.min(v2); lo3 = lo3.min(v3);
      hi0 = hi0.max(v0); hi1 = hi1.max(v1); hi2 = hi2.max(v2); hi3 = hi3.max(v3);
    }
    for (int end = n - n % L; i < end; i += L) {
      FloatVector v = FloatVector.fromArray(F, x, off + i);
      lo0 = lo0.min(v);
      hi0 = hi0.max(v);
    }
    float l = lo0.min(lo1).min(lo2.min(lo3)).reduceLanes(VectorOperators.MIN);
    float h = hi0.max(hi1).max(hi2.max(hi3)).reduceLanes(VectorOperators.MAX);
    for (; i < n; i++) {
      l = Math.min(l, x[off + i]);
      h = Math.max(h, x[off + i]);
    }
    return new float[] {l, h};
  }

  @Override
  public void dotBlock(byte[] a, int row0, int rows, byte[] b, int j0, int j1, int k, int[] acc, int ldAcc) {
    int vEnd = k - k % L;
    // scalar k tail first (it sets acc), then the vector segments add to it
    for (int r = 0; r < rows; r++) {
      int ao = (row0 + r) * k;
      for (int j = j0; j < j1; j++) {
        int s = 0;
        for (int q = vEnd; q < k; q++) s += a[ao + q] * b[j * k + q];
        acc[r * ldAcc + (j - j0)] = s;
      }
    }
    for (int p0 = 0; p0 < vEnd; p0 += SEG) {
      int p1 = Math.min(vEnd, p0 + SEG);
      int r = 0;
      for (; r + 4 <= rows; r += 4) {
        int j = j0;
        for (; j + 4 <= j1; j += 4) tile4x4(a, (row0 + r) * k, b, j * k, k, p0, p1, acc, r * ldAcc + (j - j0), ldAcc);
        for (; j < j1; j++) {
          for (int rr = r; rr < r + 4; rr++) acc[rr * ldAcc + (j - j0)] += dot(a, (row0 + rr) * k, b, j * k, p0, p1);
        }
      }
      for (; r < rows; r++) {
        int j = j0;
        for (; j + 4 <= j1; j += 4) tile1x4(a, (row0 + r) * k, b, j * k, k, p0, p1, acc, r * ldAcc + (j - j0));
        for (; j < j1; j++) acc[r * ldAcc + (j - j0)] += dot(a, (row0 + r) * k, b, j * k, p0, p1);
      }
    }
  }

  private static void tile4x4(byte[] a, int ao, byte[] b, int bo, int k, int p0, int p1, int[] acc, int co, int ld) {
    FloatVector c00 = FloatVector.zero(F), c01 = c00, c02 = c00, c03 = c00;
    FloatVector c10 = c00, c11 = c00, c12 = c00, c13 = c00;
    FloatVector c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    FloatVector c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    for (int p = p0; p < p1; p += L) {
      FloatVector b0 = (FloatVector) ByteVector.fromArray(B, b, bo + p).convertShape(VectorOperators.B2F, F, 0);
      FloatVector b1 = (FloatVector) ByteVector.fromArray(B, b, bo + k + p).convertShape(VectorOperators.B2F, F, 0);
      FloatVector b2 = (FloatVector) ByteVector.fromArray(B, b, bo + 2 * k + p).convertShape(VectorOperators.B2F, F, 0);
      FloatVector b3 = (FloatVector) ByteVector.fromArray(B, b, bo + 3 * k + p).convertShape(VectorOperators.B2F, F, 0);
      FloatVector a0 = (FloatVector) ByteVector.fromArray(B, a, ao + p).convertShape(VectorOperators.B2F, F, 0);
      c00 = a0.fma(b0, c00); c01 = a0.fma(b1, c01); c02 = a0.fma(b2, c02); c03 = a0.fma(b3, c03);
      FloatVector a1 = (FloatVector) ByteVector.fromArray(B, a, ao + k + p).convertShape(VectorOperators.B2F, F, 0);
      c10 = a1.fma(b0, c10); c11 = a1.fma(b1, c11); c12 = a1.fma(b2, c12); c13 = a1.fma(b3, c13);
      FloatVector a2 = (FloatVector) ByteVector.fromArray(B, a, ao + 2 * k + p).convertShape(VectorOperators.B2F, F, 0);
      c20 = a2.fma(b0, c20); c21 = a2.fma(b1, c21); c22 = a2.fma(b2, c22); c23 = a2.fma(b3, c23);
      FloatVector a3 = (FloatVector) ByteVector.fromArray(B, a, ao + 3 * k + p).convertShape(VectorOperators.B2F, F, 0);
      c30 = a3.fma(b0, c30); c31 = a3.fma(b1, c31); c32 = a3.fma(b2, c32); c33 = a3.fma(b3, c33);
    }
    acc[co] += ((IntVector) c00.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 1] += ((IntVector) c01.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 2] += ((IntVector) c02.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 3] += ((IntVector) c03.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    co += ld;
    acc[co] += ((IntVector) c10.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 1] += ((IntVector) c11.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 2] += ((IntVector) c12.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 3] += ((IntVector) c13.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    co += ld;
    acc[co] += ((IntVector) c20.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 1] += ((IntVector) c21.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 2] += ((IntVector) c22.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 3] += ((IntVector) c23.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    co += ld;
    acc[co] += ((IntVector) c30.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 1] += ((IntVector) c31.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 2] += ((IntVector) c32.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 3] += ((IntVector) c33.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
  }

  private static void tile1x4(byte[] a, int ao, byte[] b, int bo, int k, int p0, int p1, int[] acc, int co) {
    FloatVector c0 = FloatVector.zero(F), c1 = c0, c2 = c0, c3 = c0;
    for (int p = p0; p < p1; p += L) {
      FloatVector a0 = (FloatVector) ByteVector.fromArray(B, a, ao + p).convertShape(VectorOperators.B2F, F, 0);
      c0 = a0.fma((FloatVector) ByteVector.fromArray(B, b, bo + p).convertShape(VectorOperators.B2F, F, 0), c0);
      c1 = a0.fma((FloatVector) ByteVector.fromArray(B, b, bo + k + p).convertShape(VectorOperators.B2F, F, 0), c1);
      c2 = a0.fma((FloatVector) ByteVector.fromArray(B, b, bo + 2 * k + p).convertShape(VectorOperators.B2F, F, 0), c2);
      c3 = a0.fma((FloatVector) ByteVector.fromArray(B, b, bo + 3 * k + p).convertShape(VectorOperators.B2F, F, 0), c3);
    }
    acc[co] += ((IntVector) c0.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 1] += ((IntVector) c1.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 2] += ((IntVector) c2.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
    acc[co + 3] += ((IntVector) c3.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
  }

  private static int dot(byte[] a, int ao, byte[] b, int bo, int p0, int p1) {
    FloatVector c = FloatVector.zero(F);
    for (int p = p0; p < p1; p += L) {
      FloatVector x = (FloatVector) ByteVector.fromArray(B, a, ao + p).convertShape(VectorOperators.B2F, F, 0);
      c = x.fma((FloatVector) ByteVector.fromArray(B, b, bo + p).convertShape(VectorOperators.B2F, F, 0), c);
    }
    return ((IntVector) c.convert(VectorOperators.F2I, 0)).reduceLanes(VectorOperators.ADD);
  }
}
