package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.cuda.HostFallback;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.functional.Normalization;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Batch (training with running statistics, momentum 0.1 and None, and eval), layer, group and RMS norm through the
 * ops on cuda:0 (skipped without a GPU), which take CudaNormalization's view path: outputs, input, weight and bias
 * gradients and running statistics against the CPU over two steps, F32 and F64, and nothing falling back to the
 * host. The same checks run on core's fake device everywhere, which checks the checks.
 */
class NormalizationOnCudaTest {
  static final Device CUDA = Device.cuda(0);
  static final Device FAKE = Device.of("fake", 0);

  @Test
  void onCuda() {
    Gpu.assumeDevice();
    HostFallback.resetCalls();
    all(CUDA);
    OnDevice.assertNoHostFallback("normalization");
  }

  @Test
  void onTheFakeDevice() {
    all(FAKE);
  }

  /** One normalization: its arguments on one device (x, w, b, running mean, running var; any may be null), step. */
  interface Norm {
    Tensor apply(Tensor[] t, int step);
  }

  private static void all(Device dev) {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      check(dev, dt, "batch_norm train momentum 0.1", new int[] {8, 16, 14, 14}, 16, true, true,
          (t, k) -> Normalization.batchNorm(t[0], t[3], t[4], t[1], t[2], true, 0.1, 1e-5));
      check(dev, dt, "batch_norm train momentum None", new int[] {32, 10}, 10, true, true,
          (t, k) -> Normalization.batchNorm(t[0], t[3], t[4], t[1], t[2], true, 1.0 / k, 1e-5));
      check(dev, dt, "batch_norm train no running stats no affine", new int[] {4, 6, 33}, 0, false, false,
          (t, k) -> Normalization.batchNorm(t[0], null, null, null, null, true, 0.1, 1e-5));
      check(dev, dt, "batch_norm eval", new int[] {4, 16, 9, 9}, 16, true, true,
          (t, k) -> Normalization.batchNorm(t[0], t[3], t[4], t[1], t[2], false, 0.1, 1e-5));
      check(dev, dt, "layer_norm", new int[] {6, 17, 384}, 384, true, false,
          (t, k) -> Normalization.layerNorm(t[0], new int[] {384}, t[1], t[2], 1e-5));
      check(dev, dt, "layer_norm no affine", new int[] {40, 1000}, 0, false, false,
          (t, k) -> Normalization.layerNorm(t[0], new int[] {1000}, null, null, 1e-5));
      check(dev, dt, "rms_norm", new int[] {6, 17, 384}, 384, false, false,
          (t, k) -> Normalization.rmsNorm(t[0], new int[] {384}, t[1], null));
      check(dev, dt, "group_norm", new int[] {4, 32, 10, 10}, 32, true, false,
          (t, k) -> Normalization.groupNorm(t[0], 8, t[1], t[2], 1e-5));
    }
  }

  private static Tensor on(Tensor t, Device d, boolean grad) {
    if (t == null) return null;
    Tensor m = t.to(d);
    if (m == t) m = t.clone();
    return grad ? m.requiresGrad(true) : m;
  }

  private static void check(Device dev, DType dt, String name, int[] shape, int params, boolean bias, boolean running,
      Norm norm) {
    Generator gen = new Generator(21);
    // GPU statistics are summed in double, the CPU's float32 ones in float lanes: float rounding apart
    double tol = dt == DType.F32 ? 2e-4 : 1e-9;
    Function<int[], Tensor> rand = s -> Tensor.rand(gen, s).to(dt);
    Tensor w = params == 0 ? null : rand.apply(new int[] {params}).add(0.5);
    Tensor b = params == 0 || !bias ? null : rand.apply(new int[] {params}).sub(0.5);
    Tensor rm = running ? rand.apply(new int[] {shape[1]}).mul(0.2) : null;
    Tensor rv = running ? rand.apply(new int[] {shape[1]}).add(0.5) : null;
    Tensor[] cpu = {null, on(w, Device.CPU, true), on(b, Device.CPU, true), on(rm, Device.CPU, false),
        on(rv, Device.CPU, false)};
    Tensor[] dvc = {null, on(w, dev, true), on(b, dev, true), on(rm, dev, false), on(rv, dev, false)};
    for (int step = 1; step <= 2; step++) {
      Tensor x = rand.apply(shape).mul(4).sub(1);
      Tensor up = rand.apply(shape).sub(0.5);
      cpu[0] = on(x, Device.CPU, true);
      dvc[0] = on(x, dev, true);
      Tensor yc = norm.apply(cpu, step);
      yc.mul(up).sum().backward();
      Tensor yd = norm.apply(dvc, step);
      yd.mul(up.to(dev)).sum().backward();
      String at = dev + " " + dt + " " + name + " step " + step;
      assertEquals(dev, yd.device(), at);
      Assertions.assertClose(yc, yd.cpu(), tol, tol, at + " output");
      Assertions.assertClose(cpu[0].grad(), dvc[0].grad().cpu(), tol, tol, at + " input gradient");
      // the weight and bias gradients sum over many rows: relative to their size
      if (cpu[1] != null) Assertions.assertClose(cpu[1].grad(), dvc[1].grad().cpu(), tol * 10, tol, at + " weight gradient");
      if (cpu[2] != null) Assertions.assertClose(cpu[2].grad(), dvc[2].grad().cpu(), tol * 10, tol, at + " bias gradient");
      if (cpu[3] != null) {
        Assertions.assertClose(cpu[3], dvc[3].cpu(), tol, tol, at + " running mean");
        Assertions.assertClose(cpu[4], dvc[4].cpu(), tol, tol, at + " running var");
      }
    }
  }
}
