package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Grad;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * On a backend whose convolution kernels read BF16/F16 operands ({@code ConvolutionKernels.readsHalf}: CUDA's
 * tensor cores; the fake device's switch here, which widens on the host), conv2d, conv1d and conv_transpose2d under
 * autocast and on half tensors hand the half tensors to the kernels (no widening, no F32 output) and give the CPU's
 * outputs and gradients to the bit; with the switch off the kernels get F32 views, as today.
 */
class HalfConvolutionOnDeviceTest {
  private static final Device FAKE = FakeDevice.DEVICE;
  private static final DType[] HALVES = {DType.BF16, DType.F16};

  /** A two-layer net over parameters p (x, w1, b1, w2, b2, ...) that ends in one tensor. */
  private static final List<Function<Tensor[], Tensor>> NETS = List.of(
      p -> Convolution.conv2d(Convolution.conv2d(p[0], p[1], p[2], new int[] {2}, new int[] {1}, new int[] {1}, 1)
          .relu(), p[3], p[4], new int[] {1}, new int[] {1}, new int[] {1}, 2),
      p -> Convolution.conv1d(Convolution.conv1d(p[0].reshape(2, 4, 36), p[1].reshape(6, 4, 9), p[2], 1, 1, 2, 1)
          .relu(), p[3].reshape(6, 3, 9), p[4], 2, 0, 1, 2),
      p -> Convolution.convTranspose2d(Convolution.conv2d(p[0], p[1], p[2], new int[] {2}, new int[] {1},
          new int[] {1}, 1), p[3].reshape(6, 3, 3, 3), p[4].narrow(0, 0, 6), new int[] {2}, new int[] {1},
          new int[] {1}, 2, new int[] {1}),
      p -> Convolution.conv2d(p[0], p[1], null, new int[] {1}, "same", new int[] {1}, 1, "reflect"));

  private static Tensor[] params(int seed) {
    Generator g = new Generator(seed);
    return new Tensor[] {Tensor.randn(g, 2, 4, 6, 6).requiresGrad(true), Tensor.randn(g, 6, 4, 3, 3).mul(0.3)
        .requiresGrad(true), Tensor.randn(g, 6).requiresGrad(true), Tensor.randn(g, 6, 3, 3, 3).mul(0.3)
        .requiresGrad(true), Tensor.randn(g, 6).requiresGrad(true)};
  }

  private static Tensor[] onFake(Tensor[] cpu, DType dtype) {
    Tensor[] d = new Tensor[cpu.length];
    for (int i = 0; i < cpu.length; i++) d[i] = cpu[i].detach().to(dtype).to(FAKE).requiresGrad(true);
    return d;
  }

  /** Every dtype of a view argument the convolution primitives got, by primitive, while {@code body} ran. */
  private static TreeSet<String> convolutionViews(Runnable body) throws Exception {
    TreeSet<String> seen = new TreeSet<>();
    try (AutoCloseable w = FakeDevice.watch((name, args) -> {
      if (!List.of("forward", "forwardRelu", "backward", "transposedForward", "transposedBackward", "channelSums")
          .contains(name)) {
        return;
      }
      for (Object a : args) if (a instanceof View v) seen.add(name + ":" + v.dtype());
    })) {
      body.run();
    }
    return seen;
  }

  private static float[] floats(Tensor t) {
    return t.to(Device.CPU).to(DType.F32).toFloatArray();
  }

  private static void assertSame(Tensor[] cpu, Tensor yc, Tensor[] dev, Tensor yd, String what) {
    assertEquals(yc.dtype(), yd.dtype(), what + ": output dtype");
    assertArrayEquals(floats(yc), floats(yd), what + ": output");
    for (int i = 0; i < cpu.length; i++) {
      if (cpu[i].grad() == null) continue;
      assertEquals(cpu[i].grad().dtype(), dev[i].grad().dtype(), what + ": gradient " + i + " dtype");
      assertArrayEquals(floats(cpu[i].grad()), floats(dev[i].grad()), what + ": gradient " + i);
    }
  }

  @Test
  void underAutocastTheKernelsReadHalvesWithTheCpusBits() throws Exception {
    for (boolean reads : new boolean[] {true, false}) {
      for (DType h : HALVES) {
        for (int k = 0; k < NETS.size(); k++) {
          Function<Tensor[], Tensor> net = NETS.get(k);
          Tensor[] cpu = params(k);
          Tensor up = Tensor.randn(new Generator(100 + k), 1000);
          Tensor yc;
          try (Autocast ac = Autocast.enable(h)) {
            yc = net.apply(cpu);
            yc.to(DType.F32).reshape(-1).mul(up.narrow(0, 0, (int) yc.numel())).sum().backward();
          }
          Tensor[] dev = onFake(cpu, DType.F32);
          Tensor[] yd = new Tensor[1];
          TreeSet<String> seen;
          try (AutoCloseable on = FakeDevice.convolutionReadingHalf(reads)) {
            seen = convolutionViews(() -> {
              try (Autocast ac = Autocast.enable(h)) {
                yd[0] = net.apply(dev);
                yd[0].to(DType.F32).reshape(-1).mul(up.narrow(0, 0, (int) yd[0].numel()).to(FAKE)).sum().backward();
              }
            });
          }
          String what = h + " net " + k + (reads ? " read as halves" : " widened");
          assertSame(cpu, yc, dev, yd[0], what);
          DType expected = reads && k != 3 ? h : DType.F32; // net 3's reflect padding keeps the widened path
          assertTrue(seen.contains("forward:" + expected) && seen.contains(
              (k == 2 ? "transposedBackward:" : "backward:") + expected), what + ": " + seen);
          for (String s : seen) assertTrue(s.endsWith(":" + expected), what + ": " + seen);
        }
      }
    }
  }

  @Test
  void halfTensorsWithoutAutocastAndTheFusedReluAreTheCpus() throws Exception {
    for (DType h : HALVES) {
      for (int k = 0; k < NETS.size(); k++) {
        Function<Tensor[], Tensor> net = NETS.get(k);
        Tensor[] base = params(20 + k);
        Tensor[] cpu = new Tensor[base.length];
        for (int i = 0; i < base.length; i++) cpu[i] = base[i].detach().to(h).requiresGrad(true);
        Tensor yc = net.apply(cpu);
        Tensor up = Tensor.randn(new Generator(200 + k), (int) yc.numel()).to(h);
        yc.reshape(-1).mul(up).sum().backward();
        Tensor[] dev = onFake(cpu, h);
        Tensor[] yd = new Tensor[1];
        TreeSet<String> seen;
        try (AutoCloseable on = FakeDevice.convolutionReadingHalf(true)) {
          seen = convolutionViews(() -> {
            yd[0] = net.apply(dev);
            yd[0].reshape(-1).mul(up.to(FAKE)).sum().backward();
          });
        }
        assertSame(cpu, yc, dev, yd[0], h + " tensors, net " + k);
        DType expected = k != 3 ? h : DType.F32; // a reflect-padded copy: widened (its gradient sums dx)
        for (String s : seen) assertTrue(s.endsWith(":" + expected), h + " net " + k + ": " + seen);
      }
      // inference: conv2d + relu fused into the kernel's epilogue, on the half operands
      Tensor[] p = params(40);
      Tensor yc;
      Tensor yd;
      TreeSet<String> seen;
      try (Grad off = Grad.off(); Autocast ac = Autocast.enable(h)) {
        yc = Convolution.conv2dRelu(p[0], p[1], p[2], new int[] {1}, new int[] {1}, new int[] {1}, 1, "zeros");
        Tensor[] d = onFake(p, DType.F32);
        try (AutoCloseable on = FakeDevice.convolutionReadingHalf(true)) {
          Tensor[] out = new Tensor[1];
          seen = convolutionViews(() -> out[0] = Convolution.conv2dRelu(d[0], d[1], d[2], new int[] {1},
              new int[] {1}, new int[] {1}, 1, "zeros"));
          yd = out[0];
        }
      }
      assertEquals(h, yd.dtype());
      assertArrayEquals(floats(yc), floats(yd), h + " conv2d+relu");
      assertTrue(seen.contains("forwardRelu:" + h), seen.toString());
    }
  }
}
