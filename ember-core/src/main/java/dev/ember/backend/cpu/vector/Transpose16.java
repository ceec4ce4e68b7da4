package dev.ember.backend.cpu.vector;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * A 16 x 16 float transpose in vector registers, for 16-lane vectors (AVX-512): the GEMM's packing
 * of a transposed B, its C^T -> C write-back, and the convolution's position-major gradient panels.
 * Callers check {@link #APPLIES} and keep a scalar path for other widths and the edges.
 */
public final class Transpose16 {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  /** Whether the preferred species has 16 float lanes, the only width {@link #transpose} handles. */
  public static final boolean APPLIES = S.length() == 16;
  /** The same shape in int lanes: the selections run on the floats' bits (see {@link #transpose}). */
  private static final VectorSpecies<Integer> I = VectorSpecies.of(int.class, S.vectorShape());

  private Transpose16() {}

  /** Index vectors of the 4 butterfly stages of a 16 x 16 transpose (see {@link #transpose}): lo then hi per stage. */
  private static final int[] T16 = transposeIndexes();
  /** A block transposed before it is added to its destination (beta != 0). */
  private static final ThreadLocal<float[]> SCRATCH = ThreadLocal.withInitial(() -> new float[256]);

  private static int[] transposeIndexes() {
    int[] idx = new int[8 * 16];
    int s = 0;
    for (int d = 8; d >= 1; d >>= 1, s++) {
      for (int c = 0; c < 16; c++) {
        idx[(2 * s) * 16 + c] = (c & d) == 0 ? c : 16 + c - d;
        idx[(2 * s + 1) * 16 + c] = (c & d) == 0 ? c + d : 16 + c;
      }
    }
    return idx;
  }

  /**
   * Transposes the 16 x 16 block of b whose first element is b[r] (rows ldb apart) into dst: row t
   * of the result (the block's column t) lands at dst[d + t * ldd ..+16], added to {@code beta}
   * times what is there unless beta is 0 (as BLAS: beta 0 ignores what was there, NaN too). Four
   * butterfly stages of two-vector lane selections, each swapping one bit of the row index with the
   * same bit of the column index; 16 loads, 64 selections and 16 stores for 256 elements, where the
   * scalar transpose does 256 loads and stores.
   *
   * <p>The stores of the 16 results are plain, so that C2 keeps the vectors in registers (measured
   * L1-resident, one thread): a branch on beta at each store made a block take 120-130 ns against 35
   * ns, and three store loops in one method 2.4-2.9 us; beta != 0 goes through a 256-float scratch
   * block instead. The selections run in int lanes on the floats' bits: with float indexes, 42 ns.
   */
  public static void transpose(float[] b, int r, int ldb, float[] dst, int d, int ldd, float beta) {
    if (beta == 0) {
      transpose(b, r, ldb, dst, d, ldd);
      return;
    }
    float[] t = SCRATCH.get();
    transpose(b, r, ldb, t, 0, 16);
    // dst row = transposed row + beta dst row, written out here rather than in a helper taking the vector (see VMath)
    for (int i = 0; i < 16; i++) {
      FloatVector v = FloatVector.fromArray(S, t, 16 * i);
      int di = d + i * ldd;
      if (beta == 1) v.add(FloatVector.fromArray(S, dst, di)).intoArray(dst, di);
      else FloatVector.fromArray(S, dst, di).mul(beta).add(v).intoArray(dst, di);
    }
  }

  /** {@link #transpose(float[], int, int, float[], int, int, float)} with beta 0. */
  private static void transpose(float[] b, int r, int ldb, float[] dst, int d, int ldd) {
    IntVector v0 = FloatVector.fromArray(S, b, r + 0 * ldb).reinterpretAsInts();
    IntVector v1 = FloatVector.fromArray(S, b, r + 1 * ldb).reinterpretAsInts();
    IntVector v2 = FloatVector.fromArray(S, b, r + 2 * ldb).reinterpretAsInts();
    IntVector v3 = FloatVector.fromArray(S, b, r + 3 * ldb).reinterpretAsInts();
    IntVector v4 = FloatVector.fromArray(S, b, r + 4 * ldb).reinterpretAsInts();
    IntVector v5 = FloatVector.fromArray(S, b, r + 5 * ldb).reinterpretAsInts();
    IntVector v6 = FloatVector.fromArray(S, b, r + 6 * ldb).reinterpretAsInts();
    IntVector v7 = FloatVector.fromArray(S, b, r + 7 * ldb).reinterpretAsInts();
    IntVector v8 = FloatVector.fromArray(S, b, r + 8 * ldb).reinterpretAsInts();
    IntVector v9 = FloatVector.fromArray(S, b, r + 9 * ldb).reinterpretAsInts();
    IntVector v10 = FloatVector.fromArray(S, b, r + 10 * ldb).reinterpretAsInts();
    IntVector v11 = FloatVector.fromArray(S, b, r + 11 * ldb).reinterpretAsInts();
    IntVector v12 = FloatVector.fromArray(S, b, r + 12 * ldb).reinterpretAsInts();
    IntVector v13 = FloatVector.fromArray(S, b, r + 13 * ldb).reinterpretAsInts();
    IntVector v14 = FloatVector.fromArray(S, b, r + 14 * ldb).reinterpretAsInts();
    IntVector v15 = FloatVector.fromArray(S, b, r + 15 * ldb).reinterpretAsInts();
    IntVector lo0 = IntVector.fromArray(I, T16, 0), hi0 = IntVector.fromArray(I, T16, 16);
    IntVector w0_0 = lo0.selectFrom(v0, v8), w0_8 = hi0.selectFrom(v0, v8);
    IntVector w0_1 = lo0.selectFrom(v1, v9), w0_9 = hi0.selectFrom(v1, v9);
    IntVector w0_2 = lo0.selectFrom(v2, v10), w0_10 = hi0.selectFrom(v2, v10);
    IntVector w0_3 = lo0.selectFrom(v3, v11), w0_11 = hi0.selectFrom(v3, v11);
    IntVector w0_4 = lo0.selectFrom(v4, v12), w0_12 = hi0.selectFrom(v4, v12);
    IntVector w0_5 = lo0.selectFrom(v5, v13), w0_13 = hi0.selectFrom(v5, v13);
    IntVector w0_6 = lo0.selectFrom(v6, v14), w0_14 = hi0.selectFrom(v6, v14);
    IntVector w0_7 = lo0.selectFrom(v7, v15), w0_15 = hi0.selectFrom(v7, v15);
    v0 = w0_0; v1 = w0_1; v2 = w0_2; v3 = w0_3; v4 = w0_4; v5 = w0_5; v6 = w0_6; v7 = w0_7; v8 = w0_8; v9 = w0_9; v10 = w0_10; v11 = w0_11; v12 = w0_12; v13 = w0_13; v14 = w0_14; v15 = w0_15;
    IntVector lo1 = IntVector.fromArray(I, T16, 32), hi1 = IntVector.fromArray(I, T16, 48);
    IntVector w1_0 = lo1.selectFrom(v0, v4), w1_4 = hi1.selectFrom(v0, v4);
    IntVector w1_1 = lo1.selectFrom(v1, v5), w1_5 = hi1.selectFrom(v1, v5);
    IntVector w1_2 = lo1.selectFrom(v2, v6), w1_6 = hi1.selectFrom(v2, v6);
    IntVector w1_3 = lo1.selectFrom(v3, v7), w1_7 = hi1.selectFrom(v3, v7);
    IntVector w1_8 = lo1.selectFrom(v8, v12), w1_12 = hi1.selectFrom(v8, v12);
    IntVector w1_9 = lo1.selectFrom(v9, v13), w1_13 = hi1.selectFrom(v9, v13);
    IntVector w1_10 = lo1.selectFrom(v10, v14), w1_14 = hi1.selectFrom(v10, v14);
    IntVector w1_11 = lo1.selectFrom(v11, v15), w1_15 = hi1.selectFrom(v11, v15);
    v0 = w1_0; v1 = w1_1; v2 = w1_2; v3 = w1_3; v4 = w1_4; v5 = w1_5; v6 = w1_6; v7 = w1_7; v8 = w1_8; v9 = w1_9; v10 = w1_10; v11 = w1_11; v12 = w1_12; v13 = w1_13; v14 = w1_14; v15 = w1_15;
    IntVector lo2 = IntVector.fromArray(I, T16, 64), hi2 = IntVector.fromArray(I, T16, 80);
    IntVector w2_0 = lo2.selectFrom(v0, v2), w2_2 = hi2.selectFrom(v0, v2);
    IntVector w2_1 = lo2.selectFrom(v1, v3), w2_3 = hi2.selectFrom(v1, v3);
    IntVector w2_4 = lo2.selectFrom(v4, v6), w2_6 = hi2.selectFrom(v4, v6);
    IntVector w2_5 = lo2.selectFrom(v5, v7), w2_7 = hi2.selectFrom(v5, v7);
    IntVector w2_8 = lo2.selectFrom(v8, v10), w2_10 = hi2.selectFrom(v8, v10);
    IntVector w2_9 = lo2.selectFrom(v9, v11), w2_11 = hi2.selectFrom(v9, v11);
    IntVector w2_12 = lo2.selectFrom(v12, v14), w2_14 = hi2.selectFrom(v12, v14);
    IntVector w2_13 = lo2.selectFrom(v13, v15), w2_15 = hi2.selectFrom(v13, v15);
    v0 = w2_0; v1 = w2_1; v2 = w2_2; v3 = w2_3; v4 = w2_4; v5 = w2_5; v6 = w2_6; v7 = w2_7; v8 = w2_8; v9 = w2_9; v10 = w2_10; v11 = w2_11; v12 = w2_12; v13 = w2_13; v14 = w2_14; v15 = w2_15;
    IntVector lo3 = IntVector.fromArray(I, T16, 96), hi3 = IntVector.fromArray(I, T16, 112);
    IntVector w3_0 = lo3.selectFrom(v0, v1), w3_1 = hi3.selectFrom(v0, v1);
    IntVector w3_2 = lo3.selectFrom(v2, v3), w3_3 = hi3.selectFrom(v2, v3);
    IntVector w3_4 = lo3.selectFrom(v4, v5), w3_5 = hi3.selectFrom(v4, v5);
    IntVector w3_6 = lo3.selectFrom(v6, v7), w3_7 = hi3.selectFrom(v6, v7);
    IntVector w3_8 = lo3.selectFrom(v8, v9), w3_9 = hi3.selectFrom(v8, v9);
    IntVector w3_10 = lo3.selectFrom(v10, v11), w3_11 = hi3.selectFrom(v10, v11);
    IntVector w3_12 = lo3.selectFrom(v12, v13), w3_13 = hi3.selectFrom(v12, v13);
    IntVector w3_14 = lo3.selectFrom(v14, v15), w3_15 = hi3.selectFrom(v14, v15);
    v0 = w3_0; v1 = w3_1; v2 = w3_2; v3 = w3_3; v4 = w3_4; v5 = w3_5; v6 = w3_6; v7 = w3_7; v8 = w3_8; v9 = w3_9; v10 = w3_10; v11 = w3_11; v12 = w3_12; v13 = w3_13; v14 = w3_14; v15 = w3_15;
    v0.reinterpretAsFloats().intoArray(dst, d + 0 * ldd);
    v1.reinterpretAsFloats().intoArray(dst, d + 1 * ldd);
    v2.reinterpretAsFloats().intoArray(dst, d + 2 * ldd);
    v3.reinterpretAsFloats().intoArray(dst, d + 3 * ldd);
    v4.reinterpretAsFloats().intoArray(dst, d + 4 * ldd);
    v5.reinterpretAsFloats().intoArray(dst, d + 5 * ldd);
    v6.reinterpretAsFloats().intoArray(dst, d + 6 * ldd);
    v7.reinterpretAsFloats().intoArray(dst, d + 7 * ldd);
    v8.reinterpretAsFloats().intoArray(dst, d + 8 * ldd);
    v9.reinterpretAsFloats().intoArray(dst, d + 9 * ldd);
    v10.reinterpretAsFloats().intoArray(dst, d + 10 * ldd);
    v11.reinterpretAsFloats().intoArray(dst, d + 11 * ldd);
    v12.reinterpretAsFloats().intoArray(dst, d + 12 * ldd);
    v13.reinterpretAsFloats().intoArray(dst, d + 13 * ldd);
    v14.reinterpretAsFloats().intoArray(dst, d + 14 * ldd);
    v15.reinterpretAsFloats().intoArray(dst, d + 15 * ldd);
  }
  /**
   * The 12 x 16 block of b at b[r] (12 rows ldb apart, as {@link #transpose}) transposed into the p-major
   * panel of a 12-row GEMM micro-tile: column t of the block, its 12 elements, at dst[d + 12 t ..+12], for
   * t = 0..15. Each result is stored as a whole vector in increasing t, its last 4 lanes (zeros) landing in
   * the next result's slot before that result overwrites them, so the caller leaves 4 floats of room after
   * dst[d + 192] (the next block's slot, or slack). The same butterflies as the 16 x 16 transpose with rows
   * 12..15 taken as zeros.
   */
  static void transpose12(float[] b, int r, int ldb, float[] dst, int d) {
    IntVector v0 = FloatVector.fromArray(S, b, r + 0 * ldb).reinterpretAsInts();
    IntVector v1 = FloatVector.fromArray(S, b, r + 1 * ldb).reinterpretAsInts();
    IntVector v2 = FloatVector.fromArray(S, b, r + 2 * ldb).reinterpretAsInts();
    IntVector v3 = FloatVector.fromArray(S, b, r + 3 * ldb).reinterpretAsInts();
    IntVector v4 = FloatVector.fromArray(S, b, r + 4 * ldb).reinterpretAsInts();
    IntVector v5 = FloatVector.fromArray(S, b, r + 5 * ldb).reinterpretAsInts();
    IntVector v6 = FloatVector.fromArray(S, b, r + 6 * ldb).reinterpretAsInts();
    IntVector v7 = FloatVector.fromArray(S, b, r + 7 * ldb).reinterpretAsInts();
    IntVector v8 = FloatVector.fromArray(S, b, r + 8 * ldb).reinterpretAsInts();
    IntVector v9 = FloatVector.fromArray(S, b, r + 9 * ldb).reinterpretAsInts();
    IntVector v10 = FloatVector.fromArray(S, b, r + 10 * ldb).reinterpretAsInts();
    IntVector v11 = FloatVector.fromArray(S, b, r + 11 * ldb).reinterpretAsInts();
    IntVector v12 = IntVector.zero(I);
    IntVector v13 = IntVector.zero(I);
    IntVector v14 = IntVector.zero(I);
    IntVector v15 = IntVector.zero(I);
    IntVector lo0 = IntVector.fromArray(I, T16, 0), hi0 = IntVector.fromArray(I, T16, 16);
    IntVector w0_0 = lo0.selectFrom(v0, v8), w0_8 = hi0.selectFrom(v0, v8);
    IntVector w0_1 = lo0.selectFrom(v1, v9), w0_9 = hi0.selectFrom(v1, v9);
    IntVector w0_2 = lo0.selectFrom(v2, v10), w0_10 = hi0.selectFrom(v2, v10);
    IntVector w0_3 = lo0.selectFrom(v3, v11), w0_11 = hi0.selectFrom(v3, v11);
    IntVector w0_4 = lo0.selectFrom(v4, v12), w0_12 = hi0.selectFrom(v4, v12);
    IntVector w0_5 = lo0.selectFrom(v5, v13), w0_13 = hi0.selectFrom(v5, v13);
    IntVector w0_6 = lo0.selectFrom(v6, v14), w0_14 = hi0.selectFrom(v6, v14);
    IntVector w0_7 = lo0.selectFrom(v7, v15), w0_15 = hi0.selectFrom(v7, v15);
    v0 = w0_0; v1 = w0_1; v2 = w0_2; v3 = w0_3; v4 = w0_4; v5 = w0_5; v6 = w0_6; v7 = w0_7; v8 = w0_8; v9 = w0_9; v10 = w0_10; v11 = w0_11; v12 = w0_12; v13 = w0_13; v14 = w0_14; v15 = w0_15;
    IntVector lo1 = IntVector.fromArray(I, T16, 32), hi1 = IntVector.fromArray(I, T16, 48);
    IntVector w1_0 = lo1.selectFrom(v0, v4), w1_4 = hi1.selectFrom(v0, v4);
    IntVector w1_1 = lo1.selectFrom(v1, v5), w1_5 = hi1.selectFrom(v1, v5);
    IntVector w1_2 = lo1.selectFrom(v2, v6), w1_6 = hi1.selectFrom(v2, v6);
    IntVector w1_3 = lo1.selectFrom(v3, v7), w1_7 = hi1.selectFrom(v3, v7);
    IntVector w1_8 = lo1.selectFrom(v8, v12), w1_12 = hi1.selectFrom(v8, v12);
    IntVector w1_9 = lo1.selectFrom(v9, v13), w1_13 = hi1.selectFrom(v9, v13);
    IntVector w1_10 = lo1.selectFrom(v10, v14), w1_14 = hi1.selectFrom(v10, v14);
    IntVector w1_11 = lo1.selectFrom(v11, v15), w1_15 = hi1.selectFrom(v11, v15);
    v0 = w1_0; v1 = w1_1; v2 = w1_2; v3 = w1_3; v4 = w1_4; v5 = w1_5; v6 = w1_6; v7 = w1_7; v8 = w1_8; v9 = w1_9; v10 = w1_10; v11 = w1_11; v12 = w1_12; v13 = w1_13; v14 = w1_14; v15 = w1_15;
    IntVector lo2 = IntVector.fromArray(I, T16, 64), hi2 = IntVector.fromArray(I, T16, 80);
    IntVector w2_0 = lo2.selectFrom(v0, v2), w2_2 = hi2.selectFrom(v0, v2);
    IntVector w2_1 = lo2.selectFrom(v1, v3), w2_3 = hi2.selectFrom(v1, v3);
    IntVector w2_4 = lo2.selectFrom(v4, v6), w2_6 = hi2.selectFrom(v4, v6);
    IntVector w2_5 = lo2.selectFrom(v5, v7), w2_7 = hi2.selectFrom(v5, v7);
    IntVector w2_8 = lo2.selectFrom(v8, v10), w2_10 = hi2.selectFrom(v8, v10);
    IntVector w2_9 = lo2.selectFrom(v9, v11), w2_11 = hi2.selectFrom(v9, v11);
    IntVector w2_12 = lo2.selectFrom(v12, v14), w2_14 = hi2.selectFrom(v12, v14);
    IntVector w2_13 = lo2.selectFrom(v13, v15), w2_15 = hi2.selectFrom(v13, v15);
    v0 = w2_0; v1 = w2_1; v2 = w2_2; v3 = w2_3; v4 = w2_4; v5 = w2_5; v6 = w2_6; v7 = w2_7; v8 = w2_8; v9 = w2_9; v10 = w2_10; v11 = w2_11; v12 = w2_12; v13 = w2_13; v14 = w2_14; v15 = w2_15;
    IntVector lo3 = IntVector.fromArray(I, T16, 96), hi3 = IntVector.fromArray(I, T16, 112);
    IntVector w3_0 = lo3.selectFrom(v0, v1), w3_1 = hi3.selectFrom(v0, v1);
    IntVector w3_2 = lo3.selectFrom(v2, v3), w3_3 = hi3.selectFrom(v2, v3);
    IntVector w3_4 = lo3.selectFrom(v4, v5), w3_5 = hi3.selectFrom(v4, v5);
    IntVector w3_6 = lo3.selectFrom(v6, v7), w3_7 = hi3.selectFrom(v6, v7);
    IntVector w3_8 = lo3.selectFrom(v8, v9), w3_9 = hi3.selectFrom(v8, v9);
    IntVector w3_10 = lo3.selectFrom(v10, v11), w3_11 = hi3.selectFrom(v10, v11);
    IntVector w3_12 = lo3.selectFrom(v12, v13), w3_13 = hi3.selectFrom(v12, v13);
    IntVector w3_14 = lo3.selectFrom(v14, v15), w3_15 = hi3.selectFrom(v14, v15);
    v0 = w3_0; v1 = w3_1; v2 = w3_2; v3 = w3_3; v4 = w3_4; v5 = w3_5; v6 = w3_6; v7 = w3_7; v8 = w3_8; v9 = w3_9; v10 = w3_10; v11 = w3_11; v12 = w3_12; v13 = w3_13; v14 = w3_14; v15 = w3_15;
    v0.reinterpretAsFloats().intoArray(dst, d + 0 * 12);
    v1.reinterpretAsFloats().intoArray(dst, d + 1 * 12);
    v2.reinterpretAsFloats().intoArray(dst, d + 2 * 12);
    v3.reinterpretAsFloats().intoArray(dst, d + 3 * 12);
    v4.reinterpretAsFloats().intoArray(dst, d + 4 * 12);
    v5.reinterpretAsFloats().intoArray(dst, d + 5 * 12);
    v6.reinterpretAsFloats().intoArray(dst, d + 6 * 12);
    v7.reinterpretAsFloats().intoArray(dst, d + 7 * 12);
    v8.reinterpretAsFloats().intoArray(dst, d + 8 * 12);
    v9.reinterpretAsFloats().intoArray(dst, d + 9 * 12);
    v10.reinterpretAsFloats().intoArray(dst, d + 10 * 12);
    v11.reinterpretAsFloats().intoArray(dst, d + 11 * 12);
    v12.reinterpretAsFloats().intoArray(dst, d + 12 * 12);
    v13.reinterpretAsFloats().intoArray(dst, d + 13 * 12);
    v14.reinterpretAsFloats().intoArray(dst, d + 14 * 12);
    v15.reinterpretAsFloats().intoArray(dst, d + 15 * 12);
  }
}
