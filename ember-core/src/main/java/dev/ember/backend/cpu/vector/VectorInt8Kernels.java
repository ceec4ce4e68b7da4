package dev.ember.backend.cpu.vector;

import dev.ember.backend.cpu.Int8Kernels;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Int8Kernels} on the Vector API: each step loads L bytes of a row (L = int lanes of the preferred shape,
 * 16 on AVX-512), widens them to L ints (B2I: one vpmovsxbd) and multiply-adds in int32, which is exact. Four
 * rows of A times four rows of B per step: 8 widenings feed 16 multiply-adds into 16 accumulators, and each
 * loaded B vector is used by four A rows. Leftover rows and columns take the 1 x 4 and 1 x 1 paths; the k tail
 * is scalar.
 */
public final class VectorInt8Kernels implements Int8Kernels {
  private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
  private static final int L = I.length();
  private static final VectorSpecies<Byte> B = VectorSpecies.of(byte.class, VectorShape.forBitSize(L * 8));

  public VectorInt8Kernels() {}

  private static IntVector load(byte[] x, int off) {
    return (IntVector) ByteVector.fromArray(B, x, off).convertShape(VectorOperators.B2I, I, 0);
  }

  @Override
  public void dotBlock(byte[] a, int row0, int rows, byte[] b, int j0, int j1, int k, int[] acc, int ldAcc) {
    int r = 0;
    for (; r + 4 <= rows; r += 4) {
      int j = j0;
      for (; j + 4 <= j1; j += 4) tile4x4(a, (row0 + r) * k, b, j * k, k, acc, r * ldAcc + (j - j0), ldAcc);
      for (; j < j1; j++) {
        for (int rr = r; rr < r + 4; rr++) acc[rr * ldAcc + (j - j0)] = dot(a, (row0 + rr) * k, b, j * k, k);
      }
    }
    for (; r < rows; r++) {
      int j = j0;
      for (; j + 4 <= j1; j += 4) tile1x4(a, (row0 + r) * k, b, j * k, k, acc, r * ldAcc + (j - j0));
      for (; j < j1; j++) acc[r * ldAcc + (j - j0)] = dot(a, (row0 + r) * k, b, j * k, k);
    }
  }

  private static void tile4x4(byte[] a, int ao, byte[] b, int bo, int k, int[] acc, int co, int ld) {
    IntVector c00 = IntVector.zero(I), c01 = c00, c02 = c00, c03 = c00;
    IntVector c10 = c00, c11 = c00, c12 = c00, c13 = c00;
    IntVector c20 = c00, c21 = c00, c22 = c00, c23 = c00;
    IntVector c30 = c00, c31 = c00, c32 = c00, c33 = c00;
    int bound = k - L + 1;
    int p = 0;
    for (; p < bound; p += L) {
      IntVector b0 = load(b, bo + p), b1 = load(b, bo + k + p), b2 = load(b, bo + 2 * k + p), b3 = load(b, bo + 3 * k + p);
      IntVector a0 = load(a, ao + p);
      c00 = a0.mul(b0).add(c00); c01 = a0.mul(b1).add(c01); c02 = a0.mul(b2).add(c02); c03 = a0.mul(b3).add(c03);
      IntVector a1 = load(a, ao + k + p);
      c10 = a1.mul(b0).add(c10); c11 = a1.mul(b1).add(c11); c12 = a1.mul(b2).add(c12); c13 = a1.mul(b3).add(c13);
      IntVector a2 = load(a, ao + 2 * k + p);
      c20 = a2.mul(b0).add(c20); c21 = a2.mul(b1).add(c21); c22 = a2.mul(b2).add(c22); c23 = a2.mul(b3).add(c23);
      IntVector a3 = load(a, ao + 3 * k + p);
      c30 = a3.mul(b0).add(c30); c31 = a3.mul(b1).add(c31); c32 = a3.mul(b2).add(c32); c33 = a3.mul(b3).add(c33);
    }
    store(c00, a, ao, b, bo, p, k, acc, co);
    store(c01, a, ao, b, bo + k, p, k, acc, co + 1);
    store(c02, a, ao, b, bo + 2 * k, p, k, acc, co + 2);
    store(c03, a, ao, b, bo + 3 * k, p, k, acc, co + 3);
    store(c10, a, ao + k, b, bo, p, k, acc, co + ld);
    store(c11, a, ao + k, b, bo + k, p, k, acc, co + ld + 1);
    store(c12, a, ao + k, b, bo + 2 * k, p, k, acc, co + ld + 2);
    store(c13, a, ao + k, b, bo + 3 * k, p, k, acc, co + ld + 3);
    store(c20, a, ao + 2 * k, b, bo, p, k, acc, co + 2 * ld);
    store(c21, a, ao + 2 * k, b, bo + k, p, k, acc, co + 2 * ld + 1);
    store(c22, a, ao + 2 * k, b, bo + 2 * k, p, k, acc, co + 2 * ld + 2);
    store(c23, a, ao + 2 * k, b, bo + 3 * k, p, k, acc, co + 2 * ld + 3);
    store(c30, a, ao + 3 * k, b, bo, p, k, acc, co + 3 * ld);
    store(c31, a, ao + 3 * k, b, bo + k, p, k, acc, co + 3 * ld + 1);
    store(c32, a, ao + 3 * k, b, bo + 2 * k, p, k, acc, co + 3 * ld + 2);
    store(c33, a, ao + 3 * k, b, bo + 3 * k, p, k, acc, co + 3 * ld + 3);
  }

  /** Lane sum of one accumulator plus the scalar k tail from {@code p}, into {@code acc[at]}. */
  private static void store(IntVector c, byte[] a, int ao, byte[] b, int bo, int p, int k, int[] acc, int at) {
    int s = c.reduceLanes(VectorOperators.ADD);
    for (int q = p; q < k; q++) s += a[ao + q] * b[bo + q];
    acc[at] = s;
  }

  private static void tile1x4(byte[] a, int ao, byte[] b, int bo, int k, int[] acc, int co) {
    IntVector c0 = IntVector.zero(I), c1 = c0, c2 = c0, c3 = c0;
    int bound = k - L + 1;
    int p = 0;
    for (; p < bound; p += L) {
      IntVector a0 = load(a, ao + p);
      c0 = a0.mul(load(b, bo + p)).add(c0);
      c1 = a0.mul(load(b, bo + k + p)).add(c1);
      c2 = a0.mul(load(b, bo + 2 * k + p)).add(c2);
      c3 = a0.mul(load(b, bo + 3 * k + p)).add(c3);
    }
    store(c0, a, ao, b, bo, p, k, acc, co);
    store(c1, a, ao, b, bo + k, p, k, acc, co + 1);
    store(c2, a, ao, b, bo + 2 * k, p, k, acc, co + 2);
    store(c3, a, ao, b, bo + 3 * k, p, k, acc, co + 3);
  }

  private static int dot(byte[] a, int ao, byte[] b, int bo, int k) {
    IntVector c = IntVector.zero(I);
    int bound = k - L + 1;
    int p = 0;
    for (; p < bound; p += L) c = load(a, ao + p).mul(load(b, bo + p)).add(c);
    int s = c.reduceLanes(VectorOperators.ADD);
    for (; p < k; p++) s += a[ao + p] * b[bo + p];
    return s;
  }
}
