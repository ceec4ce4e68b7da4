package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Grad;
import dev.ember.cuda.HostFallback;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.functional.F;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * conv2d, conv1d and conv_transpose2d on cuda:0 under BF16 and F16 autocast (CudaConvolution reads the halves on the
 * tensor cores) against the CPU (which widens them and runs in F32): outputs and every gradient within two units in
 * the half dtype's last place of the layer's scale, outputs and gradients of the CPU's dtypes, nothing on the host
 * fallback, with layouts whose GEMM operands are and are not 256-byte aligned, and the inference conv+relu (ReLU
 * after the kernel on CUDA). Skipped without a GPU; the same checks run everywhere on core's fake device with its
 * convolutions reading halves, which checks the checks themselves.
 */
class HalfConvolutionOnCudaTest {
  static final Device CUDA = Device.cuda(0);

  private static final List<Function<Tensor[], Tensor>> NETS = List.of(
      p -> F.conv2d(F.conv2d(p[0], p[1], p[2], new int[] {2}, new int[] {1}, new int[] {1}, 1).relu(), p[3], p[4],
          new int[] {1}, new int[] {1}, new int[] {1}, 2),
      p -> F.conv1d(F.conv1d(p[0].reshape(4, 16, 144), p[1].reshape(32, 16, 9), p[2], 1, 1, 2, 1).relu(),
          p[3].reshape(32, 16, 9), p[4], 2, 0, 1, 2),
      p -> F.convTranspose2d(F.conv2d(p[0], p[1], p[2], new int[] {2}, new int[] {1}, new int[] {1}, 1),
          p[3].reshape(32, 16, 3, 3), p[4], new int[] {2}, new int[] {1}, new int[] {1}, 2, new int[] {1}),
      // 5 -> 7 channels on 7x7: no image, group or channel stride of 256 bytes (every GEMM through aligned copies)
      p -> F.conv2d(p[0].narrow(1, 0, 5).narrow(2, 0, 7).narrow(3, 0, 7), p[1].narrow(0, 0, 7).narrow(1, 0, 5),
          p[2].narrow(0, 0, 7), new int[] {1}, new int[] {1}, new int[] {1}, 1));

  private static Tensor[] params(int seed) {
    Generator g = new Generator(seed);
    return new Tensor[] {Tensor.randn(g, 4, 16, 12, 12).requiresGrad(true),
        Tensor.randn(g, 32, 16, 3, 3).mul(0.1).requiresGrad(true), Tensor.randn(g, 32).requiresGrad(true),
        Tensor.randn(g, 32, 16, 3, 3).mul(0.1).requiresGrad(true), Tensor.randn(g, 32).requiresGrad(true)};
  }

  @Test
  void convolutionsUnderAutocastOnCudaAreTheCpusWithinTheHalfRounding() {
    Gpu.assumeDevice();
    assertTrue(CUDA.backend().convolution().readsHalf(), "CudaConvolution reads halves");
    Map<String, Long> before = HostFallback.calls();
    check(CUDA);
    assertEquals(before, HostFallback.calls(), "nothing fell back to the host");
  }

  @Test
  void theChecksOnTheFakeDevice() throws Exception {
    try (AutoCloseable on = FakeDevice.convolutionReadingHalf(true)) {
      assertTrue(FakeDevice.DEVICE.backend().convolution().readsHalf());
      check(FakeDevice.DEVICE);
    }
  }

  private static void check(Device device) {
    for (DType h : new DType[] {DType.BF16, DType.F16}) {
      double rel = h == DType.BF16 ? 1.0 / 64 : 1.0 / 512;
      for (int k = 0; k < NETS.size(); k++) {
        Function<Tensor[], Tensor> net = NETS.get(k);
        Tensor[] cpu = params(k);
        Tensor[] dev = new Tensor[cpu.length];
        for (int i = 0; i < cpu.length; i++) dev[i] = cpu[i].detach().to(device).requiresGrad(true);
        Tensor yc;
        Tensor yd;
        try (Autocast ac = Autocast.enable(h)) {
          yc = net.apply(cpu);
          yd = net.apply(dev);
        }
        String what = h + " net " + k;
        assertEquals(h, yd.dtype(), what + ": output dtype");
        AutocastOnCudaTest.assertClose(yc, yd, rel, what + " output");
        Tensor up = Tensor.randn(new Generator(50 + k), (int) yc.numel());
        yc.to(DType.F32).reshape(-1).mul(up).sum().backward();
        yd.to(DType.F32).reshape(-1).mul(up.to(device)).sum().backward();
        for (int i = 0; i < cpu.length; i++) {
          if (cpu[i].grad() == null) continue;
          assertEquals(DType.F32, dev[i].grad().dtype(), what + " gradient " + i + " dtype");
          AutocastOnCudaTest.assertClose(cpu[i].grad(), dev[i].grad(), 2 * rel, what + " gradient " + i);
        }
      }
      // half tensors without autocast: output and gradients in the half dtype
      Tensor[] cpu = params(9);
      Tensor[] dev = new Tensor[cpu.length];
      for (int i = 0; i < cpu.length; i++) {
        cpu[i] = cpu[i].detach().to(h).requiresGrad(true);
        dev[i] = cpu[i].detach().to(device).requiresGrad(true);
      }
      Tensor yc = NETS.get(0).apply(cpu);
      Tensor yd = NETS.get(0).apply(dev);
      assertEquals(h, yd.dtype());
      AutocastOnCudaTest.assertClose(yc, yd, rel, h + " tensors output");
      Tensor up = Tensor.randn(new Generator(60), (int) yc.numel()).to(h);
      yc.reshape(-1).mul(up).sum().backward();
      yd.reshape(-1).mul(up.to(device)).sum().backward();
      for (int i = 0; i < cpu.length; i++) {
        assertEquals(h, dev[i].grad().dtype(), h + " tensors gradient " + i + " dtype");
        AutocastOnCudaTest.assertClose(cpu[i].grad(), dev[i].grad(), 2 * rel, h + " tensors gradient " + i);
      }
      // inference: conv2d + relu (the ReLU after the kernel on CUDA, on the half output)
      Tensor[] p = params(11);
      try (Grad off = Grad.off(); Autocast ac = Autocast.enable(h)) {
        Tensor want = F.conv2dRelu(p[0], p[1], p[2], new int[] {1}, new int[] {1}, new int[] {1}, 1, "zeros");
        Tensor got = F.conv2dRelu(p[0].to(device), p[1].to(device), p[2].to(device), new int[] {1}, new int[] {1},
            new int[] {1}, 1, "zeros");
        assertEquals(h, got.dtype());
        AutocastOnCudaTest.assertClose(want, got, rel, h + " conv2d+relu");
      }
    }
  }
}
