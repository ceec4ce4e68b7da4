package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** Casts: values as Java's conversions, and gradients that flow back between float types only. */
class CastTest {
  @Test
  void gradientConvertsBackToTheSourceType() {
    Tensor x = Tensor.of(new double[] {1.5, -2.25, 3}).requiresGrad(true);
    Tensor y = x.to(DType.F32).mul(Tensor.of(new float[] {2, 3, 4}));
    y.sum().backward();
    assertEquals(DType.F64, x.grad().dtype());
    assertArrayEquals(new double[] {2, 3, 4}, x.grad().toDoubleArray());
  }

  @Test
  void castToIntegerTruncatesAndCutsTheGraph() {
    Tensor x = Tensor.of(new float[] {1.7f, -2.7f, 0.2f}).requiresGrad(true);
    Tensor i = x.to(DType.I64);
    assertArrayEquals(new long[] {1, -2, 0}, i.toLongArray());
    assertFalse(i.requiresGrad());
    assertArrayEquals(new double[] {1, 1, 1}, x.to(DType.BOOL).toDoubleArray());
  }

  @Test
  void largeInt64ValuesSurviveArithmetic() {
    long big = (1L << 53) + 1; // not representable as a double
    Tensor a = Tensor.of(new long[] {big});
    assertEquals(big + 1, a.add(Tensor.of(new long[] {1})).toLongArray()[0]);
  }
}
