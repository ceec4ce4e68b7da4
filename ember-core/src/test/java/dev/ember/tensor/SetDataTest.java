package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.testing.FakeDevice;
import org.junit.jupiter.api.Test;

/** {@link Tensor#setData}: a leaf keeps its identity and flags while its data moves to another device or dtype. */
class SetDataTest {
  @Test
  void aLeafMovesToTheDeviceKeepingIdentityFlagsAndGradient() {
    Tensor p = Tensor.of(new float[] {1, 2, 3}, 3).requiresGrad(true);
    p.mul(2).sum().backward();
    Tensor before = p;
    p.setData(p.detach().to(FakeDevice.DEVICE));
    assertSame(before, p);
    assertEquals(FakeDevice.DEVICE, p.device());
    assertTrue(p.requiresGrad() && p.isLeaf());
    assertEquals(FakeDevice.DEVICE, p.grad().device(), "the gradient moves with its parameter");
    assertArrayEquals(new float[] {2, 2, 2}, p.grad().toFloatArray());
    p.mul(3).sum().backward(); // accumulates on the device
    assertArrayEquals(new float[] {5, 5, 5}, p.grad().toFloatArray());
    p.setData(Tensor.of(new double[] {4, 5, 6}, 3));
    assertEquals(DType.F64, p.dtype());
    assertEquals(DType.F64, p.grad().dtype());
    assertEquals(Device.CPU, p.grad().device());
  }

  @Test
  void anotherShapeOrANonLeafIsRefused() {
    Tensor p = Tensor.zeros(DType.F32, 2, 3);
    TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> p.setData(Tensor.zeros(DType.F32, 3, 2)));
    assertEquals("set_data: shape of the new data differs: self=[2, 3], src=[3, 2]", e.getMessage());
    Tensor y = Tensor.ones(DType.F32, 2).requiresGrad(true).mul(2);
    IllegalStateException s = assertThrows(IllegalStateException.class, () -> y.setData(Tensor.zeros(DType.F32, 2)));
    assertEquals("set_data: tensor [2] is not a leaf (produced by mul); hint: detach() it first", s.getMessage());
  }
}
