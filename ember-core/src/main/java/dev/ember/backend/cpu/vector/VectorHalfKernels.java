package dev.ember.backend.cpu.vector;

import dev.ember.backend.cpu.HalfKernels;
import dev.ember.tensor.HalfFloats;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * The half-float conversions on the Vector API, bit for bit as {@link HalfFloats}: float32 lanes are
 * converted with integer and float lane operations and narrowed to (or widened from) a short vector of the
 * same lane count; the tail runs the scalar code. Loaded by name from {@link HalfKernels#vectorOrNull()}.
 */
public final class VectorHalfKernels implements HalfKernels {
  private static final VectorSpecies<Float> FS = FloatVector.SPECIES_PREFERRED;
  private static final VectorSpecies<Integer> IS = IntVector.SPECIES_PREFERRED;
  /** Shorts, as many lanes as FS: half its bits. */
  private static final VectorSpecies<Short> SS = VectorShape.forBitSize(IS.vectorBitSize() / 2).withLanes(short.class);

  @Override
  public String name() {
    return "cpu-vector";
  }

  @Override
  public void toBf16(float[] src, int so, short[] dst, int d, int n) {
    check("toBf16", src.length, so, dst.length, d, n);
    int i = 0;
    for (int bound = FS.loopBound(n); i < bound; i += FS.length()) {
      IntVector b = FloatVector.fromArray(FS, src, so + i).reinterpretAsInts();
      // Adding 0x7FFF plus the lowest kept bit rounds the dropped half to nearest even (see HalfFloats.bf16).
      IntVector r = b.add(0x7FFF).add(b.lanewise(VectorOperators.LSHR, 16).and(1)).lanewise(VectorOperators.LSHR, 16);
      VectorMask<Integer> nan = b.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000);
      ((ShortVector) r.blend(HalfFloats.BF16_NAN, nan).convertShape(VectorOperators.I2S, SS, 0)).intoArray(dst, d + i);
    }
    for (; i < n; i++) dst[d + i] = HalfFloats.bf16(src[so + i]);
  }

  @Override
  public void fromBf16(short[] src, int so, float[] dst, int d, int n) {
    check("fromBf16", src.length, so, dst.length, d, n);
    int i = 0;
    for (int bound = SS.loopBound(n); i < bound; i += SS.length()) {
      IntVector h = (IntVector) ShortVector.fromArray(SS, src, so + i).convertShape(VectorOperators.S2I, IS, 0);
      h.lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, d + i);
    }
    for (; i < n; i++) dst[d + i] = HalfFloats.bf16ToFloat(src[so + i]);
  }

  @Override
  public void toF16(float[] src, int so, short[] dst, int d, int n) {
    check("toF16", src.length, so, dst.length, d, n);
    int i = 0;
    for (int bound = FS.loopBound(n); i < bound; i += FS.length()) {
      FloatVector f = FloatVector.fromArray(FS, src, so + i);
      IntVector w = f.reinterpretAsInts();
      // Maratyszcza's FP16 trick (the one c10::Half uses): scaling |f| up by 2^112 and down by 2^-110 makes
      // overflowing values infinite and leaves the rest; adding a power of two with f's exponent (at least
      // 2^-14's) then lets the float adder round away the bits binary16 drops, to nearest even, subnormals
      // included; the sum's exponent and top mantissa bits are the F16 result.
      FloatVector base = f.abs().mul(0x1p112f).mul(0x1p-110f);
      IntVector bias = w.and(0x7F800000).max(0x38800000).add(0x07800000);
      IntVector bits = bias.reinterpretAsFloats().add(base).reinterpretAsInts();
      IntVector nonsign = bits.lanewise(VectorOperators.LSHR, 13).and(0x7C00).add(bits.and(0x0FFF));
      VectorMask<Integer> nan = w.and(0x7FFFFFFF).compare(VectorOperators.GT, 0x7F800000);
      IntVector sign = w.lanewise(VectorOperators.LSHR, 16).and(0x8000);
      ((ShortVector) sign.or(nonsign.blend(0x7E00, nan)).convertShape(VectorOperators.I2S, SS, 0)).intoArray(dst, d + i);
    }
    for (; i < n; i++) dst[d + i] = HalfFloats.f16(src[so + i]);
  }

  @Override
  public void fromF16(short[] src, int so, float[] dst, int d, int n) {
    check("fromF16", src.length, so, dst.length, d, n);
    int i = 0;
    for (int bound = SS.loopBound(n); i < bound; i += SS.length()) {
      IntVector h = (IntVector) ShortVector.fromArray(SS, src, so + i).convertShape(VectorOperators.S2I, IS, 0);
      IntVector a = h.and(0x7FFF);
      IntVector shifted = a.lanewise(VectorOperators.LSHL, 13);
      IntVector normal = shifted.add(0x38000000); // rebias the exponent: 127 - 15 = 112 = 0x38000000 >> 23
      IntVector sub = ((FloatVector) a.convert(VectorOperators.I2F, 0)).mul(0x1p-24f).reinterpretAsInts();
      IntVector special = shifted.or(0x7F800000) // infinity, or a NaN with its payload, made quiet
          .blend(shifted.or(0x7FC00000), a.compare(VectorOperators.GT, 0x7C00));
      IntVector r = normal.blend(sub, a.compare(VectorOperators.LT, 0x0400))
          .blend(special, a.compare(VectorOperators.GE, 0x7C00));
      r.or(h.and(0x8000).lanewise(VectorOperators.LSHL, 16)).reinterpretAsFloats().intoArray(dst, d + i);
    }
    for (; i < n; i++) dst[d + i] = HalfFloats.f16ToFloat(src[so + i]);
  }

  private static void check(String op, int srcLength, int so, int dstLength, int d, int n) {
    HalfKernels.checkRange(op, "src", so, n, srcLength);
    HalfKernels.checkRange(op, "dst", d, n, dstLength);
  }
}
