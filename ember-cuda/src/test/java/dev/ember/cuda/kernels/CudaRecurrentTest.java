package dev.ember.cuda.kernels;

import dev.ember.backend.RecurrentKernels;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.testing.Gpu;
import dev.ember.cuda.testing.RawDevice;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import org.junit.jupiter.api.Test;

/** The LSTM cell kernels on the GPU have the CPU's bits. */
class CudaRecurrentTest {
  @Test
  void theKernelsCompile() {
    Gpu.assumeNvrtc();
    KernelCache.cubin("recurrent", CudaRecurrent.SOURCE, "sm_90");
  }

  @Test
  void cellStateHiddenAndBackwardHaveTheCpusBits() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    RecurrentKernels cpu = Device.CPU.backend().recurrent();
    RecurrentKernels gpu = new CudaRecurrent(ctx.kernels());
    Generator gen = new Generator(4);
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      int n = 13, hs = 37;
      Tensor act = Tensor.rand(gen, n, 4 * hs).to(dt);
      Tensor c = Tensor.rand(gen, n, hs).sub(0.5).to(dt);
      Tensor out = Tensor.zeros(dt, 2, n, hs);
      Tensor dact = RawDevice.upload(ctx, act);
      Tensor dout = RawDevice.upload(ctx, out);
      cpu.lstmCellState(act, c, out);
      gpu.lstmCellState(dact, RawDevice.upload(ctx, c), dout);
      Tensor t = Tensor.rand(gen, n, hs).sub(0.5).to(dt);
      cpu.lstmCellHidden(act, t, out);
      gpu.lstmCellHidden(dact, RawDevice.upload(ctx, t), dout);
      Assertions.assertClose(out, RawDevice.download(ctx, dout), 0, 0, "cell forward " + dt);
      Tensor g = Tensor.rand(gen, 2, n, hs).sub(0.5).to(dt);
      Tensor dGates = Tensor.zeros(dt, n, 4 * hs);
      Tensor dc = Tensor.zeros(dt, n, hs);
      Tensor ddGates = RawDevice.upload(ctx, dGates);
      Tensor ddc = RawDevice.upload(ctx, dc);
      cpu.lstmCellBackward(act, t, g, c, dGates, dc);
      gpu.lstmCellBackward(dact, RawDevice.upload(ctx, t), RawDevice.upload(ctx, g), RawDevice.upload(ctx, c), ddGates,
          ddc);
      Assertions.assertClose(dGates, RawDevice.download(ctx, ddGates), 0, 0, "gates gradient " + dt);
      Assertions.assertClose(dc, RawDevice.download(ctx, ddc), 0, 0, "cell gradient " + dt);
    }
  }
}
