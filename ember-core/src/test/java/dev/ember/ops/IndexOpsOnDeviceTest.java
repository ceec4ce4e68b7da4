package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.FakeDevice;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * The index ops on the fake device with their indices moved there, as a user calls them: values and gradients to
 * the CPU's bits (the op table's check allows 1e-6), and an index out of range named as on the CPU.
 */
class IndexOpsOnDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  /** fn on (x, index) on the CPU and on the fake device: the same values and the same gradient of x. */
  private static void check(String what, Tensor x, Tensor index, Function<List<Tensor>, Tensor> fn) {
    Tensor xc = x.detach().clone().requiresGrad(true);
    Tensor xd = x.detach().to(FAKE).requiresGrad(true);
    Tensor out = fn.apply(List.of(xc, index));
    Tensor dout = fn.apply(List.of(xd, index.to(FAKE)));
    assertEquals(FAKE, dout.device(), what);
    Assertions.assertClose(Arr.of(out), dout.cpu(), 0, 0, what + " values");
    if (!out.dtype().isFloatingPoint()) return;
    Tensor w = Tensor.rand(new Generator(9), out.shapeRef());
    out.mul(w).sum().backward();
    dout.mul(w.to(FAKE)).sum().backward();
    assertEquals(FAKE, xd.grad().device(), what);
    Assertions.assertClose(Arr.of(xc.grad()), xd.grad().cpu(), 0, 0, what + " gradient");
  }

  private static Tensor data(int... shape) {
    return Tensor.randn(new Generator(3), shape);
  }

  @Test
  void gatherScatterAndIndexSelectOnTheDevice() {
    Tensor idx = Tensor.of(new long[] {0, 3, 2, 2, 1, 0}, 3, 2);
    check("gather", data(4, 2), idx, l -> l.get(0).gather(0, l.get(1)));
    check("take_along_dim", data(4, 2), idx, l -> IndexOps.takeAlongDim(l.get(0), l.get(1), 0));
    Tensor sidx = Tensor.of(new long[] {0, 1, 2, 0, 2, 0, 1, 1}, 2, 4);
    Tensor src = data(2, 4).mul(3);
    check("scatter", data(3, 4), sidx, l -> IndexOps.scatter(l.get(0), 0, l.get(1), src.to(l.get(0).device()), false));
    check("scatter_add", data(3, 4), sidx,
        l -> IndexOps.scatterAdd(l.get(0), 0, l.get(1), src.to(l.get(0).device())));
    Tensor sel = Tensor.of(new long[] {0, 2, 0}, 3);
    check("index_select", data(3, 5), sel, l -> IndexOps.indexSelect(l.get(0), 0, l.get(1)));
    check("embedding", data(5, 3), Tensor.of(new long[] {4, 0, 1, 1, 3, 4}, 2, 3),
        l -> IndexOps.embedding(l.get(0), l.get(1)));
    check("one_hot", data(1), Tensor.of(new long[] {2, 0, 1}, 3), l -> IndexOps.oneHot(l.get(1), 4));
  }

  @Test
  void maskedOpsOnTheDevice() {
    Tensor mask = Tensor.of(new boolean[] {true, false, false, true, true, false}).reshape(2, 3);
    check("masked_fill", data(2, 3), mask, l -> IndexOps.maskedFill(l.get(0), l.get(1), -1.5));
    check("masked_select", data(2, 3), mask, l -> IndexOps.maskedSelect(l.get(0), l.get(1)));
  }

  @Test
  void anIndexOutOfRangeOnTheDeviceIsNamedAsOnTheCpu() {
    Tensor x = data(4, 2).to(FAKE);
    Tensor bad = Tensor.of(new long[] {0, 4}, 2, 1).to(FAKE);
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> x.gather(0, bad));
    assertEquals("gather: index 4 out of range [0, 4) for dim 0 at flat position 1: x=[4, 2], index=[2, 1]",
        e.getMessage());
    assertEquals(DType.F32, x.dtype());
  }
}
