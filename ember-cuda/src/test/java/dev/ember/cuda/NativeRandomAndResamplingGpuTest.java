package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.kernels.CudaRandom;
import dev.ember.cuda.kernels.CudaResampling;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.functional.Dropouts;
import dev.ember.nn.functional.Padding;
import dev.ember.nn.functional.Upsampling;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * On a GPU (skipped without one): CudaBackend serves the random and resampling families natively, and a training
 * step with upsampling, reflect padding and dropout falls back to the host for none of them ({@link
 * HostFallback#calls()}), with the CPU's gradient.
 */
class NativeRandomAndResamplingGpuTest {
  /** x -> bilinear x2 -> reflect pad -> nearest x0.5 -> dropout -> sum of squares; x's gradient. */
  private static Tensor step(Device device, Tensor xHost) {
    Tensor x = xHost.to(device).detach().requiresGrad(true); // a leaf of its own (to(cpu) returns xHost itself)
    Tensor h = Upsampling.interpolate(x, 2.0, "bilinear");
    h = Padding.pad(h, new int[] {1, 2, 2, 1}, "reflect");
    h = Upsampling.interpolate(h, 0.5, "nearest");
    h = Dropouts.dropout(h, 0.3, true, new Generator(9));
    h.mul(h).sum().backward();
    return x.grad().cpu();
  }

  @Test
  void aDropoutTrainingStepFallsBackForNoRandomOrResamplingCall() {
    Gpu.assumeDevice();
    Device cuda = Device.cuda(0);
    assertTrue(cuda.backend().random() instanceof CudaRandom, "random: " + cuda.backend().random());
    assertTrue(cuda.backend().resampling() instanceof CudaResampling, "resampling: " + cuda.backend().resampling());
    Tensor x = Tensor.randn(new Generator(1), 2, 3, 10, 12);
    Tensor want = step(Device.CPU, x);
    HostFallback.resetCalls();
    Tensor got = step(cuda, x);
    Tensor u = Tensor.empty(cuda, DType.F32, 1000);
    cuda.backend().random().uniform(u, 0, 1, new Generator(2));
    cuda.backend().random().bernoulli(u, 0.5, 2, new Generator(2));
    double s = u.cpu().sum().item();
    Map<String, Long> calls = HostFallback.calls();
    System.out.println("NativeRandomAndResamplingGpuTest: host fallback calls in the step " + calls);
    for (String k : calls.keySet()) {
      assertTrue(!k.startsWith("random.") && !k.startsWith("resampling."), "fell back to the host: " + calls);
    }
    assertTrue(s > 600 && s < 1400, "a bernoulli(0.5) fill of 2s sums to about 1000: " + s);
    assertArrayEquals(want.shape(), got.shape());
    double diff = want.sub(got).abs().max().item(), scale = want.abs().max().item();
    System.out.println("NativeRandomAndResamplingGpuTest: x.grad on cuda vs cpu: max |diff| " + diff + " (max |grad| "
        + scale + ")");
    assertTrue(diff <= 1e-6 * (1 + scale), "x.grad differs from the CPU's by " + diff);
    assertTrue(scale > 0, "the gradient is not all zero");
  }
}
