package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.cpu.CpuOptimizer;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.testing.Gpu;
import dev.ember.cuda.testing.RawDevice;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Every fused update on the GPU against the CPU's: elementwise rules bitwise (F32 and F64), the reductions to
 * 1e-12 relative. The compile check runs wherever NVRTC is found; the rest needs a GPU.
 */
class CudaOptimizerTest {
  static final int N = 70_001;

  @Test
  void theKernelsCompileForHopperAndAmpere() {
    Gpu.assumeNvrtc();
    KernelCache.cubin("optimizer", CudaOptimizer.FULL_SOURCE, "sm_90");
    KernelCache.cubin("optimizer", CudaOptimizer.FULL_SOURCE, "sm_80");
  }

  /** Runs {@code rule} on host tensors with the CPU's kernels and on device copies with CUDA's; compares all. */
  private void same(String name, DType dt, int tensors, BiConsumer<OptimizerKernels, Tensor[]> rule) {
    CudaContext ctx = CudaContext.of(0);
    Generator g = new Generator(name.hashCode());
    Tensor[] host = new Tensor[tensors];
    Tensor[] dev = new Tensor[tensors];
    for (int i = 0; i < tensors; i++) {
      // states that enter a sqrt (second moments, accumulators) must be non-negative: all inputs are in [0.01, 1)
      // except the gradient (index 1), in [-1, 1)
      Tensor t = Tensor.rand(g, N).mul(i == 1 ? 2 : 0.99).add(i == 1 ? -1 : 0.01).to(dt);
      // centered RMSprop: the mean square s >= 0.01 stays above the squared mean a^2 when a < 0.05
      if (name.endsWith("centered") && i == 3) t = t.mul(0.05);
      host[i] = t;
      dev[i] = RawDevice.upload(ctx, t);
    }
    rule.accept(CpuOptimizer.instance(), host);
    rule.accept(new CudaOptimizer(ctx, ctx.kernels()), dev);
    for (int i = 0; i < tensors; i++) {
      Assertions.assertClose(host[i], RawDevice.download(ctx, dev[i]), 0, 0, name + " " + dt + " tensor " + i);
    }
  }

  @Test
  void elementwiseUpdatesHaveTheCpusBits() {
    Gpu.assumeDevice();
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      same("sgd", dt, 2, (k, t) -> k.sgd(t[0], t[1], 0.1, 0.01, 1));
      same("sgd_momentum", dt, 3, (k, t) -> k.sgdMomentum(t[0], t[1], t[2], 0.1, 0.01, -1, 0.9, 0.8, false, 0.9));
      same("nesterov", dt, 3, (k, t) -> k.sgdMomentum(t[0], t[1], t[2], 0.1, 0, 1, 0.9, 1, true, 0.9));
      same("adam", dt, 4, (k, t) -> k.adam(t[0], t[1], t[2], t[3], null, 1, 0, 0.999, 0.9, 0.999, 1e-8, 1e-3, 1.3));
      same("adam_l2", dt, 4, (k, t) -> k.adam(t[0], t[1], t[2], t[3], null, -1, 0.01, 1, 0.9, 0.99, 1e-8, 1e-3, 1.1));
      same("amsgrad", dt, 5, (k, t) -> k.adam(t[0], t[1], t[2], t[3], t[4], 1, 0, 1, 0.9, 0.999, 1e-8, 1e-3, 1.3));
      same("adamax", dt, 4, (k, t) -> k.adamax(t[0], t[1], t[2], t[3], 1, 0.01, 0.9, 0.999, 1e-8, 2e-3));
      same("adadelta", dt, 4, (k, t) -> k.adadelta(t[0], t[1], t[2], t[3], 1, 0.01, 0.9, 1e-6, 1));
      same("adagrad", dt, 3, (k, t) -> k.adagrad(t[0], t[1], t[2], 1, 0.01, 1e-10, 0.01));
      same("rmsprop", dt, 3, (k, t) -> k.rmsprop(t[0], t[1], t[2], null, null, 1, 0, 0.99, 1e-8, 0, 0.01));
      same("rmsprop_centered", dt, 5, (k, t) -> k.rmsprop(t[0], t[1], t[2], t[3], t[4], 1, 0.01, 0.99, 1e-8, 0.9,
          0.01));
      same("nadam", dt, 4, (k, t) -> k.nadam(t[0], t[1], t[2], t[3], 1, 0.01, 0.9, 0.999, 0.998, 1e-8, 1e-3, 2e-3));
      same("radam", dt, 4, (k, t) -> k.radam(t[0], t[1], t[2], t[3], 1, 0.01, 0.9, 0.999, 1e-8, 1e-3, true));
      same("radam_sgd", dt, 4, (k, t) -> k.radam(t[0], t[1], t[2], t[3], 1, 0.01, 0.9, 0.999, 1e-8, 1e-3, false));
      same("lion", dt, 3, (k, t) -> k.lion(t[0], t[1], t[2], 1, 0.999, 1e-4, 0.9, 0.99));
      same("lamb_apply", dt, 3, (k, t) -> k.lambApply(t[0], t[1], t[2], 0.1, 0.001, 1e-6, 0.01, 0.002));
      same("sophia", dt, 4, (k, t) -> k.sophia(t[0], t[1], t[2], t[3], 1, 0.999, 1e-4, 0.965, 0.04 * 32));
      same("sophia_ema", dt, 2, (k, t) -> k.sophiaHessian(t[0], t[1], 0.99));
      same("sam_ascend", dt, 2, (k, t) -> k.samAscend(t[0], t[1], 0.05, true));
    }
  }

  @Test
  void reductionsAgreeWithTheCpuAndUpdateStateBitwise() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    CudaOptimizer cuda = new CudaOptimizer(ctx, ctx.kernels());
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Generator g = new Generator(3);
      Tensor x = Tensor.rand(g, N).sub(0.5).to(dt);
      Tensor dx = RawDevice.upload(ctx, x);
      OptimizerKernels cpu = CpuOptimizer.instance();
      assertEquals(cpu.powerSum(x, 2), cuda.powerSum(dx, 2), 1e-12 * cpu.powerSum(x, 2), "powerSum 2 " + dt);
      assertEquals(cpu.powerSum(x, 3), cuda.powerSum(dx, 3), 1e-12 * cpu.powerSum(x, 3), "powerSum 3 " + dt);
      assertEquals(cpu.absMax(x), cuda.absMax(dx), 0, "absMax " + dt);
      Tensor y = Tensor.rand(g, N).to(dt);
      Tensor dy = RawDevice.upload(ctx, y);
      assertEquals(cpu.samSquares(x, y, true), cuda.samSquares(dx, dy, true), 1e-12 * cpu.samSquares(x, y, true));
      double[] hostSums = new double[2];
      double[] devSums = new double[2];
      same("lamb_moments", dt, 4, (k, t) -> {
        double[] s = k.lambMoments(t[0], t[1], t[2], t[3], 0.9, 0.999, 0.1, 0.001, 1e-6, 0.01);
        System.arraycopy(s, 0, k == cpu ? hostSums : devSums, 0, 2);
      });
      assertEquals(hostSums[0], devSums[0], 1e-12 * hostSums[0], "lamb |p|^2 " + dt);
      assertEquals(hostSums[1], devSums[1], 1e-12 * hostSums[1], "lamb |r|^2 " + dt);
    }
    Tensor nan = Tensor.rand(new Generator(1), 1000);
    nan.storage().floats()[517] = Float.NaN;
    assertEquals(Double.NaN, cuda.absMax(RawDevice.upload(ctx, nan)), "absMax: NaN wins as on the CPU");
  }
}
