package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.AttentionKernels.Mask;
import dev.ember.backend.AttentionKernels.Problem;
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

/** The memory-efficient attention kernels on the GPU against the CPU's tiled kernels. */
class CudaAttentionTest {
  @Test
  void theKernelsCompile() {
    Gpu.assumeNvrtc();
    KernelCache.cubin("attention", CudaAttention.SOURCE, "sm_90");
  }

  @Test
  void forwardAndBackwardAgreeWithTheCpu() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    AttentionKernels cpu = Device.CPU.backend().attention();
    AttentionKernels gpu = new CudaAttention(ctx, ctx.kernels());
    Generator gen = new Generator(21);
    // {batch, l, s, e, ev, causal, window, dropout x100, mask}
    int[][] cases = {{2, 5, 7, 4, 3, 0, -1, 0, 0}, {3, 200, 200, 16, 16, 1, -1, 0, 0}, {2, 130, 150, 8, 5, 0, 20, 0, 1},
        {2, 64, 64, 32, 32, 1, -1, 20, 0}, {1, 3, 300, 8, 8, 0, -1, 10, 1}};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      double tol = dt == DType.F32 ? 2e-5 : 1e-10;
      for (int[] c : cases) {
        int b = c[0], l = c[1], s = c[2], e = c[3], ev = c[4];
        String what = dt + " " + java.util.Arrays.toString(c);
        Mask mask = null;
        Tensor maskHost = null;
        if (c[8] == 1) { // a [l, s] additive mask broadcast over the batch
          maskHost = Tensor.rand(gen, l, s).sub(0.5).to(DType.F64);
          mask = new Mask(maskHost, new int[b], s, 1);
        }
        Problem p = new Problem(b, l, s, e, ev, 1 / Math.sqrt(e), c[5] == 1, c[6], 64, 128, mask, c[7] / 100.0, 77);
        Tensor q = Tensor.rand(gen, b, l, e).sub(0.5).to(dt);
        Tensor k = Tensor.rand(gen, b, s, e).sub(0.5).to(dt);
        Tensor v = Tensor.rand(gen, b, s, ev).sub(0.5).to(dt);
        Tensor out = Tensor.zeros(dt, b, l, ev);
        double[] lse = new double[b * l];
        cpu.forward(p, q, k, v, out, lse);
        Problem pd = mask == null ? p : new Problem(b, l, s, e, ev, p.scale(), p.causal(), p.window(), 64, 128,
            new Mask(RawDevice.upload(ctx, maskHost), new int[b], s, 1), p.dropoutP(), p.dropSeed());
        Tensor dq = RawDevice.upload(ctx, q);
        Tensor dk = RawDevice.upload(ctx, k);
        Tensor dv = RawDevice.upload(ctx, v);
        Tensor dout = RawDevice.upload(ctx, Tensor.zeros(dt, b, l, ev));
        double[] dlse = new double[b * l];
        gpu.forward(pd, dq, dk, dv, dout, dlse);
        Assertions.assertClose(out, RawDevice.download(ctx, dout), tol, tol, "forward " + what);
        assertArrayEquals(lse, dlse, 1e-6, "lse " + what);

        Tensor g = Tensor.rand(gen, b, l, ev).sub(0.5).to(dt);
        Tensor gq = Tensor.zeros(dt, b, l, e);
        Tensor gk = Tensor.zeros(dt, b, s, e);
        Tensor gv = Tensor.zeros(dt, b, s, ev);
        double[] gm = mask == null ? null : new double[l * s];
        cpu.backward(p, q, k, v, out, lse, g, gq, gk, gv, gm);
        Tensor dgq = RawDevice.upload(ctx, Tensor.zeros(dt, b, l, e));
        Tensor dgk = RawDevice.upload(ctx, Tensor.zeros(dt, b, s, e));
        Tensor dgv = RawDevice.upload(ctx, Tensor.zeros(dt, b, s, ev));
        double[] dgm = mask == null ? null : new double[l * s];
        gpu.backward(pd, dq, dk, dv, dout, dlse, RawDevice.upload(ctx, g), dgq, dgk, dgv, dgm);
        Assertions.assertClose(gq, RawDevice.download(ctx, dgq), tol, tol * 10, "dq " + what);
        Assertions.assertClose(gk, RawDevice.download(ctx, dgk), tol, tol * 10, "dk " + what);
        Assertions.assertClose(gv, RawDevice.download(ctx, dgv), tol, tol * 10, "dv " + what);
        if (gm != null) assertArrayEquals(gm, dgm, 1e-5, "dmask " + what);

        Tensor band = Tensor.zeros(DType.BOOL, l, s);
        cpu.bandMask(p, band);
        Tensor dband = RawDevice.upload(ctx, Tensor.zeros(DType.BOOL, l, s));
        gpu.bandMask(pd, dband);
        Assertions.assertClose(band, RawDevice.download(ctx, dband), 0, 0, "band " + what);
        Tensor keep = Tensor.zeros(dt, b, l, s);
        cpu.dropoutKeep(p, keep);
        Tensor dkeep = RawDevice.upload(ctx, Tensor.zeros(dt, b, l, s));
        gpu.dropoutKeep(pd, dkeep);
        Assertions.assertClose(keep, RawDevice.download(ctx, dkeep), 0, 0, "dropout keep " + what);
      }
    }
  }
}
