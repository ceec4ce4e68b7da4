package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * CpuBackend.copy of a row broadcast over the leading axes into a contiguous tensor (a bias expanded to [m, n], as
 * linear's starting C): small outputs take one System.arraycopy per row, large ones and rows that are not contiguous
 * take the general strided copy. Every element must be the row's element at its column, in every dtype and shape.
 */
class BroadcastRowCopyTest {
  private static final Generator G = new Generator(11);

  /** A row of n values at offset 5 of its storage (so the copy must honour the source's offset). */
  private static Tensor rowAtOffset(int n, DType dtype) {
    return Tensor.randn(G, n + 5).narrow(0, 5, n).to(dtype);
  }

  private static void assertEveryRowIs(Tensor row, Tensor out) {
    double[] want = row.toDoubleArray();
    double[] got = out.toDoubleArray();
    int n = want.length;
    assertEquals(0, got.length % n);
    for (int i = 0; i < got.length; i++) assertEquals(want[i % n], got[i], 0.0, "element " + i);
  }

  @Test
  void smallBroadcastsCopyTheRowIntoEveryRowInEveryDtype() {
    for (DType dtype : new DType[] {DType.F32, DType.F64, DType.BF16, DType.F16}) {
      Tensor row = rowAtOffset(37, dtype);
      for (int[] shape : new int[][] {{1, 37}, {3, 37}, {4, 5, 37}, {2, 1, 3, 37}}) {
        Tensor out = row.expand(shape).contiguous();
        assertEquals(dtype, out.dtype());
        assertArrayEquals(shape, out.shape());
        assertEveryRowIs(row.to(DType.F64), out.to(DType.F64));
      }
    }
    Tensor ints = Tensor.arange(7).to(DType.I64).narrow(0, 2, 5);
    assertArrayEquals(new long[] {2, 3, 4, 5, 6, 2, 3, 4, 5, 6}, ints.expand(2, 5).contiguous().toLongArray());
  }

  @Test
  void largeOrStridedRowsTakeTheGeneralCopyWithTheSameResult() {
    Tensor row = rowAtOffset(1024, DType.F32);
    Tensor large = row.expand(128, 1024).contiguous(); // 128K elements: the parallel segments
    assertEveryRowIs(row, large);
    Tensor everyOther = Tensor.randn(G, 2 * 40).reshape(40, 2).select(1, 1); // stride 2
    Tensor out = everyOther.expand(6, 40).contiguous();
    assertEveryRowIs(everyOther.contiguous(), out);
    Tensor column = Tensor.randn(G, 6, 1).expand(6, 9).contiguous(); // broadcast in the last axis: not a row
    double[] c = column.toDoubleArray();
    for (int i = 0; i < 6; i++) for (int j = 1; j < 9; j++) assertEquals(c[i * 9], c[i * 9 + j], 0.0);
  }
}
