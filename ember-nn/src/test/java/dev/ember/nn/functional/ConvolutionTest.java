package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import dev.ember.testing.PoolChecks;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * conv1d/conv2d, conv_transpose2d and pad beyond the op table (NnOpTable holds their float64 gradchecks):
 * depthwise against the grouped GEMM path and in float32, exact error messages, and bitwise equality of
 * forward and backward on 1 and 2 threads. Values against PyTorch are in ConvolutionFixtureTest.
 */
class ConvolutionTest {
  private static int[] a(int... v) {
    return v;
  }

  @Test
  void depthwiseMatchesTheGroupedGemmPath() {
    // groups == C routes to the direct kernel; the same product as a block-diagonal dense weight goes through GEMM
    Tensor x = Tensor.randn(new Generator(1), DType.F64, 2, 3, 7, 6);
    Tensor w = Tensor.randn(new Generator(2), DType.F64, 6, 1, 3, 3);
    Tensor dense = Tensor.zeros(DType.F64, 6, 3, 3, 3);
    for (int o = 0; o < 6; o++) dense.select(0, o).select(0, o / 2).copy_(w.select(0, o).select(0, 0));
    Tensor direct = Convolution.conv2d(x, w, null, a(2, 1), a(1), a(1, 2), 3);
    Tensor gemm = Convolution.conv2d(x, dense, null, a(2, 1), a(1), a(1, 2), 1);
    dev.ember.testing.Assertions.assertClose(gemm, direct, 1e-12, 1e-12, "depthwise vs dense");
  }

  /**
   * Float32 depthwise layers against the same layer in float64, forward and every gradient: the stride-1
   * shapes take the direct kernel over padded planes (rows of 56 and 45 are wider than one block of it,
   * 7 narrower than a vector; "valid" and asymmetric padding; two output channels per input channel),
   * the strided and dilated ones the per-tap loops.
   */
  @Test
  void depthwiseFloat32MatchesFloat64() {
    int[][] cases = { // c, mult, h, w, kh, kw, stride, pad h, pad w, dilation
        {3, 1, 56, 56, 3, 3, 1, 1, 1, 1}, {2, 1, 9, 45, 3, 3, 1, 1, 1, 1}, {2, 2, 6, 7, 3, 3, 1, 0, 1, 1},
        {2, 1, 12, 33, 5, 5, 1, 2, 2, 1}, {1, 1, 8, 20, 7, 7, 1, 3, 3, 1}, {2, 1, 10, 10, 3, 3, 1, 0, 0, 1},
        {2, 1, 11, 13, 3, 3, 2, 1, 1, 1}, {2, 1, 11, 13, 3, 3, 1, 2, 2, 2}};
    for (int[] k : cases) {
      int c = k[0], o = c * k[1];
      String what = java.util.Arrays.toString(k);
      Tensor x = Tensor.randn(new Generator(k[2] + k[3]), DType.F64, 2, c, k[2], k[3]);
      Tensor w = Tensor.randn(new Generator(5), DType.F64, o, 1, k[4], k[5]);
      Tensor b = Tensor.randn(new Generator(6), DType.F64, o);
      Tensor[] ref = depthwiseStep(x, w, b, k, c);
      Tensor[] got = depthwiseStep(x.to(DType.F32), w.to(DType.F32), b.to(DType.F32), k, c);
      String[] names = {"output", "input gradient", "weight gradient", "bias gradient"};
      for (int i = 0; i < ref.length; i++) {
        dev.ember.testing.Assertions.assertClose(ref[i], got[i].to(DType.F64), 1e-4, 1e-4, names[i] + " " + what);
      }
    }
  }

  private static Tensor[] depthwiseStep(Tensor x, Tensor w, Tensor b, int[] k, int c) {
    Tensor xi = x.detach().requiresGrad(true), wi = w.detach().requiresGrad(true), bi = b.detach().requiresGrad(true);
    Tensor y = Convolution.conv2d(xi, wi, bi, a(k[6]), a(k[7], k[8]), a(k[9]), c);
    Tensor up = Tensor.randn(new Generator(7), DType.F64, y.shape()).to(x.dtype());
    y.backward(up);
    return new Tensor[] {y.detach(), xi.grad(), wi.grad(), bi.grad()};
  }

  // ------------------------------------------------------------------ errors

  private static void assertError(String expected, Supplier<Tensor> call) {
    TensorArgumentException e = assertThrows(TensorArgumentException.class, call::get);
    assertEquals(expected, e.getMessage());
  }

  @Test
  void errorsNameTheOpAndShapes() {
    assertError("conv2d: input channels (3) must equal weight.size(1) * groups (2 * 2 = 4): input=[1, 3, 5, 5], "
        + "weight=[4, 2, 3, 3]", () -> Convolution.conv2d(Tensor.zeros(1, 3, 5, 5), Tensor.zeros(4, 2, 3, 3), null,
            a(1), a(0), a(1), 2));
    assertError("conv2d: kernel size (dilated) [5, 5] is larger than the padded input [4, 4]: input=[1, 1, 2, 2], "
        + "weight=[1, 1, 5, 5]", () -> Convolution.conv2d(Tensor.zeros(1, 1, 2, 2), Tensor.zeros(1, 1, 5, 5), null,
            a(1), a(1), a(1), 1));
    assertError("conv2d: out_channels (weight.size(0) = 6) must be divisible by groups (4): input=[1, 4, 5, 5], "
        + "weight=[6, 1, 3, 3]", () -> Convolution.conv2d(Tensor.zeros(1, 4, 5, 5), Tensor.zeros(6, 1, 3, 3), null,
            a(1), a(0), a(1), 4));
    assertError("conv1d: kernel size (dilated) [7] is larger than the padded input [6]: input=[2, 1, 4], "
        + "weight=[1, 1, 4]", () -> Convolution.conv1d(Tensor.zeros(2, 1, 4), Tensor.zeros(1, 1, 4), null, 1, 1, 2,
            1));
    assertError("conv2d: expected a 3-d (unbatched) or 4-d (batched) input, got rank 2: input=[3, 5], "
        + "weight=[1, 3, 1, 1]", () -> Convolution.conv2d(Tensor.zeros(3, 5), Tensor.zeros(1, 3, 1, 1), null));
    assertError("conv2d: padding='same' is not supported for strided convolutions (stride [2, 2]): "
        + "input=[1, 1, 5, 5], weight=[1, 1, 3, 3]", () -> Convolution.conv2d(Tensor.zeros(1, 1, 5, 5),
            Tensor.zeros(1, 1, 3, 3), null, a(2), "same", a(1), 1));
    assertError("conv2d: bias must have out_channels = 2 elements: input=[1, 1, 3, 3], weight=[2, 1, 1, 1], bias=[3]",
        () -> Convolution.conv2d(Tensor.zeros(1, 1, 3, 3), Tensor.zeros(2, 1, 1, 1), Tensor.zeros(3)));
    assertError("conv_transpose2d: input channels (3) must equal weight.size(0) (4): input=[1, 3, 2, 2], "
        + "weight=[4, 2, 3, 3]", () -> Convolution.convTranspose2d(Tensor.zeros(1, 3, 2, 2), Tensor.zeros(4, 2, 3, 3),
            null));
    assertError("conv_transpose2d: output_padding must be smaller than either stride or dilation "
        + "(output_padding=[1, 1], stride=[1, 1], dilation=[1, 1]): input=[1, 2, 2, 2], weight=[2, 2, 3, 3]",
        () -> Convolution.convTranspose2d(Tensor.zeros(1, 2, 2, 2), Tensor.zeros(2, 2, 3, 3), null, a(1), a(0), a(1),
            1, a(1)));
    assertError("pad: reflect padding (3, 0) must be smaller than dim 2 (size 3): input=[1, 2, 3]",
        () -> Padding.pad(Tensor.zeros(1, 2, 3), a(3, 0), "reflect"));
  }

  // ------------------------------------------------------------------ determinism

  private static Tensor[] convStep(int n, int c, int o, int k, int groups, int stride) {
    Tensor x = Tensor.randn(new Generator(7), n, c, 20, 18).requiresGrad(true);
    Tensor w = Tensor.randn(new Generator(8), o, c / groups, k, k).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(9), o).requiresGrad(true);
    Tensor y = Convolution.conv2d(x, w, b, a(stride), a(1), a(1), groups);
    y.backward(Tensor.randn(new Generator(10), y.shape()));
    return new Tensor[] {y, x.grad(), w.grad(), b.grad()};
  }

  private static Tensor[] conv1dStep() {
    Tensor x = Tensor.randn(new Generator(7), 5, 32, 77).requiresGrad(true);
    Tensor w = Tensor.randn(new Generator(8), 40, 32, 3).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(9), 40).requiresGrad(true);
    Tensor y = Convolution.conv1d(x, w, b, 1, 1, 1, 1);
    y.backward(Tensor.randn(new Generator(10), y.shape()));
    return new Tensor[] {y, x.grad(), w.grad(), b.grad()};
  }

  private static Tensor[] convTStep() {
    Tensor x = Tensor.randn(new Generator(7), 5, 8, 9, 9).requiresGrad(true);
    Tensor w = Tensor.randn(new Generator(8), 8, 12, 3, 3).requiresGrad(true);
    Tensor y = Convolution.convTranspose2d(x, w, null, a(2), a(1), a(1), 2, a(1));
    y.backward(Tensor.randn(new Generator(10), y.shape()));
    return new Tensor[] {y, x.grad(), w.grad()};
  }

  /**
   * One conv_transpose2d step on x [n, cin, h, w] and weight [cin, o, k, k] (stride s, padding p, output padding op)
   * with bias, in dtype dt from the same float32-rounded values: y and the three gradients.
   */
  private static Tensor[] convTPhaseStep(DType dt, int n, int cin, int o, int h, int w, int k, int s, int p, int op) {
    Tensor x = Tensor.randn(new Generator(7), n, cin, h, w).to(dt).requiresGrad(true);
    Tensor wt = Tensor.randn(new Generator(8), cin, o, k, k).to(dt).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(9), o).to(dt).requiresGrad(true);
    Tensor y = Convolution.convTranspose2d(x, wt, b, a(s), a(p), a(op), 1, a(1));
    y.backward(Tensor.randn(new Generator(10), y.shape()).to(dt));
    return new Tensor[] {y, x.grad(), wt.grad(), b.grad()};
  }

  /**
   * The float32 path by output phase (stride dividing the kernel, 8+ channels) against float64, whose gradients the
   * op table checks against central differences on the same geometries: values and all three gradients, with and
   * without output padding, one and several taps per phase, and a stride of 3.
   */
  @Test
  void phasePathMatchesFloat64() {
    int[][] cases = { // n, cin, o, h, w, k, s, p, output padding
        {3, 16, 12, 7, 6, 4, 2, 1, 0}, {2, 8, 10, 5, 5, 4, 2, 1, 1}, {2, 12, 8, 6, 7, 2, 2, 0, 0},
        {2, 8, 9, 4, 3, 6, 3, 2, 1}, {1, 24, 8, 9, 9, 4, 2, 3, 0}};
    for (int[] c : cases) {
      Tensor[] f = convTPhaseStep(DType.F32, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]);
      Tensor[] d = convTPhaseStep(DType.F64, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8]);
      String[] names = {"y", "dx", "dw", "db"};
      for (int i = 0; i < f.length; i++) {
        double[] got = f[i].toDoubleArray();
        double[] want = d[i].toDoubleArray();
        assertEquals(want.length, got.length);
        double scale = 0;
        for (double v : want) scale = Math.max(scale, Math.abs(v));
        for (int e = 0; e < got.length; e++) {
          if (!(Math.abs(got[e] - want[e]) <= 1e-5 * scale + 1e-5 * Math.abs(want[e]))) {
            throw new AssertionError(java.util.Arrays.toString(c) + " " + names[i] + " element " + e + ": " + got[e]
                + " (float32) vs " + want[e] + " (float64)");
          }
        }
      }
    }
  }

  private static void assertSameBits(String what, Supplier<Tensor[]> run) {
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      Tensor[] one = run.get();
      Parallel.setThreads(2);
      Tensor[] two = run.get();
      for (int i = 0; i < one.length; i++) {
        float[] p = one[i].toFloatArray();
        float[] q = two[i].toFloatArray();
        assertEquals(p.length, q.length);
        for (int e = 0; e < p.length; e++) {
          if (Float.floatToRawIntBits(p[e]) != Float.floatToRawIntBits(q[e])) {
            throw new AssertionError(what + " result " + i + " element " + e + ": " + p[e] + " (1 thread) vs " + q[e]
                + " (2 threads)");
          }
        }
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  /** One F32 step: x [n, c, h, w] (with or without grad), weight [o, c, k, k], bias; returns y and the grads. */
  private static Tensor[] f32Step(int n, int c, int o, int h, int w, int k, int stride, int pad, boolean xGrad,
      DType dt) {
    // drawn in float64 and cast, so both types see the same values (float32 draws differ)
    Tensor x = Tensor.randn(new Generator(11), DType.F64, n, c, h, w).to(dt).requiresGrad(xGrad);
    Tensor wt = Tensor.randn(new Generator(12), DType.F64, o, c, k, k).to(dt).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(13), DType.F64, o).to(dt).requiresGrad(true);
    Tensor y = Convolution.conv2d(x, wt, b, a(stride), a(pad), a(1), 1);
    y.backward(Tensor.randn(new Generator(14), DType.F64, y.shape()).to(dt));
    return xGrad ? new Tensor[] {y, wt.grad(), b.grad(), x.grad()} : new Tensor[] {y, wt.grad(), b.grad()};
  }

  /**
   * The float32 one-group paths (the direct kernels for few input channels, the implicit GEMM for
   * stride-1 layers with more, the blocks of images side by side for the rest) against float64,
   * which keeps the per-image GEMMs: LeNet's two layers, widths on both sides of one and two
   * vectors, batches that do not fill the last block, part-filled channel tiles.
   */
  @Test
  void float32DirectAndBlockedPathsMatchFloat64() {
    int[][] cases = { // n, c, o, h, w, k, stride, pad, xGrad
        {19, 1, 6, 28, 28, 5, 1, 2, 0}, // LeNet conv1: direct forward and weight gradient
        {5, 3, 4, 9, 7, 3, 1, 1, 0}, // direct, one vector (ow 7)
        {3, 2, 5, 6, 17, 3, 1, 1, 0}, // direct, ow 17 (just past one AVX-512 vector)
        {3, 4, 3, 5, 32, 1, 1, 0, 0}, // direct, ow 32 (two full vectors), 1x1 kernel without padding
        {4, 3, 3, 6, 30, 3, 1, 2, 0}, // direct, ow 32 from padding
        {3, 2, 5, 8, 9, 3, 1, 1, 1}, // direct forward, blocked backward (x needs its gradient)
        {13, 6, 16, 14, 14, 5, 1, 0, 1}, // LeNet conv2: implicit, 44% extra positions (16 channels allow 2x)
        {7, 5, 3, 11, 10, 3, 2, 1, 1}, // blocked, strided and padded
        {2, 3, 4, 5, 40, 3, 1, 1, 0}, // ow 40: too wide for the direct kernels, blocked
        {3, 8, 12, 10, 16, 3, 1, 1, 1}, // implicit, a slot per row; 12 channels: a part-filled tile
        {2, 6, 9, 12, 30, 3, 1, 0, 1}, // implicit, unpadded: forward in one run of slots, input gradient by rows
        {2, 5, 16, 7, 41, 5, 1, 2, 1}, // implicit, 5x5 taps, two full tiles, one run of slots
        {2, 5, 4, 6, 30, 3, 1, 3, 1}, // implicit forward; padding past kh - 1: blocked input gradient
        {2, 6, 3, 6, 7, 3, 1, 1, 1}, // 7 wide, 3 filters: 64 positions for 42, within the 2x of few channels
        {2, 6, 3, 5, 4, 3, 1, 0, 1}, // 2 wide: 16 positions for 6 is too many, blocked forward; implicit input gradient
        {2, 6, 40, 6, 7, 3, 1, 1, 1}, // 40 filters: 64 positions for 42 is too many, blocked forward
        {3, 3, 32, 8, 16, 3, 1, 1, 0}, // RGB input, 32 filters: implicit forward and weight gradient alone
        {2, 8, 16, 6, 16, 3, 1, 1, 1}, // implicit, whole tiles and rows of whole vectors: both passes write the planes
    };
    for (int[] t : cases) {
      String what = java.util.Arrays.toString(t);
      Tensor[] f = f32Step(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8] == 1, DType.F32);
      Tensor[] d = f32Step(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8] == 1, DType.F64);
      String[] names = {"y", "dW", "db", "dx"};
      for (int i = 0; i < f.length; i++) {
        dev.ember.testing.Assertions.assertClose(d[i].to(DType.F32), f[i], 2e-4, 2e-4, what + " " + names[i]);
      }
    }
  }

  @Test
  void resultsAreBitwiseTheSameOnOneAndTwoThreads() {
    assertSameBits("conv2d direct (LeNet conv1, 3 weight chunks)", () -> f32Step(19, 1, 6, 28, 28, 5, 1, 2, false,
        DType.F32));
    assertSameBits("conv2d implicit (LeNet conv2)", () -> f32Step(19, 6, 16, 14, 14, 5, 1, 0, true, DType.F32));
    assertSameBits("conv2d blocks of images (strided, uneven last block)", () -> f32Step(19, 6, 16, 14, 14, 5, 2, 0,
        true, DType.F32));
    assertSameBits("conv2d implicit GEMM (VGG-like, 11 images: weight chunks of 2 blocks)", () -> f32Step(11, 16, 24,
        32, 32, 3, 1, 1, true, DType.F32));
    assertSameBits("conv2d batch 6 (GEMM per image, 6 weight chunks)", () -> convStep(6, 16, 32, 3, 1, 1));
    assertSameBits("conv2d batch 11 (uneven chunks)", () -> convStep(11, 4, 6, 3, 2, 2));
    assertSameBits("conv2d single image (threaded im2col and GEMM)", () -> convStep(1, 16, 32, 3, 1, 1));
    assertSameBits("depthwise", () -> convStep(4, 8, 16, 3, 8, 1));
    assertSameBits("conv1d kernel 3 (Winograd F(4,3))", ConvolutionTest::conv1dStep);
    assertSameBits("conv_transpose2d", ConvolutionTest::convTStep);
    assertSameBits("conv_transpose2d by phase (k4 s2 p1, 9 images in 5 weight chunks)",
        () -> convTPhaseStep(DType.F32, 9, 16, 12, 7, 6, 4, 2, 1, 0));
    assertSameBits("conv_transpose2d by phase, one image (a task per phase)",
        () -> convTPhaseStep(DType.F32, 1, 16, 12, 7, 6, 4, 2, 1, 1));
  }

  @Test
  void unbatchedInputGivesUnbatchedOutput() {
    Tensor y = Convolution.conv1d(Tensor.zeros(3, 10), Tensor.zeros(4, 3, 3), null, 2, 1, 1, 1);
    assertArrayEquals(new int[] {4, 5}, y.shape());
    Tensor z = Convolution.convTranspose2d(Tensor.zeros(3, 4, 4), Tensor.zeros(3, 5, 3, 3), null, a(2), a(1), a(1), 1,
        a(1));
    assertArrayEquals(new int[] {5, 8, 8}, z.shape());
  }

  /**
   * conv2d's output is uninitialized (no zero-fill of a pooled array), so every forward path must write
   * each element: with the pool holding only NaN-filled arrays of each output's length, scoped
   * outputs are bitwise the unscoped ones. Paths: implicit (8 -> 32 channels), direct (3 input
   * channels), blocked (stride 2), per-group GEMMs, depthwise and 1x1; each with and without bias.
   */
  @Test
  void everyForwardPathWritesEachOutputElement() {
    int[][][] cases = { // x, w, stride, padding, groups
        {a(2, 8, 6, 6), a(32, 8, 3, 3), a(1), a(1), a(1)},
        {a(2, 3, 8, 8), a(4, 3, 3, 3), a(1), a(1), a(1)},
        {a(2, 5, 7, 7), a(6, 5, 3, 3), a(2), a(1), a(1)},
        {a(2, 4, 5, 5), a(6, 2, 3, 3), a(1), a(1), a(2)},
        {a(2, 3, 6, 5), a(3, 1, 3, 3), a(1), a(1), a(3)},
        {a(2, 4, 3, 3), a(2, 4, 1, 1), a(1), a(0), a(1)}};
    Supplier<float[][]> run = () -> {
      Generator g = new Generator(9);
      float[][] outs = new float[2 * cases.length][];
      for (int i = 0; i < cases.length; i++) {
        int[][] cs = cases[i];
        Tensor x = Tensor.randn(g, cs[0]);
        Tensor w = Tensor.randn(g, cs[1]);
        Tensor b = Tensor.randn(g, cs[1][0]);
        outs[2 * i] = Convolution.conv2d(x, w, b, cs[2], cs[3], a(1), cs[4][0]).toFloatArray();
        outs[2 * i + 1] = Convolution.conv2d(x, w, null, cs[2], cs[3], a(1), cs[4][0]).toFloatArray();
      }
      return outs;
    };
    PoolChecks.assertEveryElementWritten(run, 4); // outputs 2i and 2i + 1: case i with and without bias
  }
}
