package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * The tiled attention path takes a float mask that is a view into a larger tensor (at a storage offset) and gives
 * its gradient to that tensor, as a copy of the mask gets it (it indexed its gradient from the view's offset and
 * overran it).
 */
class AttentionMaskViewTest {
  @Test
  void aMaskViewAtAnOffsetGetsTheGradientItsCopyGets() {
    for (DType dt : new DType[] {DType.F64, DType.F32}) {
      Generator g = new Generator(3);
      Tensor q = Tensor.randn(g, 2, 6, 4).to(dt);
      Tensor k = Tensor.randn(g, 2, 7, 4).to(dt);
      Tensor v = Tensor.randn(g, 2, 7, 3).to(dt);
      Tensor big = Tensor.randn(g, 3, 6, 7).to(dt).requiresGrad(true);
      Tensor copy = big.detach().select(0, 1).clone().requiresGrad(true);
      Tensor up = Tensor.randn(g, 2, 6, 3).to(dt);
      Attention.Kernel tiled = Attention.Kernel.tiled(2, 3);
      Attention.scaledDotProductAttention(q, k, v, big.select(0, 1), 0, false, null, Attention.NO_WINDOW, null, tiled)
          .mul(up).sum().backward();
      Tensor want = Attention.scaledDotProductAttention(q, k, v, copy, 0, false, null, Attention.NO_WINDOW, null,
          tiled);
      want.mul(up).sum().backward();
      assertArrayEquals(copy.grad().to(DType.F64).toDoubleArray(), big.grad().select(0, 1).to(DType.F64).toDoubleArray(),
          dt + " mask gradient");
      assertArrayEquals(new double[6 * 7], big.grad().select(0, 0).to(DType.F64).toDoubleArray(), "untouched rows");
    }
  }
}
