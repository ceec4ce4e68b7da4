package dev.ember.backend.cpu.vector;

import jdk.incubator.vector.FloatVector;
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

  private Transpose16() {}

  /** Index vectors of the 4 butterfly stages of a 16 x 16 transpose (see {@link #transpose}): lo then hi per stage. */
  private static final float[] T16 = transposeIndexes();

  private static float[] transposeIndexes() {
    float[] idx = new float[8 * 16];
    int s = 0;
    for (int d = 8; d >= 1; d >>= 1, s++) {
      for (int c = 0; c < 16; c++) {
        idx[(2 * s) * 16 + c] = (c & d) == 0 ? c : 16 + c - d;
        idx[(2 * s + 1) * 16 + c] = (c & d) == 0 ? c + d : 16 + c;
      }
    }
    return idx;
  }

  /** dst[d..d+16] = v, or v + beta dst[d..d+16] for beta != 0 (as BLAS: beta 0 ignores what was there, NaN too). */
  private static void store16(FloatVector v, float[] dst, int d, float beta) {
    if (beta == 0) v.intoArray(dst, d);
    else if (beta == 1) v.add(FloatVector.fromArray(S, dst, d)).intoArray(dst, d);
    else FloatVector.fromArray(S, dst, d).mul(beta).add(v).intoArray(dst, d);
  }

  /**
   * Transposes the 16 x 16 block of b at rows r..r+15 (ldb apart), columns p..p+15 into dst: row t
   * of the result (b's column p + t) lands at dst[d + t * ldd ..+16], added to {@code beta} times
   * what is there unless beta is 0 (see {@link #store16}). Four butterfly stages of
   * two-vector lane selections, each swapping one bit of the row index with the same bit of the
   * column index; 16 loads, 64 selections and 16 stores for 256 elements, where the scalar
   * transpose does 256 loads and stores.
   */
  public static void transpose(float[] b, int r, int ldb, float[] dst, int d, int ldd, float beta) {
    FloatVector v0 = FloatVector.fromArray(S, b, r + 0 * ldb);
    FloatVector v1 = FloatVector.fromArray(S, b, r + 1 * ldb);
    FloatVector v2 = FloatVector.fromArray(S, b, r + 2 * ldb);
    FloatVector v3 = FloatVector.fromArray(S, b, r + 3 * ldb);
    FloatVector v4 = FloatVector.fromArray(S, b, r + 4 * ldb);
    FloatVector v5 = FloatVector.fromArray(S, b, r + 5 * ldb);
    FloatVector v6 = FloatVector.fromArray(S, b, r + 6 * ldb);
    FloatVector v7 = FloatVector.fromArray(S, b, r + 7 * ldb);
    FloatVector v8 = FloatVector.fromArray(S, b, r + 8 * ldb);
    FloatVector v9 = FloatVector.fromArray(S, b, r + 9 * ldb);
    FloatVector v10 = FloatVector.fromArray(S, b, r + 10 * ldb);
    FloatVector v11 = FloatVector.fromArray(S, b, r + 11 * ldb);
    FloatVector v12 = FloatVector.fromArray(S, b, r + 12 * ldb);
    FloatVector v13 = FloatVector.fromArray(S, b, r + 13 * ldb);
    FloatVector v14 = FloatVector.fromArray(S, b, r + 14 * ldb);
    FloatVector v15 = FloatVector.fromArray(S, b, r + 15 * ldb);
    FloatVector lo0 = FloatVector.fromArray(S, T16, 0), hi0 = FloatVector.fromArray(S, T16, 16);
    FloatVector w0_0 = lo0.selectFrom(v0, v8), w0_8 = hi0.selectFrom(v0, v8);
    FloatVector w0_1 = lo0.selectFrom(v1, v9), w0_9 = hi0.selectFrom(v1, v9);
    FloatVector w0_2 = lo0.selectFrom(v2, v10), w0_10 = hi0.selectFrom(v2, v10);
    FloatVector w0_3 = lo0.selectFrom(v3, v11), w0_11 = hi0.selectFrom(v3, v11);
    FloatVector w0_4 = lo0.selectFrom(v4, v12), w0_12 = hi0.selectFrom(v4, v12);
    FloatVector w0_5 = lo0.selectFrom(v5, v13), w0_13 = hi0.selectFrom(v5, v13);
    FloatVector w0_6 = lo0.selectFrom(v6, v14), w0_14 = hi0.selectFrom(v6, v14);
    FloatVector w0_7 = lo0.selectFrom(v7, v15), w0_15 = hi0.selectFrom(v7, v15);
    v0 = w0_0; v1 = w0_1; v2 = w0_2; v3 = w0_3; v4 = w0_4; v5 = w0_5; v6 = w0_6; v7 = w0_7; v8 = w0_8; v9 = w0_9; v10 = w0_10; v11 = w0_11; v12 = w0_12; v13 = w0_13; v14 = w0_14; v15 = w0_15;
    FloatVector lo1 = FloatVector.fromArray(S, T16, 32), hi1 = FloatVector.fromArray(S, T16, 48);
    FloatVector w1_0 = lo1.selectFrom(v0, v4), w1_4 = hi1.selectFrom(v0, v4);
    FloatVector w1_1 = lo1.selectFrom(v1, v5), w1_5 = hi1.selectFrom(v1, v5);
    FloatVector w1_2 = lo1.selectFrom(v2, v6), w1_6 = hi1.selectFrom(v2, v6);
    FloatVector w1_3 = lo1.selectFrom(v3, v7), w1_7 = hi1.selectFrom(v3, v7);
    FloatVector w1_8 = lo1.selectFrom(v8, v12), w1_12 = hi1.selectFrom(v8, v12);
    FloatVector w1_9 = lo1.selectFrom(v9, v13), w1_13 = hi1.selectFrom(v9, v13);
    FloatVector w1_10 = lo1.selectFrom(v10, v14), w1_14 = hi1.selectFrom(v10, v14);
    FloatVector w1_11 = lo1.selectFrom(v11, v15), w1_15 = hi1.selectFrom(v11, v15);
    v0 = w1_0; v1 = w1_1; v2 = w1_2; v3 = w1_3; v4 = w1_4; v5 = w1_5; v6 = w1_6; v7 = w1_7; v8 = w1_8; v9 = w1_9; v10 = w1_10; v11 = w1_11; v12 = w1_12; v13 = w1_13; v14 = w1_14; v15 = w1_15;
    FloatVector lo2 = FloatVector.fromArray(S, T16, 64), hi2 = FloatVector.fromArray(S, T16, 80);
    FloatVector w2_0 = lo2.selectFrom(v0, v2), w2_2 = hi2.selectFrom(v0, v2);
    FloatVector w2_1 = lo2.selectFrom(v1, v3), w2_3 = hi2.selectFrom(v1, v3);
    FloatVector w2_4 = lo2.selectFrom(v4, v6), w2_6 = hi2.selectFrom(v4, v6);
    FloatVector w2_5 = lo2.selectFrom(v5, v7), w2_7 = hi2.selectFrom(v5, v7);
    FloatVector w2_8 = lo2.selectFrom(v8, v10), w2_10 = hi2.selectFrom(v8, v10);
    FloatVector w2_9 = lo2.selectFrom(v9, v11), w2_11 = hi2.selectFrom(v9, v11);
    FloatVector w2_12 = lo2.selectFrom(v12, v14), w2_14 = hi2.selectFrom(v12, v14);
    FloatVector w2_13 = lo2.selectFrom(v13, v15), w2_15 = hi2.selectFrom(v13, v15);
    v0 = w2_0; v1 = w2_1; v2 = w2_2; v3 = w2_3; v4 = w2_4; v5 = w2_5; v6 = w2_6; v7 = w2_7; v8 = w2_8; v9 = w2_9; v10 = w2_10; v11 = w2_11; v12 = w2_12; v13 = w2_13; v14 = w2_14; v15 = w2_15;
    FloatVector lo3 = FloatVector.fromArray(S, T16, 96), hi3 = FloatVector.fromArray(S, T16, 112);
    FloatVector w3_0 = lo3.selectFrom(v0, v1), w3_1 = hi3.selectFrom(v0, v1);
    FloatVector w3_2 = lo3.selectFrom(v2, v3), w3_3 = hi3.selectFrom(v2, v3);
    FloatVector w3_4 = lo3.selectFrom(v4, v5), w3_5 = hi3.selectFrom(v4, v5);
    FloatVector w3_6 = lo3.selectFrom(v6, v7), w3_7 = hi3.selectFrom(v6, v7);
    FloatVector w3_8 = lo3.selectFrom(v8, v9), w3_9 = hi3.selectFrom(v8, v9);
    FloatVector w3_10 = lo3.selectFrom(v10, v11), w3_11 = hi3.selectFrom(v10, v11);
    FloatVector w3_12 = lo3.selectFrom(v12, v13), w3_13 = hi3.selectFrom(v12, v13);
    FloatVector w3_14 = lo3.selectFrom(v14, v15), w3_15 = hi3.selectFrom(v14, v15);
    v0 = w3_0; v1 = w3_1; v2 = w3_2; v3 = w3_3; v4 = w3_4; v5 = w3_5; v6 = w3_6; v7 = w3_7; v8 = w3_8; v9 = w3_9; v10 = w3_10; v11 = w3_11; v12 = w3_12; v13 = w3_13; v14 = w3_14; v15 = w3_15;
    store16(v0, dst, d + 0 * ldd, beta);
    store16(v1, dst, d + 1 * ldd, beta);
    store16(v2, dst, d + 2 * ldd, beta);
    store16(v3, dst, d + 3 * ldd, beta);
    store16(v4, dst, d + 4 * ldd, beta);
    store16(v5, dst, d + 5 * ldd, beta);
    store16(v6, dst, d + 6 * ldd, beta);
    store16(v7, dst, d + 7 * ldd, beta);
    store16(v8, dst, d + 8 * ldd, beta);
    store16(v9, dst, d + 9 * ldd, beta);
    store16(v10, dst, d + 10 * ldd, beta);
    store16(v11, dst, d + 11 * ldd, beta);
    store16(v12, dst, d + 12 * ldd, beta);
    store16(v13, dst, d + 13 * ldd, beta);
    store16(v14, dst, d + 14 * ldd, beta);
    store16(v15, dst, d + 15 * ldd, beta);
  }}
