package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.PoolAxis;
import dev.ember.backend.PoolingKernels;
import dev.ember.cuda.lib.Cudnn;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.testing.Gpu;
import dev.ember.cuda.testing.RawDevice;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Assertions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Convolution and pooling on the GPU against the CPU's kernels; compile checks wherever NVRTC is found. */
public class CudaConvPoolTest {
  @Test
  void theKernelsCompile() {
    Gpu.assumeNvrtc();
    KernelCache.cubin("convolution", CudaConvolution.SOURCE, "sm_90");
    KernelCache.cubin("convolution_bias", CudaConvolution.BIAS_ADD, "sm_90");
    KernelCache.cubin("pooling", CudaPooling.SOURCE, "sm_90");
  }

  private static Tensor rand(Generator g, DType dt, int... shape) {
    return Tensor.rand(g, shape).sub(0.5).to(dt);
  }

  /** {n, c, o, groups, h, w, kh, kw, sh, sw, ph, pw, dh, dw}. */
  public static final int[][] CASES = {
      {2, 3, 4, 1, 9, 8, 3, 3, 1, 1, 1, 1, 1, 1},
      {3, 4, 6, 2, 11, 7, 3, 2, 2, 1, 0, 1, 1, 2},
      {1, 6, 6, 6, 10, 10, 3, 3, 1, 1, 1, 1, 1, 1},
      {4, 1, 6, 1, 28, 28, 5, 5, 1, 1, 2, 2, 1, 1},
      {2, 5, 3, 1, 6, 6, 1, 1, 1, 1, 0, 0, 1, 1}};

  @Test
  void convolutionForwardBackwardAndTransposedMatchTheCpuOnIm2col() {
    Gpu.assumeDevice();
    boolean was = CudaSettings.cudnn();
    CudaSettings.cudnn(false);
    try {
      CudaConvolution gpu = new CudaConvolution(CudaContext.of(0), CudaContext.of(0).kernels());
      assertTrue(gpu.engine().startsWith("im2col + cuBLASLt"), gpu.engine());
      matchTheCpu(gpu);
    } finally {
      CudaSettings.cudnn(was);
    }
  }

  /** The same cases through cuDNN (float32; float64 stays on im2col), where it is installed. */
  @Test
  void convolutionForwardBackwardAndTransposedMatchTheCpuOnCudnn() {
    Gpu.assumeDevice();
    Assumptions.assumeTrue(Cudnn.tryGet().isPresent(), "needs libcudnn (EMBER_CUDA_LIBRARY_PATH)");
    boolean was = CudaSettings.cudnn();
    CudaSettings.cudnn(true);
    try {
      CudaConvolution gpu = new CudaConvolution(CudaContext.of(0), CudaContext.of(0).kernels());
      System.out.println("CudaConvPoolTest: " + gpu.engine());
      assertTrue(gpu.engine().startsWith("cuDNN "), gpu.engine());
      matchTheCpu(gpu);
    } finally {
      CudaSettings.cudnn(was);
    }
  }

  /** cuDNN's chosen algorithms are deterministic: the same gradients, bit for bit, on a second run. */
  @Test
  void cudnnGradientsAreTheSameBitsEveryRun() {
    Gpu.assumeDevice();
    Assumptions.assumeTrue(Cudnn.tryGet().isPresent(), "needs libcudnn (EMBER_CUDA_LIBRARY_PATH)");
    CudaContext ctx = CudaContext.of(0);
    CudaConvolution gpu = new CudaConvolution(ctx, ctx.kernels());
    Generator gen = new Generator(3);
    for (DType dt : new DType[] {DType.F32, DType.BF16}) {
      ConvGeometry g = new ConvGeometry(16, 16, 3, 3, 1, 1, 1, 1, 1, 1, 16, 16);
      Tensor x = RawDevice.upload(ctx, rand(gen, dt, 32, 16, 16, 16));
      Tensor w = RawDevice.upload(ctx, rand(gen, dt, 32, 16, 3, 3));
      Tensor go = RawDevice.upload(ctx, rand(gen, dt, 32, 32, 16, 16));
      Tensor[] first = null;
      for (int run = 0; run < 2; run++) {
        Tensor dx = RawDevice.upload(ctx, Tensor.zeros(dt, 32, 16, 16, 16));
        Tensor dw = RawDevice.upload(ctx, Tensor.zeros(dt, 32, 16, 3, 3));
        gpu.backward(x, w, go, 1, g, dx, dw, null);
        Tensor[] now = {RawDevice.download(ctx, dx), RawDevice.download(ctx, dw)};
        if (first == null) {
          first = now;
        } else {
          Assertions.assertClose(first[0], now[0], 0, 0, dt + " input gradient, second run");
          Assertions.assertClose(first[1], now[1], 0, 0, dt + " weight gradient, second run");
        }
      }
    }
  }

  private static void matchTheCpu(ConvolutionKernels gpu) {
    CudaContext ctx = CudaContext.of(0);
    ConvolutionKernels cpu = Device.CPU.backend().convolution();
    Generator gen = new Generator(11);
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      double tol = dt == DType.F32 ? 2e-5 : 1e-12;
      for (int[] k : CASES) {
        int n = k[0], c = k[1], o = k[2], groups = k[3], h = k[4], w = k[5];
        int oh = (h + 2 * k[10] - k[12] * (k[6] - 1) - 1) / k[8] + 1;
        int ow = (w + 2 * k[11] - k[13] * (k[7] - 1) - 1) / k[9] + 1;
        ConvGeometry g = new ConvGeometry(h, w, k[6], k[7], k[8], k[9], k[10], k[11], k[12], k[13], oh, ow);
        String what = dt + " case " + java.util.Arrays.toString(k);
        Tensor x = rand(gen, dt, n, c, h, w);
        Tensor wt = rand(gen, dt, o, c / groups, k[6], k[7]);
        Tensor bias = rand(gen, dt, o);
        Tensor out = Tensor.zeros(dt, n, o, oh, ow);
        cpu.forward(x, wt, bias, groups, g, out, null);
        Tensor dOut = RawDevice.upload(ctx, Tensor.zeros(dt, n, o, oh, ow));
        Tensor dx = RawDevice.upload(ctx, x);
        Tensor dw = RawDevice.upload(ctx, wt);
        gpu.forward(dx, dw, RawDevice.upload(ctx, bias), groups, g, dOut, gpu.newSavedColumns());
        Assertions.assertClose(out, RawDevice.download(ctx, dOut), tol, tol, "forward " + what);

        Tensor go = rand(gen, dt, n, o, oh, ow);
        Tensor gx = Tensor.zeros(dt, n, c, h, w);
        Tensor gw = Tensor.zeros(dt, o, c / groups, k[6], k[7]);
        cpu.backward(x, wt, go, groups, g, gx, gw, null);
        Tensor dgx = RawDevice.upload(ctx, Tensor.zeros(dt, n, c, h, w));
        Tensor dgw = RawDevice.upload(ctx, Tensor.zeros(dt, o, c / groups, k[6], k[7]));
        Tensor dgo = RawDevice.upload(ctx, go);
        gpu.backward(dx, dw, dgo, groups, g, dgx, dgw, null);
        Assertions.assertClose(gx, RawDevice.download(ctx, dgx), tol, tol, "input gradient " + what);
        Assertions.assertClose(gw, RawDevice.download(ctx, dgw), tol * 10, tol, "weight gradient " + what);
        double[] sums = gpu.channelSums(dgo, n, o, oh * ow);
        double[] ref = cpu.channelSums(go, n, o, oh * ow);
        // the CPU sums a float32 plane in float lanes, the GPU in double: float rounding apart
        double sumTol = dt == DType.F32 ? 1e-5 : 1e-9;
        for (int i = 0; i < o; i++) {
          org.junit.jupiter.api.Assertions.assertEquals(ref[i], sums[i], sumTol * Math.max(1, Math.abs(ref[i])),
              "bias grad " + what);
        }

        // transposed: x' [n, o, oh, ow] -> [n, c, h, w] with w' [o, c/groups, kh, kw]
        Tensor wT = rand(gen, dt, o, c / groups, k[6], k[7]);
        Tensor xT = rand(gen, dt, n, o, oh, ow);
        Tensor bT = rand(gen, dt, c);
        Tensor yT = Tensor.zeros(dt, n, c, h, w);
        cpu.transposedForward(xT, wT, bT, groups, g, yT);
        Tensor dyT = RawDevice.upload(ctx, Tensor.zeros(dt, n, c, h, w));
        Tensor dxT = RawDevice.upload(ctx, xT);
        Tensor dwT = RawDevice.upload(ctx, wT);
        gpu.transposedForward(dxT, dwT, RawDevice.upload(ctx, bT), groups, g, dyT);
        Assertions.assertClose(yT, RawDevice.download(ctx, dyT), tol, tol, "transposed forward " + what);
        Tensor gT = rand(gen, dt, n, c, h, w);
        Tensor gxT = Tensor.zeros(dt, n, o, oh, ow);
        Tensor gwT = Tensor.zeros(dt, o, c / groups, k[6], k[7]);
        cpu.transposedBackward(xT, wT, gT, groups, g, gxT, gwT);
        Tensor dgxT = RawDevice.upload(ctx, Tensor.zeros(dt, n, o, oh, ow));
        Tensor dgwT = RawDevice.upload(ctx, Tensor.zeros(dt, o, c / groups, k[6], k[7]));
        gpu.transposedBackward(dxT, dwT, RawDevice.upload(ctx, gT), groups, g, dgxT, dgwT);
        Assertions.assertClose(gxT, RawDevice.download(ctx, dgxT), tol, tol, "transposed input grad " + what);
        Assertions.assertClose(gwT, RawDevice.download(ctx, dgwT), tol * 10, tol, "transposed weight grad " + what);
      }
    }
  }

  /** The windows of a plain pooling: kernel k, stride s, padding p, dilation d over n inputs. */
  static PoolAxis axis(int n, int k, int s, int p, int d, boolean avg) {
    int out = (n + 2 * p - d * (k - 1) - 1) / s + 1;
    int[] start = new int[out];
    int[] end = new int[out];
    double[] div = avg ? new double[out] : null;
    for (int o = 0; o < out; o++) {
      int lo = o * s - p;
      int first = lo;
      while (first < 0) first += d;
      start[o] = first;
      end[o] = Math.min(n, lo + d * (k - 1) + 1);
      if (avg) div[o] = k;
    }
    return new PoolAxis(n, out, start, end, d, div);
  }

  @Test
  void poolingHasTheCpusBits() {
    Gpu.assumeDevice();
    CudaContext ctx = CudaContext.of(0);
    PoolingKernels cpu = Device.CPU.backend().pooling();
    PoolingKernels gpu = new CudaPooling(ctx, ctx.kernels());
    Generator gen = new Generator(5);
    int[][] cases = {{12, 12, 2, 2, 0, 1}, {13, 9, 3, 2, 1, 1}, {10, 11, 3, 1, 1, 2}};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      for (int[] k : cases) {
        int planes = 7;
        PoolAxis h = axis(k[0], k[2], k[3], k[4], k[5], false);
        PoolAxis w = axis(k[1], k[2], k[3], k[4], k[5], false);
        Tensor x = rand(gen, dt, planes, k[0], k[1]);
        if (dt == DType.F32) x.storage().floats()[17] = Float.NaN;
        Tensor y = Tensor.zeros(dt, planes, h.out(), w.out());
        Tensor arg = Tensor.zeros(DType.I32, planes, h.out(), w.out());
        cpu.maxForward(x, planes, h, w, y, arg);
        Tensor dy = RawDevice.upload(ctx, Tensor.zeros(dt, planes, h.out(), w.out()));
        Tensor darg = RawDevice.upload(ctx, Tensor.zeros(DType.I32, planes, h.out(), w.out()));
        gpu.maxForward(RawDevice.upload(ctx, x), planes, h, w, dy, darg);
        Assertions.assertClose(y, RawDevice.download(ctx, dy), 0, 0, "max " + dt);
        Assertions.assertClose(arg, RawDevice.download(ctx, darg), 0, 0, "argmax " + dt);
        Tensor g = rand(gen, dt, planes, h.out(), w.out());
        Tensor gx = Tensor.zeros(dt, planes, k[0], k[1]);
        cpu.maxBackward(g, arg, planes, k[0] * k[1], h.out() * w.out(), gx);
        Tensor dgx = RawDevice.upload(ctx, Tensor.zeros(dt, planes, k[0], k[1]));
        gpu.maxBackward(RawDevice.upload(ctx, g), darg, planes, k[0] * k[1], h.out() * w.out(), dgx);
        Assertions.assertClose(gx, RawDevice.download(ctx, dgx), 0, 0, "max backward " + dt);

        if (k[5] != 1) continue; // average pooling is undilated
        PoolAxis ha = axis(k[0], k[2], k[3], k[4], 1, true);
        PoolAxis wa = axis(k[1], k[2], k[3], k[4], 1, true);
        Tensor xa = rand(gen, dt, planes, k[0], k[1]);
        Tensor ya = Tensor.zeros(dt, planes, ha.out(), wa.out());
        cpu.avgForward(xa, planes, ha, wa, ya);
        Tensor dya = RawDevice.upload(ctx, Tensor.zeros(dt, planes, ha.out(), wa.out()));
        gpu.avgForward(RawDevice.upload(ctx, xa), planes, ha, wa, dya);
        Assertions.assertClose(ya, RawDevice.download(ctx, dya), 0, 0, "avg " + dt);
        Tensor ga = rand(gen, dt, planes, ha.out(), wa.out());
        Tensor gxa = Tensor.zeros(dt, planes, k[0], k[1]);
        cpu.avgBackward(ga, planes, ha, wa, gxa);
        Tensor dgxa = RawDevice.upload(ctx, Tensor.zeros(dt, planes, k[0], k[1]));
        gpu.avgBackward(RawDevice.upload(ctx, ga), planes, ha, wa, dgxa);
        Assertions.assertClose(gxa, RawDevice.download(ctx, dgxa), 0, 0, "avg backward " + dt);
      }
    }
  }
}
