package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.UnaryOp;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * linear's float32 bias as GEMM's starting C: a contiguous bias is copied row by row (CpuBackend.copy's broadcast
 * row), any other through the strided copy; both must give every row the bias, so the outputs have the same bits.
 */
class LinearBiasTest {
  @Test
  void aContiguousBiasAtAnOffsetGivesTheBitsOfTheBroadcastCopy() {
    Generator g = new Generator(3);
    int in = 37;
    int out = 21;
    float[] values = Tensor.randn(g, out).toFloatArray();
    float[] everyOther = new float[2 * out + 2];
    for (int j = 0; j < out; j++) everyOther[2 + 2 * j] = values[j];
    Tensor strided = Tensor.of(everyOther).narrow(0, 2, 2 * out).reshape(out, 2).select(1, 0); // stride 2, offset 2
    float[] packed = new float[out + 9];
    System.arraycopy(values, 0, packed, 9, out);
    Tensor contiguous = Tensor.of(packed).narrow(0, 9, out);
    assertFalse(strided.isContiguous());
    assertTrue(contiguous.isContiguous());
    for (int m : new int[] {1, 3, 40}) {
      Tensor x = Tensor.randn(g, m, in);
      Tensor w = Tensor.randn(g, out, in);
      assertArrayEquals(LinalgOps.linear(x, w, strided).toFloatArray(),
          LinalgOps.linear(x, w, contiguous).toFloatArray(), "linear, m=" + m);
      assertArrayEquals(LinalgOps.linearEpilogue(x, w, strided, UnaryOp.RELU, 0, null).toFloatArray(),
          LinalgOps.linearEpilogue(x, w, contiguous, UnaryOp.RELU, 0, null).toFloatArray(), "linear + relu, m=" + m);
    }
  }
}
