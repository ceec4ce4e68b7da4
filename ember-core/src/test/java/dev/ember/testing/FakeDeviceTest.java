package dev.ember.testing;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.StridedView;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

/** The fake device is found, keeps its data out of host reach, and computes what the CPU computes. */
class FakeDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  @Test
  void isFoundThroughItsProviderWithTwoDevices() {
    assertTrue(FAKE.isAvailable());
    assertTrue(FakeDevice.OTHER.isAvailable());
    assertEquals(2, Device.count("fake"));
    assertEquals(FAKE, FAKE.backend().device());
    assertEquals("fake", FAKE.backend().name());
  }

  @Test
  void hostAccessorsOnFakeStorageThrow() {
    Tensor x = Tensor.of(new float[] {1, 2, 3}, 3).to(FAKE);
    assertEquals(FAKE, x.device());
    assertTrue(x.storage().onDevice());
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> x.storage().floats());
    assertTrue(e.getMessage().contains("is on fake:0, not in host memory"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> x.getDouble(0));
  }

  @Test
  void computesWhatTheCpuComputesAndCopiesBack() {
    Tensor a = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
    Tensor b = Tensor.of(new float[] {0.5f, -1, 2}, 3);
    Tensor onFake = a.to(FAKE).mul(b.to(FAKE)).t().contiguous().sum(0, false);
    assertEquals(FAKE, onFake.device());
    assertArrayEquals(a.mul(b).t().contiguous().sum(0, false).toFloatArray(), onFake.cpu().toFloatArray());
  }

  @Test
  void uninitializedBuffersAreNaNSoReadsBeforeWritesShow() {
    Tensor x = Tensor.uninitialized(FAKE, DType.F32, 2);
    assertTrue(Float.isNaN(x.cpu().toFloatArray()[0]));
    assertArrayEquals(new float[] {0, 0}, Tensor.zeros(FAKE, DType.F32, 2).cpu().toFloatArray());
  }

  @Test
  void hostViewsReachOnlyCopy() {
    Tensor dev = Tensor.zeros(FAKE, DType.F32, 3);
    StridedView host = StridedView.allocate(DType.F32, 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> FAKE.backend().binary(BinaryOp.ADD, dev, host, dev));
    assertTrue(e.getMessage().contains("argument 2 is a host (cpu) view"), e.getMessage());
    FAKE.backend().copy(host, dev); // the one primitive that crosses
  }

  @Test
  void mixingDevicesIsATypedErrorNamingOpAndDevices() {
    Tensor a = Tensor.ones(DType.F32, 2).to(FAKE);
    Tensor b = Tensor.ones(DType.F32, 2);
    TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> a.add(b));
    assertEquals("add: tensors are on different devices (fake:0 vs cpu): a=[2], b=[2]", e.getMessage());
    TensorArgumentException e2 = assertThrows(TensorArgumentException.class, () -> a.mul(b.to(FakeDevice.OTHER)));
    assertEquals("mul: tensors are on different devices (fake:0 vs fake:1): a=[2], b=[2]", e2.getMessage());
    // a 0-d CPU tensor goes with a device tensor, as in PyTorch
    assertArrayEquals(new float[] {3, 3}, a.mul(Tensor.scalar(3, DType.F32)).cpu().toFloatArray());
  }

  @Test
  void movesBetweenTwoDevicesThroughTheHost() {
    Tensor a = Tensor.of(new float[] {1, 2}, 2).to(FAKE).to(FakeDevice.OTHER);
    assertEquals(FakeDevice.OTHER, a.device());
    assertArrayEquals(new float[] {1, 2}, a.cpu().toFloatArray());
  }
}
