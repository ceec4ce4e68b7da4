package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class TensorDataTest {
  @Test
  void wrapHandsTheArrayOver() {
    float[] a = {1, 2, 3, 4, 5, 6};
    Tensor t = TensorData.wrap(a, 2, 3);
    assertArrayEquals(new int[] {2, 3}, t.shape());
    a[0] = 9;
    assertEquals(9f, t.toFloatArray()[0]);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TensorData.wrap(a, 4, 2));
    assertEquals(true, e.getMessage().contains("shape [4, 2] needs 8 elements, got 6"), e.getMessage());
  }

  @Test
  void byteBuffersFromTheirPositionInTheirOrderLeftWhereTheyWere() {
    Tensor t = Tensor.of(new float[] {0, 1, 2, 3, 4, 5}, 2, 3).select(0, 1); // offset 3 in its storage
    ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.BIG_ENDIAN).position(4);
    TensorData.read(t, 1, 2, b);
    assertEquals(4, b.position());
    assertEquals(4f, b.getFloat(4));
    assertEquals(5f, b.getFloat(8));
    Tensor u = Tensor.empty(DType.F32, 3);
    TensorData.write(b, u, 1, 2);
    assertArrayEquals(new float[] {0, 4, 5}, u.toFloatArray());
    Tensor bools = Tensor.empty(DType.BOOL, 2);
    TensorData.write(ByteBuffer.wrap(new byte[] {7, 1, 0}).position(1), bools, 0, 2);
    assertArrayEquals(new long[] {1, 0}, bools.toLongArray());
  }

  @Test
  void segmentsCopiesAndRows() {
    MemorySegment s = MemorySegment.ofArray(new long[] {10, 20, 30});
    Tensor t = Tensor.empty(DType.I64, 3);
    TensorData.write(s, ValueLayout.JAVA_LONG, 8, t, 0, 2);
    assertArrayEquals(new long[] {20, 30, 0}, t.toLongArray());
    Tensor dst = Tensor.empty(DType.I64, 4);
    TensorData.copy(t, 0, dst, 2, 2);
    assertArrayEquals(new long[] {0, 0, 20, 30}, dst.toLongArray());
    Tensor rows = Tensor.of(new long[] {1, 2, 3, 4, 5, 6}, 3, 2);
    Tensor picked = Tensor.empty(DType.I64, 2, 2);
    TensorData.gatherRows(rows, new int[] {2, 0}, picked);
    assertArrayEquals(new long[] {5, 6, 1, 2}, picked.toLongArray());
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> TensorData.copy(rows.t(), 0, dst, 0, 1));
    assertEquals("TensorData: the tensor must be contiguous, got shape [2, 3] strides [1, 2]", e.getMessage());
  }
}
