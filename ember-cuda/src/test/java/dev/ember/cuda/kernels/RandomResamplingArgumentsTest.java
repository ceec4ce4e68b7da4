package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.DeviceMemory;
import dev.ember.backend.LinearAxis;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Storage;
import org.junit.jupiter.api.Test;

/**
 * CudaRandom's and CudaResampling's checks and host-side helpers, without a GPU: bad input is refused with the op
 * and the shapes before anything reaches a device (and before a generator is drawn from), the key is two draws
 * of the generator, and a padding value becomes the bits the CPU would store.
 */
class RandomResamplingArgumentsTest {
  private final CudaRandom random = new CudaRandom(null, null);
  private final CudaResampling resampling = new CudaResampling(null, null, null);

  /** Memory that claims to be on a device (never read: every case fails in its checks). */
  private record Fake(long address, long byteSize) implements DeviceMemory {
    @Override
    public Device device() {
      return Device.cuda(0);
    }

    @Override
    public void release() {}
  }

  private static View device(DType t, int... shape) {
    int n = 1;
    for (int s : shape) n *= s;
    Storage s = Storage.onDevice(t, n, new Fake(1 << 20, (long) n * t.itemSize()));
    return StridedView.of(s, shape, dev.ember.tensor.Shapes.contiguousStrides(shape), 0);
  }

  private static String message(Runnable r) {
    return assertThrows(IllegalArgumentException.class, r::run).getMessage();
  }

  @Test
  void randomRefusesBadOutputsWithoutDrawing() {
    Generator g = new Generator(3);
    long[] before = g.state();
    assertEquals("random.uniform: out must be float32 or float64, got int64 of shape [2, 3]",
        message(() -> random.uniform(device(DType.I64, 2, 3), 0, 1, g)));
    assertEquals("random.normal: out is on the cpu, expected a cuda tensor: out=[4]",
        message(() -> random.normal(StridedView.allocate(DType.F32, 4), 0, 1, g)));
    View t = StridedView.transpose((StridedView) device(DType.F32, 2, 3), 0, 1);
    assertEquals("random.bernoulli: out must be contiguous, got shape [3, 2] strides [1, 3]",
        message(() -> random.bernoulli(t, 0.5, 2, g)));
    assertEquals("random.truncatedNormal: generator must not be null",
        message(() -> random.truncatedNormal(device(DType.F32, 4), 0, 1, -2, 2, null)));
    assertArrayEquals(before, g.state(), "a refused call draws nothing");
  }

  @Test
  void theKeyIsTwoDrawsOfTheGenerator() {
    Generator twin = new Generator(42);
    long seed = twin.nextLong(), offset = twin.nextLong();
    Generator g = new Generator(42);
    assertArrayEquals(new int[] {(int) seed, (int) (seed >>> 32), (int) offset, (int) (offset >>> 32)},
        CudaRandom.drawKey(g));
    assertEquals(twin.nextInt(), g.nextInt(), "the generator moved on by exactly two longs");
  }

  @Test
  void resamplingRefusesBadInputsByOpAndShape() {
    assertEquals("resampling.nearestForward: expected float32 or float64, got int32: input=[2, 3, 3], out=[2, 6, 6]",
        message(() -> resampling.nearestForward(device(DType.I32, 2, 3, 3), 2, 3, 3, new int[6], new int[6],
            device(DType.I32, 2, 6, 6))));
    assertEquals("resampling.bilinearBackward: input is on the cpu, expected a cuda tensor: input=[1, 2, 2], out=[1, 1, 1]",
        message(() -> resampling.bilinearBackward(StridedView.allocate(DType.F32, 1, 2, 2), 1, 1, 1,
            new LinearAxis(new int[2], new int[2], new double[2], new double[2]),
            new LinearAxis(new int[2], new int[2], new double[2], new double[2]), device(DType.F32, 1, 1, 1))));
    assertEquals("resampling.padForward: input is float32 but out is float64: input=[1, 2, 2], out=[1, 3, 3]",
        message(() -> resampling.padForward(device(DType.F32, 1, 2, 2), 1, 2, 2, new int[] {-1, 0, 1},
            new int[] {-1, 0, 1}, 0, device(DType.F64, 1, 3, 3))));
    assertEquals("resampling.padForward: source index 2 is outside [0, 2)",
        message(() -> resampling.padForward(device(DType.F32, 1, 2, 2), 1, 2, 2, new int[] {0, 1, 2},
            new int[] {0, 1, 1}, 0, device(DType.F32, 1, 3, 3))));
    assertEquals("resampling.nearestBackward: source index -2 is outside [0, 2)",
        message(() -> resampling.nearestBackward(device(DType.F64, 1, 2, 2), 1, 2, 2, new int[] {0, -2},
            new int[] {0, 1}, device(DType.F64, 1, 2, 2))));
  }

  @Test
  void aPaddingValueBecomesTheBitsTheCpuStores() {
    assertEquals(Float.floatToRawIntBits(-2.5f) & 0xFFFFFFFFL, CudaResampling.bits(DType.F32, -2.5));
    assertEquals(Double.doubleToRawLongBits(-2.5), CudaResampling.bits(DType.F64, -2.5));
    for (DType t : DType.values()) {
      Storage s = Storage.allocate(t, 1);
      s.setDouble(0, -2.5);
      long want = ElementwiseHostTest.bits(s, 0);
      assertEquals(want, CudaResampling.bits(t, -2.5), t.toString());
    }
  }
}
