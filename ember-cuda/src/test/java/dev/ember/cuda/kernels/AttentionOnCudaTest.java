package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.AttentionKernels.Mask;
import dev.ember.backend.AttentionKernels.Problem;
import dev.ember.cuda.HostFallback;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.testing.DeviceCompiler;
import dev.ember.cuda.testing.Gpu;
import dev.ember.cuda.testing.RawDevice;
import dev.ember.nn.functional.Attention;
import dev.ember.nn.functional.Attention.Kernel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.UnaryOperator;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * CudaAttention's view methods ({@link AttentionKernels#forwardInto}, {@link AttentionKernels#backwardFrom}: the
 * logsumexps and the mask's gradient in device memory). Without a GPU: the source compiles for sm_90 (NVRTC or nvcc)
 * with every kernel the Java side launches, and its kernels match plain loops under the g++ block emulation. On
 * cuda:0 (skipped without a GPU): the view methods give the double-array methods' bits (the same kernels, only
 * where the logsumexps live differs; a broadcast mask's gradient, summed with atomics, to rounding), a mask at an
 * offset into its storage included; and
 * scaled_dot_product_attention's tiled path through the ops against the CPU, forward and gradients (float mask
 * included), with nothing falling back to the host. Both GPU checks run on core's fake device everywhere too.
 */
class AttentionOnCudaTest {
  static final Device CUDA = Device.cuda(0);
  static final Device FAKE = Device.of("fake", 0);

  @Test
  void theSourceCompilesForTheDeviceWithEveryKernel() {
    DeviceCompiler.assume();
    List<String> names = CudaAttention.kernelNames();
    assertEquals(9, names.size());
    String text = DeviceCompiler.assertKernels("attention", CudaAttention.SOURCE, names);
    assertTrue(!text.contains("\0fwd_f16\0"), "the lookup tells names apart");
  }

  /**
   * src/test/cuda-emu/attention.cpp runs the forward and both backward kernels under the block emulation (emu.h,
   * g++) against plain loops in double, the mask's gradient added through the pointer backwardFrom passes, and
   * checks struct P's layout against {@link CudaAttention}'s packing. Skips, saying why, without g++.
   */
  @Test
  void kernelsMatchPlainLoopsUnderTheEmulator(@TempDir Path tmp) throws Exception {
    String shared = "extern __shared__ double sm[];";
    assertTrue(CudaAttention.SOURCE.contains(shared), "the kernels' dynamic shared array");
    CudaEmulator.buildAndRun(tmp, "attention.cpp",
        Map.of("attention.cu", CudaAttention.SOURCE.replace(shared, "double* sm = emu_smem;")));
  }

  @Test
  void viewMethodsGiveTheArrayMethodsBitsOnCuda() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    viewsAgainstArrays(new CudaAttention(ctx, ctx.kernels()), t -> RawDevice.upload(ctx, t),
        d -> RawDevice.download(ctx, d));
  }

  /** The same comparison with the fake device's kernels (the defaults over the CPU's), which checks the check. */
  @Test
  void viewMethodsGiveTheArrayMethodsBitsOnTheFakeDevice() {
    viewsAgainstArrays(FAKE.backend().attention(), t -> t.contiguous().to(FAKE), Tensor::cpu);
  }

  /**
   * For each case, dtype F32 and F64: forwardInto and backwardFrom against forward and backward of the same kernels
   * ({@code upload} makes a contiguous device copy, {@code download} a host copy of a contiguous device tensor).
   */
  private static void viewsAgainstArrays(AttentionKernels gpu, UnaryOperator<Tensor> upload,
      UnaryOperator<Tensor> download) {
    AttentionKernels cpu = Device.CPU.backend().attention();
    Generator gen = new Generator(23);
    // {batch, l, s, e, ev, causal, window, dropout x100, mask: 0 none, 1 [l, s] at an offset, 2 per batch element}
    int[][] cases = {{2, 5, 7, 4, 3, 0, -1, 0, 0}, {3, 200, 190, 16, 16, 1, -1, 0, 1}, {2, 130, 150, 8, 5, 0, 20, 0, 2},
        {2, 64, 64, 32, 32, 1, -1, 20, 1}, {1, 3, 300, 8, 8, 0, -1, 10, 2}};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      double tol = dt == DType.F32 ? 2e-5 : 1e-10;
      for (int[] c : cases) {
        int b = c[0], l = c[1], s = c[2], e = c[3], ev = c[4];
        String what = dt + " " + Arrays.toString(c);
        Mask hostMask = null;
        Mask devMask = null;
        int maskLen = 0;
        int shift = 0;
        if (c[8] != 0) {
          int[] base = new int[b];
          Tensor data;
          if (c[8] == 1) { // the second of two [l, s] slices: data's offset l * s, broadcast over the batch
            data = Tensor.rand(gen, 2, l, s).sub(0.5).to(DType.F64);
            shift = l * s;
            Arrays.fill(base, shift);
            maskLen = l * s;
          } else {
            data = Tensor.rand(gen, b, l, s).sub(0.5).to(DType.F64);
            for (int i = 0; i < b; i++) base[i] = i * l * s;
            maskLen = b * l * s;
          }
          Tensor dd = upload.apply(data);
          hostMask = new Mask(c[8] == 1 ? data.select(0, 1) : data, base, s, 1);
          devMask = new Mask(c[8] == 1 ? dd.select(0, 1) : dd, base, s, 1);
          assertEquals(shift, devMask.data().offset(), what);
        }
        Problem pc = new Problem(b, l, s, e, ev, 1 / Math.sqrt(e), c[5] == 1, c[6], 64, 128, hostMask, c[7] / 100.0,
            91);
        Problem pd = new Problem(b, l, s, e, ev, pc.scale(), pc.causal(), pc.window(), 64, 128, devMask,
            pc.dropoutP(), pc.dropSeed());
        Tensor q = Tensor.rand(gen, b, l, e).sub(0.5).to(dt);
        Tensor k = Tensor.rand(gen, b, s, e).sub(0.5).to(dt);
        Tensor v = Tensor.rand(gen, b, s, ev).sub(0.5).to(dt);
        Tensor g = Tensor.rand(gen, b, l, ev).sub(0.5).to(dt);
        Tensor dq = upload.apply(q), dk = upload.apply(k), dv = upload.apply(v);
        Tensor dg = upload.apply(g);

        Tensor out1 = upload.apply(Tensor.zeros(dt, b, l, ev));
        double[] lse1 = new double[b * l];
        gpu.forward(pd, dq, dk, dv, out1, lse1);
        Tensor out2 = upload.apply(Tensor.zeros(dt, b, l, ev));
        Tensor lse2 = upload.apply(Tensor.zeros(DType.F64, b * l));
        gpu.forwardInto(pd, dq, dk, dv, out2, lse2);
        Assertions.assertClose(download.apply(out1), download.apply(out2), 0, 0,
            "forwardInto output " + what);
        assertArrayEquals(lse1, download.apply(lse2).toDoubleArray(), 0.0, "forwardInto lse " + what);
        Tensor outC = Tensor.zeros(dt, b, l, ev);
        cpu.forward(pc, q, k, v, outC, new double[b * l]);
        Assertions.assertClose(outC, download.apply(out2), tol, tol, "forwardInto against the CPU " + what);

        Tensor[] g1 = {upload.apply(Tensor.zeros(dt, b, l, e)), upload.apply(Tensor.zeros(dt, b, s, e)),
            upload.apply(Tensor.zeros(dt, b, s, ev))};
        Tensor[] g2 = {upload.apply(Tensor.zeros(dt, b, l, e)), upload.apply(Tensor.zeros(dt, b, s, e)),
            upload.apply(Tensor.zeros(dt, b, s, ev))};
        double[] dm1 = devMask == null ? null : new double[shift + maskLen];
        gpu.backward(pd, dq, dk, dv, out1, lse1, dg, g1[0], g1[1], g1[2], dm1);
        Tensor dm2 = devMask == null ? null : upload.apply(Tensor.zeros(DType.F64, maskLen));
        gpu.backwardFrom(pd, dq, dk, dv, out2, lse2, dg, g2[0], g2[1], g2[2], dm2);
        String[] names = {"dq", "dk", "dv"};
        for (int i = 0; i < 3; i++) {
          Assertions.assertClose(download.apply(g1[i]), download.apply(g2[i]), 0, 0,
              "backwardFrom " + names[i] + " " + what);
        }
        if (dm1 != null) {
          double[] got = download.apply(dm2).toDoubleArray();
          assertArrayEquals(Arrays.copyOfRange(dm1, shift, dm1.length), got, 1e-12,
              "backwardFrom mask gradient " + what);
          double norm = 0;
          for (double x : got) norm += Math.abs(x);
          assertTrue(norm > 0, "the mask gradient is not all zero " + what);
        }
      }
    }
  }

  @Test
  void opsOnCudaAgreeWithTheCpu() {
    Gpu.assumeDevice();
    HostFallback.resetCalls();
    ops(CUDA);
    OnDevice.assertNoHostFallback("attention");
  }

  @Test
  void opsOnTheFakeDeviceAgreeWithTheCpu() {
    ops(FAKE);
  }

  private static Tensor on(Tensor t, Device d, boolean grad) {
    if (t == null) return null;
    Tensor m = t.to(d);
    if (m == t) m = t.clone();
    return grad ? m.requiresGrad(true) : m;
  }

  /** The tiled path (AUTO above 4096 scores, and asked for) through the op with gradients, against the CPU. */
  private static void ops(Device dev) {
    Kernel auto = new Kernel(Attention.Path.AUTO, 64, 128, 4096);
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      // GPU scores and sums are in double, the CPU's float32 ones in float lanes
      double tol = dt == DType.F32 ? 5e-5 : 1e-10;
      // {batch, heads, l, s, e, causal, window, mask: 0 none, 1 float [l, s] with a gradient, 2 bool [b, 1, l, s]}
      int[][] cases = {{2, 4, 100, 100, 32, 1, -1, 0}, {2, 2, 150, 120, 16, 0, -1, 1}, {1, 3, 130, 130, 64, 1, -1, 1},
          {2, 2, 90, 110, 8, 0, 15, 2}};
      for (int[] c : cases) {
        Generator gen = new Generator(17);
        int b = c[0], h = c[1], l = c[2], s = c[3], e = c[4];
        String at = dev + " " + dt + " " + Arrays.toString(c);
        Tensor q = Tensor.randn(gen, b, h, l, e).to(dt);
        Tensor k = Tensor.randn(gen, b, h, s, e).to(dt);
        Tensor v = Tensor.randn(gen, b, h, s, e).to(dt);
        Tensor up = Tensor.randn(gen, b, h, l, e).to(dt);
        Tensor mask = c[7] == 1 ? Tensor.randn(gen, l, s).to(dt)
            : c[7] == 2 ? Tensor.rand(gen, b, 1, l, s).gt(0.1) : null;
        boolean maskGrad = c[7] == 1;
        Tensor[] cpu = {on(q, Device.CPU, true), on(k, Device.CPU, true), on(v, Device.CPU, true),
            on(mask, Device.CPU, maskGrad)};
        Tensor[] dvc = {on(q, dev, true), on(k, dev, true), on(v, dev, true), on(mask, dev, maskGrad)};
        for (Kernel kernel : new Kernel[] {auto, Kernel.tiled(64, 128)}) {
          for (Tensor t : cpu) if (t != null && t.requiresGrad()) t.setGrad(null);
          for (Tensor t : dvc) if (t != null && t.requiresGrad()) t.setGrad(null);
          Tensor yc = Attention.scaledDotProductAttention(cpu[0], cpu[1], cpu[2], cpu[3], 0, c[5] == 1, null, c[6],
              null, kernel);
          yc.mul(up).sum().backward();
          Tensor yd = Attention.scaledDotProductAttention(dvc[0], dvc[1], dvc[2], dvc[3], 0, c[5] == 1, null, c[6],
              null, kernel);
          yd.mul(up.to(dev)).sum().backward();
          String w = at + " " + kernel.path();
          assertEquals(dev, yd.device(), w);
          Assertions.assertClose(yc, yd.cpu(), tol, tol, w + " output");
          String[] names = {"query", "key", "value"};
          for (int i = 0; i < 3; i++) {
            Assertions.assertClose(cpu[i].grad(), dvc[i].grad().cpu(), tol * 10, tol * 10, w + " " + names[i]
                + " gradient");
          }
          // the mask's gradient sums over batch and heads
          if (maskGrad) {
            Assertions.assertClose(cpu[3].grad(), dvc[3].grad().cpu(), tol * 10, tol * 10, w + " mask gradient");
          }
        }
      }
    }
  }
}
