package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** I8 (int8) as a tensor dtype: storage, creation, copies, conversions, equality, printing, bulk I/O. */
class Int8DTypeTest {
  static final byte[] VALUES = {-128, -1, 0, 1, 37, 127};

  @Test
  void dtypeProperties() {
    assertEquals("int8", DType.I8.torchName());
    assertEquals(1, DType.I8.itemSize());
    assertFalse(DType.I8.isFloatingPoint());
    assertFalse(DType.I8.isHalf());
    // torch.promote_types: int8 with a wider int or any float gives the other; with bool gives int8
    assertEquals(DType.I32, DType.promote(DType.I8, DType.I32));
    assertEquals(DType.I64, DType.promote(DType.I64, DType.I8));
    assertEquals(DType.F32, DType.promote(DType.I8, DType.F32));
    assertEquals(DType.BF16, DType.promote(DType.I8, DType.BF16));
    assertEquals(DType.I8, DType.promote(DType.BOOL, DType.I8));
  }

  @Test
  void creationAndStorage() {
    Tensor z = Tensor.zeros(DType.I8, 2, 3);
    assertEquals(DType.I8, z.dtype());
    assertArrayEquals(new byte[6], z.storage().int8s());
    Tensor f = Tensor.full(-5, DType.I8, 4);
    assertArrayEquals(new long[] {-5, -5, -5, -5}, f.toLongArray());
    Tensor t = Tensor.of(VALUES, 2, 3);
    assertArrayEquals(new int[] {2, 3}, t.shape());
    assertArrayEquals(VALUES, t.storage().int8s());
    assertNotSame(VALUES, t.storage().int8s());
    byte[] mine = VALUES.clone();
    assertSame(mine, TensorData.wrapInt8(mine, 6).storage().int8s());
    assertEquals(-128.0, Tensor.of(new byte[] {-128}).reshape().item());
  }

  @Test
  void conversionsBothWays() {
    Tensor t = Tensor.of(VALUES);
    assertArrayEquals(new float[] {-128, -1, 0, 1, 37, 127}, t.to(DType.F32).toFloatArray());
    assertArrayEquals(new long[] {-128, -1, 0, 1, 37, 127}, t.to(DType.I64).toLongArray());
    // float -> int8 truncates toward zero, as torch's .to(torch.int8)
    Tensor back = Tensor.of(new float[] {-128f, -1.7f, 0.4f, 1.9f, 37f, 127f}).to(DType.I8);
    assertEquals(DType.I8, back.dtype());
    assertArrayEquals(new byte[] {-128, -1, 0, 1, 37, 127}, back.storage().int8s());
    Tensor copy = t.cloneContiguous();
    assertEquals(DType.I8, copy.dtype());
    assertArrayEquals(VALUES, copy.storage().int8s());
    // a strided view copies element by element
    Tensor col = Tensor.of(VALUES, 2, 3).transpose(0, 1).contiguous();
    assertArrayEquals(new byte[] {-128, 1, -1, 37, 0, 127}, col.storage().int8s());
  }

  @Test
  void equality() {
    Tensor a = Tensor.of(VALUES);
    Tensor b = Tensor.of(new byte[] {-128, -1, 0, 2, 37, 127});
    Tensor eq = a.eq(b);
    assertEquals(DType.BOOL, eq.dtype());
    assertArrayEquals(new byte[] {1, 1, 1, 0, 1, 1}, eq.storage().bools());
    assertArrayEquals(new byte[] {1, 1, 1, 1, 1, 1}, a.eq(Tensor.of(VALUES)).storage().bools());
  }

  @Test
  void printsLikeTorch() {
    assertEquals("tensor([-128,   -1,    0,    1,   37,  127], dtype=torch.int8)", Tensor.of(VALUES).toString());
  }

  @Test
  void bulkIoThroughTensorData() {
    Tensor t = Tensor.of(VALUES);
    ByteBuffer buf = ByteBuffer.allocate(6).order(ByteOrder.LITTLE_ENDIAN);
    TensorData.read(t, 0, 6, buf);
    assertArrayEquals(VALUES, buf.array());
    Tensor dst = Tensor.zeros(DType.I8, 6);
    TensorData.write(buf, dst, 0, 6);
    assertArrayEquals(VALUES, dst.storage().int8s());
  }
}
