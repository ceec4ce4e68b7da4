package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.autograd.Grad;
import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Pooling and interpolation beyond the op table (NnOpTable holds their float64 gradchecks): error messages, the output-size rules,
 * unbatched and empty-batch inputs, and bitwise determinism on 1 and 2 threads. Values against
 * PyTorch are in {@link PoolingFixtureTest}.
 */
class PoolingTest {
  private static final int[] Z = {0};
  private static final int[] ONE = {1};

  private static int[] a(int... v) {
    return v;
  }

  // ================================================================== semantics

  @Test
  void ceilModeDropsAWindowStartingInTheRightPadding() {
    // in 5, k 2, s 2, p 1: floor mode 3 windows; ceil mode would give 4, but the 4th starts at 5 = in + pad - 1 + 1
    assertEquals(3, Pooling.outputSize(5, 2, 2, 1, 1, true));
    assertEquals(3, Pooling.outputSize(5, 2, 2, 1, 1, false));
    assertEquals(4, Pooling.outputSize(6, 2, 2, 1, 1, true));
    assertEquals(3, Pooling.outputSize(7, 3, 2, 0, 1, false));
    assertEquals(3, Pooling.outputSize(8, 3, 2, 0, 1, false));
    assertEquals(4, Pooling.outputSize(8, 3, 2, 0, 1, true));
    Tensor x = Tensor.randn(new Generator(1), 1, 1, 5, 5);
    assertArrayEquals(a(1, 1, 3, 3), Pooling.maxPool2d(x, a(2), a(2), a(1), ONE, true).shape());
  }

  @Test
  void emptyBatchGivesEmptyOutputAndGradient() {
    Tensor x = Tensor.zeros(DType.F32, 0, 3, 4, 4).requiresGrad(true);
    Tensor y = Pooling.maxPool2d(x, 2);
    assertArrayEquals(a(0, 3, 2, 2), y.shape());
    y.sum().backward();
    assertArrayEquals(a(0, 3, 4, 4), x.grad().shape());
    assertArrayEquals(a(0, 3, 2, 2), Pooling.avgPool2d(x, 2).shape());
    assertArrayEquals(a(0, 3, 1, 1), Pooling.adaptiveAvgPool2d(x, 1).shape());
  }

  @Test
  void nonContiguousInputIsPooledAsItsValues() {
    Tensor base = Tensor.randn(new Generator(5), 2, 6, 3, 6); // permuted to [2, 3, 6, 6]
    Tensor x = base.permute(0, 2, 1, 3);
    assertFalse(x.isContiguous());
    assertClose(Pooling.maxPool2d(x.contiguous(), 2), Pooling.maxPool2d(x, 2), 0, 0, "max non-contiguous");
    assertClose(Pooling.avgPool2d(x.contiguous(), 3), Pooling.avgPool2d(x, 3), 0, 0, "avg non-contiguous");
  }

  @Test
  void maxPoolWithoutGradKeepsNoIndicesButGivesTheSameValues() {
    Tensor x = Tensor.randn(new Generator(6), 2, 3, 9, 9);
    Tensor withGrad = Pooling.maxPool2d(x.clone().requiresGrad(true), a(3), a(2), a(1), ONE, false);
    Tensor plain;
    try (var ignored = Grad.off()) {
      plain = Pooling.maxPool2d(x, a(3), a(2), a(1), ONE, false);
    }
    assertClose(withGrad.detach(), plain, 0, 0, "max pool with and without the argmax");
  }

  @Test
  void maxPoolOfAllMinusInfinityRoutesTheGradientToTheFirstTap() {
    Tensor x = Tensor.full(Double.NEGATIVE_INFINITY, DType.F64, 1, 1, 2, 2).requiresGrad(true);
    Pooling.WithIndices r = Pooling.maxPool2dWithIndices(x, a(2), null, Z, ONE, false);
    assertEquals(Double.NEGATIVE_INFINITY, r.values().item());
    assertEquals(0, r.indices().getLong(0, 0, 0, 0));
    r.values().backward(Tensor.ones(DType.F64, 1, 1, 1, 1));
    assertArrayEquals(new double[] {1, 0, 0, 0}, x.grad().toDoubleArray());
  }

  /**
   * 2x2 stride-2 windows that tile a float32 input take the backward that zeroes each plane of an unfilled gradient
   * itself before the scatter: each argmax gets 0 + g (a -0 upstream value gives +0, a NaN stays NaN), every other
   * element 0; the maxima, indices and gradient are written in full (NaN-filled pool arrays) and bitwise the same on
   * 1 and 2 threads.
   */
  @Test
  void tiledMaxPoolBackwardWritesEveryElementAsTheScatter() {
    int[] shape = {3, 4, 8, 10};
    Supplier<float[][]> run = () -> {
      float[] xv = Tensor.randn(new Generator(5), DType.F32, shape).toFloatArray();
      xv[7] = Float.NaN; // a NaN wins its window
      Tensor x = Tensor.of(xv, shape).requiresGrad(true);
      Pooling.WithIndices r = Pooling.maxPool2dWithIndices(x, a(2), null, Z, ONE, false);
      int[] outShape = r.values().shape();
      float[] gv = Tensor.randn(new Generator(6), DType.F32, outShape).toFloatArray();
      gv[0] = -0f;
      gv[1] = Float.NaN;
      r.values().backward(Tensor.of(gv, outShape));
      float[] want = new float[xv.length];
      long[] idx = r.indices().toLongArray();
      int inPlane = shape[2] * shape[3];
      int outPlane = outShape[2] * outShape[3];
      for (int o = 0; o < idx.length; o++) want[(o / outPlane) * inPlane + (int) idx[o]] += gv[o];
      return new float[][] {r.values().toFloatArray(), x.grad().toFloatArray(), want};
    };
    float[][] got = run.get();
    assertArrayEquals(rawBits(got[2]), rawBits(got[1]), "gradient vs the scatter into zeros");
    dev.ember.testing.PoolChecks.assertEveryElementWritten(run, 4, shape[0] * shape[1] * 4 * 5);
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      float[][] one = run.get();
      Parallel.setThreads(2);
      float[][] two = run.get();
      for (int i = 0; i < one.length; i++) assertArrayEquals(rawBits(one[i]), rawBits(two[i]), "output " + i);
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void maxPoolInFloat64WritesEveryElementOfItsUnfilledBuffers() {
    // the outputs, indices and (for the 2x2 windows that tile the input) the gradient are unfilled buffers in every
    // dtype: in float64 too, a pooled buffer's old contents (NaN here) must not reach a result
    int[] shape = {2, 3, 6, 8};
    int[][][] configs = {{a(2), a(2), Z}, {a(3), a(2), ONE}};
    for (int[][] c : configs) {
      Supplier<double[][]> run = () -> {
        Tensor x = Tensor.randn(new Generator(7), DType.F64, shape).requiresGrad(true);
        Pooling.WithIndices r = Pooling.maxPool2dWithIndices(x, c[0], c[1], c[2], ONE, false);
        Tensor y = r.values();
        y.backward(Tensor.randn(new Generator(8), DType.F64, y.shape()));
        long[] idx = r.indices().toLongArray();
        double[] ix = new double[idx.length];
        for (int i = 0; i < idx.length; i++) ix[i] = idx[i];
        return new double[][] {y.toDoubleArray(), ix, x.grad().toDoubleArray()};
      };
      double[][] plain = run.get();
      dev.ember.tensor.MemoryScope.trimPool();
      try (dev.ember.tensor.MemoryScope s = dev.ember.tensor.MemoryScope.open()) {
        for (double[] out : plain) {
          for (int i = 0; i < 4; i++) {
            Tensor.full(Double.NaN, DType.F64, out.length);
            Tensor.full(-7, DType.I32, out.length);
          }
        }
      }
      double[][] scoped;
      try (dev.ember.tensor.MemoryScope s = dev.ember.tensor.MemoryScope.open()) {
        scoped = run.get();
      } finally {
        dev.ember.tensor.MemoryScope.trimPool();
      }
      for (int o = 0; o < plain.length; o++) {
        for (int i = 0; i < plain[o].length; i++) {
          assertEquals(Double.doubleToRawLongBits(plain[o][i]), Double.doubleToRawLongBits(scoped[o][i]),
              "kernel " + c[0][0] + ", output " + o + ", element " + i + ": " + scoped[o][i] + " in a scope, "
                  + plain[o][i] + " outside");
        }
      }
    }
  }

  // ================================================================== errors

  private static String msg(Runnable r) {
    return assertThrows(TensorArgumentException.class, r::run).getMessage();
  }

  @Test
  void errorMessages() {
    Tensor small = Tensor.zeros(1, 1, 2, 2);
    assertEquals("max_pool2d: output size (0, 0) is too small: the kernel (3, 3) is larger than the padded input "
        + "(2, 2): input=[1, 1, 2, 2]", msg(() -> Pooling.maxPool2d(small, 3)));
    assertEquals("max_pool2d: output size (0, 0) is too small: the dilated kernel (5, 5) is larger than the padded "
        + "input (4, 4): input=[1, 1, 4, 4]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 4, 4), a(3), null, Z, a(2), false)));
    assertEquals("avg_pool1d: output size 0 is too small: the kernel 5 is larger than the padded input 3: "
        + "input=[1, 2, 3]", msg(() -> Pooling.avgPool1d(Tensor.zeros(1, 2, 3), 5)));
    assertEquals("max_pool2d: padding should be at most half of kernel_size, got padding=(2, 2) and "
        + "kernel_size=(3, 3): input=[1, 1, 8, 8]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 8, 8), a(3), null, a(2), ONE, false)));
    assertEquals("avg_pool2d: padding should be at most half of kernel_size, got padding=(0, 2) and "
        + "kernel_size=(2, 3): input=[1, 1, 8, 8]",
        msg(() -> Pooling.avgPool2d(Tensor.zeros(1, 1, 8, 8), a(2, 3), null, a(0, 2), false, true, null)));
    assertEquals("max_pool1d: padding should be at most half of kernel_size, got padding=2 and kernel_size=3: "
        + "input=[1, 8]", msg(() -> Pooling.maxPool1d(Tensor.zeros(1, 8), 3, 1, 2, 1, false)));
    assertEquals("max_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got rank 2: input=[4, 5]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(4, 5), 2)));
    assertEquals("max_pool1d: expected a 2-d [C, L] or 3-d [N, C, L] input, got rank 4: input=[2, 3, 4, 5]",
        msg(() -> Pooling.maxPool1d(Tensor.zeros(2, 3, 4, 5), 2)));
    assertEquals("adaptive_avg_pool2d: expected a 3-d [C, H, W] or 4-d [N, C, H, W] input, got rank 5: "
        + "input=[1, 1, 1, 4, 4]", msg(() -> Pooling.adaptiveAvgPool2d(Tensor.zeros(1, 1, 1, 4, 4), 2)));
    assertEquals("avg_pool2d: expected non-zero sizes in the non-batch dims: input=[2, 0, 4, 4]",
        msg(() -> Pooling.avgPool2d(Tensor.zeros(2, 0, 4, 4), 2)));
    assertEquals("max_pool2d: kernel_size must be greater than zero, got (0, 2): input=[1, 1, 4, 4]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 4, 4), a(0, 2), null, Z, ONE, false)));
    assertEquals("max_pool2d: stride must be greater than zero, got (0, 0): input=[1, 1, 4, 4]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 4, 4), a(2), a(0), Z, ONE, false)));
    assertEquals("max_pool2d: dilation must be greater than zero, got (0, 0): input=[1, 1, 4, 4]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 4, 4), a(2), null, Z, a(0), false)));
    assertEquals("max_pool2d: kernel_size must have 1 or 2 values, got [2, 2, 2]: input=[1, 1, 4, 4]",
        msg(() -> Pooling.maxPool2d(Tensor.zeros(1, 1, 4, 4), a(2, 2, 2), null, Z, ONE, false)));
    assertEquals("avg_pool2d: divisor_override must not be zero: input=[1, 1, 4, 4]",
        msg(() -> Pooling.avgPool2d(Tensor.zeros(1, 1, 4, 4), a(2), null, Z, false, true, 0)));
    assertEquals("adaptive_max_pool2d: output_size must be positive, got 0: input=[1, 1, 4, 4]",
        msg(() -> Pooling.adaptiveMaxPool2d(Tensor.zeros(1, 1, 4, 4), 0, 2)));
    assertEquals("max_pool2d: expected a floating-point tensor, got int64: x=[1, 1, 4, 4]; hint: convert with "
        + "x.to(DType.F32)", msg(() -> Pooling.maxPool2d(Tensor.zeros(DType.I64, 1, 1, 4, 4), 2)));
  }

  @Test
  void interpolateErrorMessages() {
    Tensor x3 = Tensor.zeros(1, 2, 3);
    Tensor x4 = Tensor.zeros(1, 2, 3, 3);
    assertEquals("interpolate: mode 'bilinear' needs a 4-d [N, C, H, W] input, got rank 3: input=[1, 2, 3]",
        msg(() -> Upsampling.interpolate(x3, 2, "bilinear")));
    assertEquals("interpolate: mode 'nearest' needs a 3-d [N, C, L] or 4-d [N, C, H, W] input, got rank 2: "
        + "input=[2, 3]", msg(() -> Upsampling.interpolate(Tensor.zeros(2, 3), 2, "nearest")));
    assertEquals("interpolate: mode must be 'nearest' or 'bilinear', got 'bicubic': input=[1, 2, 3, 3]",
        msg(() -> Upsampling.interpolate(x4, 2, "bicubic")));
    assertEquals("interpolate: align_corners can only be set with the interpolating modes (bilinear), not with"
        + " mode 'nearest': input=[1, 2, 3, 3]",
        msg(() -> Upsampling.interpolate(x4, null, new double[] {2}, "nearest", false, null)));
    assertEquals("interpolate: only one of size and scale_factor may be given: input=[1, 2, 3, 3]",
        msg(() -> Upsampling.interpolate(x4, a(4), new double[] {2}, "nearest", null, null)));
    assertEquals("interpolate: either size or scale_factor must be given: input=[1, 2, 3, 3]",
        msg(() -> Upsampling.interpolate(x4, null, null, "nearest", null, null)));
    assertEquals("interpolate: size must have 1 or 2 values for a 2-d spatial input, got [4, 4, 4]: "
        + "input=[1, 2, 3, 3]", msg(() -> Upsampling.interpolate(x4, a(4, 4, 4), "nearest")));
    assertEquals("interpolate: input and output sizes must be greater than 0, got input [3, 3] and output [0, 0]: "
        + "input=[1, 2, 3, 3]", msg(() -> Upsampling.interpolate(x4, 0.2, "nearest")));
    assertEquals("interpolate: recompute_scale_factor is not meaningful with an explicit size: input=[1, 2, 3, 3]",
        msg(() -> Upsampling.interpolate(x4, a(4), null, "nearest", null, true)));
  }

  // ================================================================== determinism

  private static int[] bits(Tensor t) {
    return rawBits(t.toFloatArray());
  }

  private static int[] rawBits(float[] f) {
    int[] b = new int[f.length];
    for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
    return b;
  }

  /** Output and input gradient of {@code f} on a fixed input, on 1 and on 2 threads, must be bitwise equal. */
  private static void sameOnOneAndTwoThreads(String what, Function<Tensor, Tensor> f) {
    Supplier<Tensor[]> work = () -> {
      Tensor x = Tensor.randn(new Generator(77), 8, 16, 33, 31).requiresGrad(true);
      Tensor y = f.apply(x);
      y.backward(Tensor.randn(new Generator(78), y.shape()));
      return new Tensor[] {y.detach(), x.grad()};
    };
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      Tensor[] one = work.get();
      Parallel.setThreads(2);
      Tensor[] two = work.get();
      assertArrayEquals(bits(one[0]), bits(two[0]), what + ": output");
      assertArrayEquals(bits(one[1]), bits(two[1]), what + ": input gradient");
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void bitwiseSameOnOneAndTwoThreads() {
    sameOnOneAndTwoThreads("max_pool2d", x -> Pooling.maxPool2d(x, a(3), a(2), a(1), ONE, true));
    sameOnOneAndTwoThreads("avg_pool2d", x -> Pooling.avgPool2d(x, a(3), a(2), a(1), true, false, null));
    sameOnOneAndTwoThreads("adaptive_avg_pool2d", x -> Pooling.adaptiveAvgPool2d(x, 5, 7));
    sameOnOneAndTwoThreads("adaptive_max_pool2d", x -> Pooling.adaptiveMaxPool2d(x, 5, 7));
    sameOnOneAndTwoThreads("nearest", x -> Upsampling.interpolate(x, 1.5, "nearest"));
    sameOnOneAndTwoThreads("bilinear", x -> Upsampling.interpolate(x, null, new double[] {1.7}, "bilinear", false,
        null));
  }
}
