package dev.ember.backend.cpu.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The CPU convolution kernels through the SPI against a plain double loop: every strategy (direct,
 * implicit GEMM, blocks of images, GEMM per image and group, depthwise, 1x1, transposed) forward, input
 * and weight gradients, bias sums, and the kept column matrices.
 */
class CpuConvolutionTest {
  private final ConvolutionKernels conv = Device.CPU.backend().convolution();

  /** One convolution: x [n, c, h, w], weight [o, c/groups, k, k], stride s, padding p, dilation d. */
  private record Case(String what, DType dt, int n, int c, int o, int h, int w, int k, int s, int p, int d,
      int groups) {
    ConvGeometry geometry() {
      int oh = (h + 2 * p - d * (k - 1) - 1) / s + 1;
      int ow = (w + 2 * p - d * (k - 1) - 1) / s + 1;
      return new ConvGeometry(h, w, k, k, s, s, p, p, d, d, oh, ow);
    }
  }

  private static final Case[] CASES = {
      new Case("direct (one input channel)", DType.F32, 5, 1, 6, 12, 12, 5, 1, 2, 1, 1),
      new Case("implicit GEMM", DType.F32, 3, 6, 16, 10, 10, 3, 1, 1, 1, 1),
      new Case("blocks of images (strided)", DType.F32, 7, 5, 3, 11, 10, 3, 2, 1, 1, 1),
      new Case("blocks of images (dilated)", DType.F32, 3, 5, 4, 11, 12, 3, 1, 2, 2, 1),
      new Case("GEMM per image and group", DType.F32, 3, 4, 6, 9, 9, 3, 2, 2, 1, 2),
      new Case("1x1 per image", DType.F32, 3, 8, 6, 7, 7, 1, 1, 0, 1, 2),
      new Case("1x1 one group", DType.F32, 3, 8, 6, 7, 7, 1, 1, 0, 1, 1),
      new Case("depthwise, direct", DType.F32, 3, 4, 8, 9, 11, 3, 1, 1, 1, 4),
      new Case("depthwise, strided", DType.F32, 3, 4, 4, 9, 11, 3, 2, 1, 1, 4),
      new Case("depthwise, wide padding", DType.F32, 2, 3, 3, 7, 7, 3, 1, 3, 1, 3),
      new Case("implicit GEMM, LeNet's second layer (narrow weight tiles, 6-channel input gradient)", DType.F32, 3, 6,
          16, 14, 14, 5, 1, 0, 1, 1),
      new Case("implicit GEMM, 12 channels padded (6-channel tiles, corner taps left out)", DType.F32, 2, 8, 12, 9, 9,
          5, 1, 2, 1, 1),
      new Case("float64 per image", DType.F64, 3, 5, 4, 8, 9, 3, 2, 1, 1, 1),
      new Case("float64 depthwise", DType.F64, 2, 3, 6, 8, 7, 3, 1, 1, 2, 3),
  };

  /**
   * The fused ReLU epilogue on every strategy: the CPU kernels take it (forwardRelu returns true) and each
   * element is bitwise forward's clamped as the RELU op clamps (x &lt;= 0 ? 0 : x, so -0 becomes +0).
   */
  @Test
  void forwardReluIsForwardThenReluOnEveryStrategy() {
    for (Case t : CASES) {
      ConvGeometry g = t.geometry();
      Tensor x = randn(1, t.dt, t.n, t.c, t.h, t.w);
      Tensor w = randn(2, t.dt, t.o, t.c / t.groups, t.k, t.k);
      Tensor b = randn(3, t.dt, t.o);
      Tensor plain = Tensor.uninitialized(t.dt, t.n, t.o, g.oh(), g.ow());
      conv.forward(x, w, b, t.groups, g, plain, null);
      Tensor fused = Tensor.uninitialized(t.dt, t.n, t.o, g.oh(), g.ow());
      assertTrue(conv.forwardRelu(x, w, b, t.groups, g, fused), t.what);
      double[] p = plain.toDoubleArray();
      double[] f = fused.toDoubleArray();
      for (int i = 0; i < p.length; i++) {
        double e = p[i] <= 0 ? 0.0 : p[i];
        assertEquals(Double.doubleToRawLongBits(e), Double.doubleToRawLongBits(f[i]), t.what + " at " + i);
      }
    }
  }

  @Test
  void everyStrategyMatchesThePlainLoops() {
    for (Case t : CASES) {
      ConvGeometry g = t.geometry();
      Tensor x = randn(1, t.dt, t.n, t.c, t.h, t.w);
      Tensor w = randn(2, t.dt, t.o, t.c / t.groups, t.k, t.k);
      Tensor b = randn(3, t.dt, t.o);
      Tensor gOut = randn(4, t.dt, t.n, t.o, g.oh(), g.ow());
      double[][] ref = reference(t, g, x.toDoubleArray(), w.toDoubleArray(), b.toDoubleArray(), gOut.toDoubleArray());
      double tol = t.dt == DType.F32 ? 2e-4 : 1e-10;

      Tensor out = Tensor.uninitialized(t.dt, t.n, t.o, g.oh(), g.ow());
      conv.forward(x, w, b, t.groups, g, out, null);
      assertClose(ref[0], out, tol, t.what + " forward");

      Tensor dx = Tensor.empty(t.dt, x.shape());
      Tensor dw = Tensor.empty(t.dt, w.shape());
      conv.backward(x, w, gOut, t.groups, g, dx, dw, null);
      assertClose(ref[1], dx, tol, t.what + " dx");
      assertClose(ref[2], dw, tol, t.what + " dw");

      Tensor dwOnly = Tensor.empty(t.dt, w.shape()); // the weight gradient alone (a first layer's)
      conv.backward(x, w, gOut, t.groups, g, null, dwOnly, null);
      assertClose(ref[2], dwOnly, tol, t.what + " dw alone");

      double[] sums = conv.channelSums(gOut, t.n, t.o, g.cols());
      double sumTol = t.dt == DType.F32 ? 1e-5 : 1e-12;
      for (int oc = 0; oc < t.o; oc++) {
        assertEquals(ref[3][oc], sums[oc], sumTol * (1 + Math.abs(ref[3][oc])), t.what + " bias sums");
      }
    }
  }

  @Test
  void keptColumnsGiveTheSameWeightGradient() {
    Case t = CASES[2]; // blocks of images: the path that keeps its columns
    ConvGeometry g = t.geometry();
    Tensor x = randn(1, t.dt, t.n, t.c, t.h, t.w);
    Tensor w = randn(2, t.dt, t.o, t.c, t.k, t.k);
    Tensor gOut = randn(4, t.dt, t.n, t.o, g.oh(), g.ow());
    SavedColumns saved = conv.newSavedColumns();
    assertEquals(0, saved.elements());
    conv.forward(x, w, null, 1, g, Tensor.uninitialized(t.dt, t.n, t.o, g.oh(), g.ow()), saved);
    assertEquals((long) t.c * t.k * t.k * t.n * g.cols(), saved.elements());
    Tensor kept = Tensor.empty(t.dt, w.shape());
    Tensor rebuilt = Tensor.empty(t.dt, w.shape());
    conv.backward(x, w, gOut, 1, g, null, kept, saved);
    conv.backward(x, w, gOut, 1, g, null, rebuilt, null);
    assertTrue(Arrays.equals(rebuilt.toFloatArray(), kept.toFloatArray()), "kept columns change dW");
  }

  @Test
  void columnsOverTheBudgetAreNotKept() {
    // 32 channels x 9 taps x 16 images x 32 x 32 positions: 4.7M floats, over the 4M budget
    Case t = new Case("large", DType.F32, 16, 32, 4, 64, 64, 3, 2, 1, 1, 1);
    ConvGeometry g = t.geometry();
    SavedColumns saved = conv.newSavedColumns();
    conv.forward(randn(1, t.dt, t.n, t.c, t.h, t.w), randn(2, t.dt, t.o, t.c, t.k, t.k), null, 1, g,
        Tensor.uninitialized(t.dt, t.n, t.o, g.oh(), g.ow()), saved);
    assertEquals(0, saved.elements());
  }

  @Test
  void transposedConvolutionIsTheAdjointOfConvolution() {
    // conv_transpose(y; w) is the input gradient of conv(x; w) at upstream y, and its weight gradient the
    // convolution's weight gradient with the roles of x and y swapped
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      for (int groups : new int[] {1, 2}) {
        Case t = new Case("transposed", dt, 3, 4, 6, 9, 8, 3, 2, 1, 1, groups);
        ConvGeometry g = t.geometry();
        Tensor img = randn(5, dt, t.n, t.c, t.h, t.w); // the transposed convolution's upstream gradient
        Tensor w = randn(6, dt, t.o, t.c / groups, t.k, t.k); // [Cin, O/groups, k, k] of the transposed one
        Tensor y = randn(7, dt, t.n, t.o, g.oh(), g.ow()); // its input
        Tensor b = randn(8, dt, t.c);
        double[][] ref = reference(t, g, img.toDoubleArray(), w.toDoubleArray(), new double[t.o],
            y.toDoubleArray());
        double tol = dt == DType.F32 ? 2e-4 : 1e-10;
        Tensor out = Tensor.empty(dt, t.n, t.c, t.h, t.w);
        conv.transposedForward(y, w, b, groups, g, out);
        double[] expected = ref[1].clone();
        double[] bias = b.toDoubleArray();
        for (int i = 0; i < expected.length; i++) expected[i] += bias[(i / (t.h * t.w)) % t.c];
        assertClose(expected, out, tol, "transposed forward " + dt + " groups " + groups);
        Tensor dy = Tensor.empty(dt, y.shape());
        Tensor dw = Tensor.empty(dt, w.shape());
        conv.transposedBackward(y, w, img, groups, g, dy, dw);
        assertClose(ref[0], dy, tol, "transposed dx " + dt + " groups " + groups);
        assertClose(ref[2], dw, tol, "transposed dw " + dt + " groups " + groups);
      }
    }
  }

  /**
   * Transposed convolutions whose stride divides the kernel run by output phase ({@link PhaseTransposedConv}):
   * forward, dx and dw (each alone too, and into buffers of NaN: the path writes every element) against the plain
   * loops. Cases: k4 s2 p1 with even and odd outputs (output padding 1), 16-wide phases (slots written in place),
   * k2 s2 p0 (one tap per phase), k6 s3 p2, padding above the stride, more input channels than a vector (wide
   * weight-gradient tiles), 64 (6-tap weight-gradient tiles), 10 output channels (part-filled tiles).
   */
  @Test
  void phaseTransposedConvolutionMatchesThePlainLoops() {
    Case[] cases = { // n, c (the transposed output's channels), o (its input's), h, w (its output), k, s, p
        new Case("k4 s2 p1", DType.F32, 3, 8, 12, 12, 12, 4, 2, 1, 1, 1),
        new Case("k4 s2 p1 odd output", DType.F32, 2, 8, 9, 13, 11, 4, 2, 1, 1, 1),
        new Case("k4 s2 p1 16-wide phases", DType.F32, 2, 8, 8, 32, 32, 4, 2, 1, 1, 1),
        new Case("k2 s2 p0", DType.F32, 3, 16, 10, 14, 14, 2, 2, 0, 1, 1),
        new Case("k6 s3 p2 odd output", DType.F32, 2, 9, 8, 15, 15, 6, 3, 2, 1, 1),
        new Case("k4 s2 p3", DType.F32, 2, 8, 8, 10, 10, 4, 2, 3, 1, 1),
        new Case("k4 s2 p1, 20 input channels", DType.F32, 3, 10, 20, 8, 8, 4, 2, 1, 1, 1),
        new Case("k4 s2 p1, 64 input channels (6-tap weight-gradient tiles)", DType.F32, 2, 8, 64, 8, 8, 4, 2, 1, 1, 1),
    };
    for (Case t : cases) {
      ConvGeometry g = t.geometry();
      Tensor img = randn(5, t.dt, t.n, t.c, t.h, t.w); // the transposed convolution's upstream gradient
      Tensor w = randn(6, t.dt, t.o, t.c, t.k, t.k);
      Tensor y = randn(7, t.dt, t.n, t.o, g.oh(), g.ow()); // its input
      Tensor b = randn(8, t.dt, t.c);
      assertTrue(PhaseTransposedConv.applies(y, w, 1, g), t.what + " takes the phase path");
      double[][] ref = reference(t, g, img.toDoubleArray(), w.toDoubleArray(), new double[t.o], y.toDoubleArray());
      double tol = 2e-4;
      Tensor out = Tensor.empty(t.dt, t.n, t.c, t.h, t.w);
      conv.transposedForward(y, w, b, 1, g, out);
      double[] expected = ref[1].clone();
      double[] bias = b.toDoubleArray();
      for (int i = 0; i < expected.length; i++) expected[i] += bias[(i / (t.h * t.w)) % t.c];
      assertClose(expected, out, tol, t.what + " forward");
      Tensor plain = Tensor.empty(t.dt, t.n, t.c, t.h, t.w);
      conv.transposedForward(y, w, null, 1, g, plain);
      assertClose(ref[1], plain, tol, t.what + " forward without bias");
      Tensor dy = Tensor.empty(t.dt, y.shape());
      Tensor dw = Tensor.empty(t.dt, w.shape());
      conv.transposedBackward(y, w, img, 1, g, dy, dw);
      assertClose(ref[0], dy, tol, t.what + " dx");
      assertClose(ref[2], dw, tol, t.what + " dw");
      Tensor dyOnly = Tensor.empty(t.dt, y.shape());
      conv.transposedBackward(y, w, img, 1, g, dyOnly, null);
      assertTrue(Arrays.equals(dy.toFloatArray(), dyOnly.toFloatArray()), t.what + " dx alone");
      Tensor dwOnly = Tensor.empty(t.dt, w.shape());
      conv.transposedBackward(y, w, img, 1, g, null, dwOnly);
      assertTrue(Arrays.equals(dw.toFloatArray(), dwOnly.toFloatArray()), t.what + " dw alone");
      // every element written: buffers full of NaN (as a caller may pass when transposedWritesAll) give the same bits
      assertTrue(conv.transposedWritesAll(y, w, 1, g), t.what + " writes all");
      Tensor outNaN = Tensor.full(Double.NaN, t.dt, t.n, t.c, t.h, t.w);
      conv.transposedForward(y, w, b, 1, g, outNaN);
      assertTrue(Arrays.equals(out.toFloatArray(), outNaN.toFloatArray()), t.what + " forward into NaNs");
      Tensor dyNaN = Tensor.full(Double.NaN, t.dt, y.shape());
      Tensor dwNaN = Tensor.full(Double.NaN, t.dt, w.shape());
      conv.transposedBackward(y, w, img, 1, g, dyNaN, dwNaN);
      assertTrue(Arrays.equals(dy.toFloatArray(), dyNaN.toFloatArray()), t.what + " dx into NaNs");
      assertTrue(Arrays.equals(dw.toFloatArray(), dwNaN.toFloatArray()), t.what + " dw into NaNs");
    }
  }

  /** What the phase path leaves to the GEMM path: dilation, groups, F64, a stride that does not divide the kernel. */
  @Test
  void phasePathTakesOnlyWhatItDecomposesExactly() {
    Tensor y = Tensor.zeros(2, 8, 5, 5);
    Tensor w = Tensor.zeros(8, 8, 4, 4);
    assertTrue(PhaseTransposedConv.applies(y, w, 1, new ConvGeometry(10, 10, 4, 4, 2, 2, 1, 1, 1, 1, 5, 5)));
    assertTrue(!PhaseTransposedConv.applies(y, w, 1, new ConvGeometry(13, 13, 4, 4, 2, 2, 1, 1, 2, 2, 5, 5)), "dilated");
    assertTrue(!PhaseTransposedConv.applies(y, Tensor.zeros(8, 4, 4, 4), 2,
        new ConvGeometry(10, 10, 4, 4, 2, 2, 1, 1, 1, 1, 5, 5)), "groups");
    assertTrue(!PhaseTransposedConv.applies(y.to(DType.F64), w.to(DType.F64), 1,
        new ConvGeometry(10, 10, 4, 4, 2, 2, 1, 1, 1, 1, 5, 5)), "float64");
    assertTrue(!PhaseTransposedConv.applies(y, Tensor.zeros(8, 8, 3, 3), 1,
        new ConvGeometry(9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 5, 5)), "k3 s2");
    assertTrue(!PhaseTransposedConv.applies(y, w, 1, new ConvGeometry(8, 8, 4, 4, 1, 1, 0, 0, 1, 1, 5, 5)), "stride 1");
    assertTrue(!conv.transposedWritesAll(y, w, 1, new ConvGeometry(13, 13, 4, 4, 2, 2, 1, 1, 2, 2, 5, 5)),
        "the GEMM path accumulates into a zero-filled output");
  }

  private static Tensor randn(int seed, DType dt, int... shape) {
    return Tensor.randn(new Generator(seed), DType.F64, shape).to(dt);
  }

  /** {out, dx, dw, bias sums} of the convolution in double, term by term. */
  private static double[][] reference(Case t, ConvGeometry g, double[] x, double[] w, double[] b, double[] gOut) {
    int cg = t.c / t.groups;
    int og = t.o / t.groups;
    double[] out = new double[t.n * t.o * g.cols()];
    double[] dx = new double[x.length];
    double[] dw = new double[w.length];
    double[] db = new double[t.o];
    for (int img = 0; img < t.n; img++) {
      for (int oc = 0; oc < t.o; oc++) {
        int grp = oc / og;
        for (int oy = 0; oy < g.oh(); oy++) {
          for (int ox = 0; ox < g.ow(); ox++) {
            int at = ((img * t.o + oc) * g.oh() + oy) * g.ow() + ox;
            double s = b[oc];
            double up = gOut[at];
            db[oc] += up;
            for (int ci = 0; ci < cg; ci++) {
              for (int i = 0; i < t.k; i++) {
                for (int j = 0; j < t.k; j++) {
                  int iy = oy * t.s - t.p + i * t.d;
                  int ix = ox * t.s - t.p + j * t.d;
                  if (iy < 0 || iy >= t.h || ix < 0 || ix >= t.w) continue;
                  int xi = ((img * t.c + grp * cg + ci) * t.h + iy) * t.w + ix;
                  int wi = ((oc * cg + ci) * t.k + i) * t.k + j;
                  s += w[wi] * x[xi];
                  dx[xi] += w[wi] * up;
                  dw[wi] += x[xi] * up;
                }
              }
            }
            out[at] = s;
          }
        }
      }
    }
    return new double[][] {out, dx, dw, db};
  }

  private static void assertClose(double[] expected, Tensor actual, double tol, String what) {
    double[] a = actual.toDoubleArray();
    assertEquals(expected.length, a.length, what);
    for (int i = 0; i < a.length; i++) {
      if (!(Math.abs(a[i] - expected[i]) <= tol * (1 + Math.abs(expected[i])))) {
        throw new AssertionError(what + " element " + i + ": " + a[i] + " vs " + expected[i]);
      }
    }
  }
}
