package dev.ember.amp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.View;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/**
 * Under autocast the backward GEMMs of linear, addmm and matmul read two half operands (the gradient of their F32
 * product narrowed back, exactly), so a backend that reads halves runs them as half GEMMs (tensor cores on CUDA):
 * checked on the fake device by watching every GEMM that reaches its backend, with the CPU's gradients.
 */
class HalfGradientGemmTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  /** The dtypes of (a, b) of every matmul the backend ran during {@code body}. */
  private static List<String> gemms(Runnable body) throws Exception {
    List<String> seen = new ArrayList<>();
    try (AutoCloseable w = FakeDevice.watch((name, args) -> {
      if (name.equals("matmul")) {
        seen.add(((View) args[0]).dtype() + "x" + ((View) args[1]).dtype() + "->" + ((View) args[2]).dtype());
      }
    })) {
      body.run();
    }
    return seen;
  }

  @Test
  void backwardGemmsReadHalfOperands() throws Exception {
    check(false);
  }

  /** On a backend that also writes half products, every GEMM writes one, with the same gradient bits. */
  @Test
  void onABackendThatWritesHalfEveryGemmWritesTheOperandsDtype() throws Exception {
    try (AutoCloseable on = FakeDevice.writingHalf(true)) {
      check(true);
    }
  }

  private static void check(boolean writesHalf) throws Exception {
    List<BiFunction<Tensor[], Device, Tensor>> ops = List.of(
        (p, d) -> LinalgOps.linear(p[0], p[1], p[2]),
        (p, d) -> LinalgOps.addmm(p[2].narrow(0, 0, 6), p[0], p[1].narrow(0, 0, 6).t()),
        (p, d) -> p[0].matmul(p[1].t()),
        (p, d) -> LinalgOps.bmm(p[0].reshape(2, 5, 8), p[1].narrow(0, 0, 6).reshape(2, 3, 8).transpose(1, 2)));
    for (DType h : new DType[] {DType.BF16, DType.F16}) {
      for (int k = 0; k < ops.size(); k++) {
        BiFunction<Tensor[], Device, Tensor> op = ops.get(k);
        Generator g = new Generator(k);
        Tensor[] cpu = {Tensor.randn(g, 10, 8).requiresGrad(true), Tensor.randn(g, 7, 8).requiresGrad(true),
            Tensor.randn(g, 7).requiresGrad(true)};
        Tensor[] dev = new Tensor[3];
        for (int i = 0; i < 3; i++) dev[i] = cpu[i].detach().to(FAKE).requiresGrad(true);
        Tensor up = Tensor.randn(g, 70);
        try (Autocast ac = Autocast.enable(h)) {
          Tensor y = op.apply(cpu, Device.CPU).to(DType.F32).reshape(-1);
          y.mul(up.narrow(0, 0, (int) y.numel())).sum().backward();
        }
        final int which = k;
        List<String> seen = gemms(() -> {
          try (Autocast ac = Autocast.enable(h)) {
            Tensor y = op.apply(dev, FAKE).to(DType.F32).reshape(-1);
            y.mul(up.narrow(0, 0, (int) y.numel()).to(FAKE)).sum().backward();
          }
        });
        String pair = h + "x" + h + "->" + (writesHalf ? h : DType.F32);
        assertEquals(3, seen.size(), "op " + which + ": forward, dA, dB: " + seen);
        for (String s : seen) assertEquals(pair, s, "op " + which + " " + h + ": every GEMM reads two halves: " + seen);
        for (int i = 0; i < 3; i++) {
          if (cpu[i].grad() == null) continue; // matmul and bmm leave the bias out
          assertArrayEquals(cpu[i].grad().toFloatArray(), dev[i].grad().to(Device.CPU).toFloatArray(),
              "op " + which + " " + h + " gradient " + i + ": the CPU's bits");
        }
        assertTrue(dev[0].grad().dtype() == DType.F32, "F32 leaves get F32 gradients");
      }
    }
  }
}
