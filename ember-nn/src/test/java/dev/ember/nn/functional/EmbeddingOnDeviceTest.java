package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import org.junit.jupiter.api.Test;

/**
 * Embedding on a device gathers and scatters by a device copy of its input (int64 or int32, any layout): the CPU's
 * rows and weight gradient, and the indices never go up from the host again after the bounds check read them.
 */
class EmbeddingOnDeviceTest {
  @Test
  void rowsAndGradientAreTheCpusAndTheIndicesStayOnTheDevice() throws Exception {
    Tensor idx64 = Tensor.of(new long[] {3, 0, 3, 7, 1, 0}, 2, 3);
    for (Tensor idx : new Tensor[] {idx64, idx64.to(DType.I32), idx64.t()}) {
      for (Integer pad : new Integer[] {null, 0}) {
        Tensor w = Tensor.randn(new Generator(4), 8, 5).requiresGrad(true);
        Tensor up = Tensor.randn(new Generator(5), idx.shape()[0], idx.shape()[1], 5);
        Tensor y = F.embedding(idx, w, pad, null, 2);
        y.mul(up).sum().backward();
        Tensor wd = w.detach().to(FakeDevice.DEVICE).requiresGrad(true);
        Tensor idxd = idx.to(FakeDevice.DEVICE);
        Tensor upd = up.to(FakeDevice.DEVICE);
        int[] uploads = {0};
        Tensor yd;
        try (AutoCloseable watch = FakeDevice.watch((name, args) -> {
          if (name.equals("copy") && !((View) args[0]).storage().onDevice()) uploads[0]++;
        })) {
          yd = F.embedding(idxd, wd, pad, null, 2);
          yd.mul(upd).sum().backward();
        }
        assertEquals(0, uploads[0], "nothing goes up from the host");
        assertArrayEquals(y.toFloatArray(), yd.to(Device.CPU).toFloatArray(), "rows " + idx.dtype() + " pad " + pad);
        assertArrayEquals(w.grad().toFloatArray(), wd.grad().to(Device.CPU).toFloatArray(), "weight gradient");
      }
    }
  }
}
