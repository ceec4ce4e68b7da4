package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.StridedView;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * index_select and index_add along dim 0 of contiguous tensors (an embedding's lookup and backward) take whole-row
 * paths: against element-by-element references, with repeated indices, with offsets, and bitwise the same on one
 * and two threads (index_add's rows split by owner, each row's additions in index order).
 */
class IndexRowsTest {
  private static final CpuBackend CPU = (CpuBackend) Device.CPU.backend();

  @Test
  void indexSelectCopiesWholeRows() {
    for (DType dt : new DType[] {DType.F32, DType.F64, DType.I64}) {
      for (int[] size : new int[][] {{7, 3, 5, 4}, {300, 130, 2000, 1}}) { // {rows, row, count, offset rows}
        int rows = size[0], row = size[1], count = size[2], skip = size[3];
        Tensor base = Tensor.randn(new Generator(3), rows + skip, row).to(dt);
        Tensor x = base.narrow(0, skip, rows); // a contiguous view at an offset
        long[] idx = indices(count, rows, 5);
        Tensor out = Tensor.empty(dt, count, row);
        CPU.indexSelect(x, 0, Tensor.of(idx, count), out);
        double[] xv = x.toDoubleArray();
        double[] ov = out.toDoubleArray();
        for (int i = 0; i < count; i++) {
          for (int k = 0; k < row; k++) {
            assertEquals(xv[(int) idx[i] * row + k], ov[i * row + k], dt + " row " + i + " element " + k);
          }
        }
      }
    }
  }

  @Test
  void indexAddAddsRowsInIndexOrder() {
    int rows = 97, row = 300, count = 1500;
    Tensor src = Tensor.randn(new Generator(4), count, row);
    long[] idx = indices(count, rows, 6);
    Tensor out = Tensor.randn(new Generator(5), rows, row);
    float[] want = out.toFloatArray();
    float[] s = src.toFloatArray();
    for (int i = 0; i < count; i++) { // the serial loop's order: float adds, in index order
      for (int k = 0; k < row; k++) want[(int) idx[i] * row + k] += s[i * row + k];
    }
    CPU.indexAdd(out, 0, Tensor.of(idx, count), src);
    assertArrayEquals(want, out.toFloatArray());
  }

  @Test
  void indexAddIsTheSameOnOneAndTwoThreads() {
    int old = Parallel.threads();
    try {
      float[][] got = new float[2][];
      for (int threads = 1; threads <= 2; threads++) {
        Parallel.setThreads(threads);
        Tensor src = Tensor.randn(new Generator(7), 4096, 64);
        Tensor out = Tensor.zeros(1000, 64);
        CPU.indexAdd(out, 0, Tensor.of(indices(4096, 1000, 8), 4096), src);
        got[threads - 1] = out.toFloatArray();
      }
      int[] a = new int[got[0].length];
      int[] b = new int[got[1].length];
      for (int i = 0; i < a.length; i++) {
        a[i] = Float.floatToRawIntBits(got[0][i]);
        b[i] = Float.floatToRawIntBits(got[1][i]);
      }
      assertArrayEquals(a, b);
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void stridedIndexAddStillAddsAlongOtherDims() {
    Tensor out = Tensor.zeros(2, 3);
    Tensor src = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2);
    CPU.indexAdd(StridedView.transpose(out, 0, 1), 0, Tensor.of(new long[] {2, 2}, 2), StridedView.transpose(src, 0, 1));
    assertArrayEquals(new float[] {0, 0, 3, 0, 0, 7}, out.toFloatArray());
  }

  /**
   * indexAddIntoZeros (an embedding's backward: the zero-fill and the additions in one pass per range of rows) over
   * an out of garbage: bitwise the fill and indexAdd it stands for, on one and two threads, with repeated indices,
   * -0.0 sources (0 + -0.0 is +0.0, not a copy's -0.0), an offset out, several ranges (1000 x 600 floats) and one.
   */
  @Test
  void indexAddIntoZerosIsTheFillAndIndexAdd() {
    int old = Parallel.threads();
    try {
      for (int[] size : new int[][] {{1000, 600, 3000}, {13, 7, 40}}) { // {rows, row, count}
        int rows = size[0], row = size[1], count = size[2];
        Tensor src = Tensor.randn(new Generator(9), count, row);
        float[] sv = src.toFloatArray();
        for (int i = 0; i < sv.length; i += 7) sv[i] = -0.0f;
        src = Tensor.of(sv, count, row);
        Tensor index = Tensor.of(indices(count, rows, 10), count);
        Tensor want = Tensor.randn(new Generator(11), rows, row);
        CPU.fill(want, 0.0);
        CPU.indexAdd(want, 0, index, src);
        int[] wantBits = bits(want.toFloatArray());
        for (int threads = 1; threads <= 2; threads++) {
          Parallel.setThreads(threads);
          Tensor base = Tensor.randn(new Generator(12), rows + 2, row); // garbage to overwrite
          Tensor out = base.narrow(0, 2, rows);
          CPU.indexAddIntoZeros(out, index, src);
          assertArrayEquals(wantBits, bits(out.toFloatArray()), threads + " threads, " + rows + " rows");
        }
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  private static int[] bits(float[] f) {
    int[] b = new int[f.length];
    for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
    return b;
  }

  /** count indices in [0, rows), many repeated, from a fixed seed. */
  private static long[] indices(int count, int rows, long seed) {
    java.util.Random r = new java.util.Random(seed);
    long[] idx = new long[count];
    for (int i = 0; i < count; i++) idx[i] = r.nextInt(rows);
    return idx;
  }
}
