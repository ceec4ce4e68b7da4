package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.NormalizationKernels;
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

/** The normalization kernels on the GPU against the CPU's. */
class CudaNormalizationTest {
  @Test
  void theKernelsCompile() {
    Gpu.assumeNvrtc();
    KernelCache.cubin("normalization", CudaNormalization.SOURCE, "sm_90");
  }

  private static double[] arr(Generator g, int n) {
    double[] a = new double[n];
    Tensor t = Tensor.rand(g, n).to(DType.F64);
    for (int i = 0; i < n; i++) a[i] = t.storage().doubles()[i] + 0.5;
    return a;
  }

  @Test
  void rowAndChannelKernelsAgreeWithTheCpu() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    NormalizationKernels cpu = Device.CPU.backend().normalization();
    NormalizationKernels gpu = new CudaNormalization(ctx, ctx.kernels());
    Generator gen = new Generator(9);
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      double tol = dt == DType.F32 ? 1e-5 : 1e-11;
      int rows = 37, m = 300;
      Tensor x = Tensor.rand(gen, rows, m).mul(3).sub(1).to(dt);
      Tensor dx = RawDevice.upload(ctx, x);
      for (boolean rms : new boolean[] {false, true}) {
        double[][] a = cpu.rowStats(x, rows, m, 1e-5, rms);
        double[][] b = gpu.rowStats(dx, rows, m, 1e-5, rms);
        // the CPU sums a float32 row in float lanes, the GPU in double: float rounding apart
        if (!rms) assertArrayEquals(a[0], b[0], dt == DType.F32 ? 1e-6 : 1e-12, "row means " + dt);
        assertArrayEquals(a[1], b[1], dt == DType.F32 ? 1e-5 : 1e-9, "row rstd " + dt + " rms " + rms);
        double[] w = arr(gen, m);
        double[] bias = arr(gen, m);
        Tensor out = Tensor.zeros(dt, rows, m);
        cpu.rowAffine(x, a[0], a[1], w, rms ? null : bias, out, rows, m);
        Tensor dout = RawDevice.upload(ctx, Tensor.zeros(dt, rows, m));
        gpu.rowAffine(dx, a[0], a[1], w, rms ? null : bias, dout, rows, m);
        Assertions.assertClose(out, RawDevice.download(ctx, dout), 0, 0, "row affine " + dt);
        Tensor g = Tensor.rand(gen, rows, m).sub(0.5).to(dt);
        Tensor gx = Tensor.zeros(dt, rows, m);
        Tensor gw = Tensor.zeros(DType.F64, m);
        Tensor gb = Tensor.zeros(DType.F64, m);
        cpu.rowBackward(x, g, a[0], a[1], w, rows, m, 1, 1, gx, gw, gb);
        Tensor dgx = RawDevice.upload(ctx, Tensor.zeros(dt, rows, m));
        Tensor dgw = RawDevice.upload(ctx, Tensor.zeros(DType.F64, m));
        Tensor dgb = RawDevice.upload(ctx, Tensor.zeros(DType.F64, m));
        gpu.rowBackward(dx, RawDevice.upload(ctx, g), a[0], a[1], w, rows, m, 1, 1, dgx, dgw, dgb);
        Assertions.assertClose(gx, RawDevice.download(ctx, dgx), tol, tol, "row backward gx " + dt);
        Assertions.assertClose(gw, RawDevice.download(ctx, dgw), 1e-12, 1e-12, "row backward gw " + dt);
        Assertions.assertClose(gb, RawDevice.download(ctx, dgb), 1e-12, 1e-12, "row backward gb " + dt);
      }
      // group norm: [n=3, groups=4, channels per group=5, s=6] as rows of m = 5 * 6, weight per channel (sDiv 6)
      int n = 3, groups = 4, cpg = 5, s = 6;
      Tensor xg = Tensor.rand(gen, n * groups, cpg * s).to(dt);
      double[][] st = cpu.rowStats(xg, n * groups, cpg * s, 1e-5, false);
      double[] w = arr(gen, groups * cpg);
      Tensor g = Tensor.rand(gen, n * groups, cpg * s).sub(0.5).to(dt);
      Tensor gx = Tensor.zeros(dt, n * groups, cpg * s);
      Tensor gw = Tensor.zeros(DType.F64, groups * cpg);
      cpu.rowBackward(xg, g, st[0], st[1], w, n * groups, cpg * s, groups, s, gx, gw, null);
      Tensor dgx = RawDevice.upload(ctx, Tensor.zeros(dt, n * groups, cpg * s));
      Tensor dgw = RawDevice.upload(ctx, Tensor.zeros(DType.F64, groups * cpg));
      gpu.rowBackward(RawDevice.upload(ctx, xg), RawDevice.upload(ctx, g), st[0], st[1], w, n * groups, cpg * s,
          groups, s, dgx, dgw, null);
      Assertions.assertClose(gx, RawDevice.download(ctx, dgx), tol, tol, "group backward gx " + dt);
      Assertions.assertClose(gw, RawDevice.download(ctx, dgw), 1e-12, 1e-12, "group backward gw " + dt);

      // batch norm over [n, c, s]
      int bn = 5, c = 7, bs = 49;
      Tensor xb = Tensor.rand(gen, bn, c, bs).mul(2).to(dt);
      Tensor dxb = RawDevice.upload(ctx, xb);
      double[][] cs = cpu.channelStats(xb, bn, c, bs);
      double[][] ds = gpu.channelStats(dxb, bn, c, bs);
      // the CPU sums a float32 plane in float lanes, the GPU in double: float rounding apart
      double statTol = dt == DType.F32 ? 1e-5 : 1e-12;
      assertArrayEquals(cs[0], ds[0], statTol, "channel means " + dt);
      assertArrayEquals(cs[1], ds[1], statTol, "channel variances " + dt);
      double[] scale = arr(gen, bn * c);
      double[] shift = arr(gen, bn * c);
      Tensor yb = Tensor.zeros(dt, bn, c, bs);
      cpu.channelAffine(xb, scale, shift, yb, bn, c, bs);
      Tensor dyb = RawDevice.upload(ctx, Tensor.zeros(dt, bn, c, bs));
      gpu.channelAffine(dxb, scale, shift, dyb, bn, c, bs);
      Assertions.assertClose(yb, RawDevice.download(ctx, dyb), 0, 0, "channel affine " + dt);
      double[] rstd = new double[c];
      for (int i = 0; i < c; i++) rstd[i] = 1 / Math.sqrt(cs[1][i] + 1e-5);
      double[] wc = arr(gen, c);
      Tensor gb2 = Tensor.rand(gen, bn, c, bs).sub(0.5).to(dt);
      for (boolean train : new boolean[] {true, false}) {
        Tensor gxb = Tensor.zeros(dt, bn, c, bs);
        Tensor gwb = Tensor.zeros(DType.F64, c);
        Tensor gbb = Tensor.zeros(DType.F64, c);
        cpu.channelBackward(xb, gb2, cs[0], rstd, wc, bn, c, bs, train, gxb, gwb, gbb);
        Tensor dgxb = RawDevice.upload(ctx, Tensor.zeros(dt, bn, c, bs));
        Tensor dgwb = RawDevice.upload(ctx, Tensor.zeros(DType.F64, c));
        Tensor dgbb = RawDevice.upload(ctx, Tensor.zeros(DType.F64, c));
        gpu.channelBackward(dxb, RawDevice.upload(ctx, gb2), cs[0], rstd, wc, bn, c, bs, train, dgxb, dgwb, dgbb);
        Assertions.assertClose(gxb, RawDevice.download(ctx, dgxb), tol, tol, "channel backward gx " + dt);
        // float32: the CPU sums each plane in float lanes, the GPU in double
        double sumTol = dt == DType.F32 ? 1e-5 : 1e-9;
        Assertions.assertClose(gwb, RawDevice.download(ctx, dgwb), sumTol, sumTol, "channel backward gw " + dt);
        Assertions.assertClose(gbb, RawDevice.download(ctx, dgbb), sumTol, sumTol, "channel backward gb " + dt);
      }
      Tensor running = Tensor.rand(gen, c).to(dt);
      Tensor drunning = RawDevice.upload(ctx, running);
      cpu.updateRunning(running, cs[0], 0.1);
      gpu.updateRunning(drunning, cs[0], 0.1);
      Assertions.assertClose(running, RawDevice.download(ctx, drunning), 0, 0, "running mean " + dt);
      Tensor emb = Tensor.rand(gen, 10, 4).mul(3).to(dt);
      Tensor demb = RawDevice.upload(ctx, emb);
      long[] ids = {3, 7, 3, 0};
      assertEquals(cpu.renormRows(emb, ids, 1.0, 2), gpu.renormRows(demb, ids, 1.0, 2));
      Assertions.assertClose(emb, RawDevice.download(ctx, demb), 1e-6, 1e-6, "renorm " + dt);
    }
  }
}
