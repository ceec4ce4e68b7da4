package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.ember.testing.FakeDevice;
import org.junit.jupiter.api.Test;

/**
 * {@code x.to(device, nonBlocking)}: the same values as the blocking copy on every path; on the CPU and to the host
 * it is the blocking copy, and to a device it reaches the backend's {@code copyNonBlocking}.
 */
class NonBlockingCopyTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  @Test
  void onTheCpuTheNonBlockingCopyIsTheBlockingOne() {
    Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
    assertSame(x, x.to(Device.CPU, true));
    // strided and converting: the backend default runs copy
    Tensor t = x.t();
    Tensor a = Tensor.uninitialized(DType.F64, 3, 2);
    Tensor b = Tensor.uninitialized(DType.F64, 3, 2);
    Device.CPU.backend().copy(t, a);
    Device.CPU.backend().copyNonBlocking(t, b);
    assertArrayEquals(a.toDoubleArray(), b.toDoubleArray());
    assertArrayEquals(new double[] {1, 4, 2, 5, 3, 6}, b.toDoubleArray());
  }

  @Test
  void toADeviceGoesThroughCopyNonBlockingWithTheBlockingCopysValues() {
    Tensor x = Tensor.of(new float[] {1.5f, -2, 3, 4e-3f, 5, Float.NaN}, 3, 2);
    long before = FakeDevice.nonBlockingCopies(FAKE);
    Tensor blocking = x.to(FAKE);
    assertEquals(before, FakeDevice.nonBlockingCopies(FAKE), "the blocking copy does not reach copyNonBlocking");
    Tensor async = x.t().to(FAKE, true);
    assertEquals(before + 1, FakeDevice.nonBlockingCopies(FAKE));
    assertEquals(FAKE, async.device());
    assertArrayEquals(blocking.t().contiguous().cpu().toFloatArray(), async.cpu().toFloatArray());
    // back to the host: a blocking copy, whatever the flag
    Tensor host = async.to(Device.CPU, true);
    assertEquals(before + 1, FakeDevice.nonBlockingCopies(FAKE));
    assertArrayEquals(x.t().contiguous().toFloatArray(), host.toFloatArray());
  }

  @Test
  void betweenTwoDevicesTheSecondLegIsNonBlocking() {
    Tensor x = Tensor.of(new long[] {7, -8, 9}, 3).to(FakeDevice.OTHER);
    long before = FakeDevice.nonBlockingCopies(FAKE);
    Tensor y = x.to(FAKE, true);
    assertEquals(before + 1, FakeDevice.nonBlockingCopies(FAKE));
    assertArrayEquals(new long[] {7, -8, 9}, y.toLongArray());
  }

  @Test
  void theGradientFlowsBackToTheHost() {
    Tensor x = Tensor.of(new float[] {1, 2, 3}, 3).requiresGrad(true);
    Tensor y = x.to(FAKE, true).mul(x.to(FAKE, true)).sum();
    y.backward();
    assertArrayEquals(new float[] {2, 4, 6}, x.grad().toFloatArray());
  }
}
