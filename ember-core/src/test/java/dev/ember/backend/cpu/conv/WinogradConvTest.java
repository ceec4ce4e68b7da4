package dev.ember.backend.cpu.conv;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.ConvGeometry;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.SavedColumns;
import dev.ember.backend.cpu.Parallel;
import dev.ember.backend.cpu.RowKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * The Winograd F(4, 3) path of 1 x 3 convolutions (conv1d with kernel 3) against a float64 oracle: forward (with
 * bias and the fused ReLU), input and weight gradients, for paddings 0-2, rows shorter than one vector of tiles
 * and rows of several, one and several rows per image; the same bits on 1 and 2 threads; and the
 * vector row transforms bitwise equal to the scalar ones.
 */
class WinogradConvTest {
  private final ConvolutionKernels conv = Device.CPU.backend().convolution();

  /** x [n, c, h, w] with a [o, c, 1, 3] kernel and horizontal padding p. */
  private record Case(int n, int c, int o, int h, int w, int p) {
    ConvGeometry geometry() {
      return new ConvGeometry(h, w, 1, 3, 1, 1, 0, p, 1, 1, h, w + 2 * p - 2);
    }
  }

  private static final Case[] CASES = {
      new Case(3, 32, 40, 1, 70, 1), // conv1d, p=1: vector groups and an overlapping last group
      new Case(2, 36, 32, 1, 130, 0), // valid: the last tile part-filled
      new Case(2, 32, 33, 1, 67, 2), // p=2: the input gradient with no padding
      new Case(2, 33, 32, 3, 21, 1), // three rows per image, rows shorter than a vector of tiles
      new Case(1, 32, 32, 1, 5, 1), // one tile and a part
  };

  private static Tensor randn(int seed, DType dt, int... shape) {
    return Tensor.randn(new Generator(seed), DType.F64, shape).to(dt);
  }

  /** {out, dx, dw} of the convolution in double, term by term. */
  private static double[][] reference(Case t, double[] x, double[] w, double[] b, double[] gy) {
    ConvGeometry g = t.geometry();
    int ow = g.ow();
    double[] out = new double[t.n * t.o * t.h * ow];
    double[] dx = new double[x.length];
    double[] dw = new double[w.length];
    for (int img = 0; img < t.n; img++) {
      for (int oc = 0; oc < t.o; oc++) {
        for (int r = 0; r < t.h; r++) {
          for (int ox = 0; ox < ow; ox++) {
            int at = ((img * t.o + oc) * t.h + r) * ow + ox;
            double s = b == null ? 0 : b[oc];
            for (int ci = 0; ci < t.c; ci++) {
              for (int j = 0; j < 3; j++) {
                int ix = ox - t.p + j;
                if (ix < 0 || ix >= t.w) continue;
                int xi = ((img * t.c + ci) * t.h + r) * t.w + ix;
                int wi = (oc * t.c + ci) * 3 + j;
                s += w[wi] * x[xi];
                dx[xi] += w[wi] * gy[at];
                dw[wi] += x[xi] * gy[at];
              }
            }
            out[at] = s;
          }
        }
      }
    }
    return new double[][] {out, dx, dw};
  }

  /**
   * Each result within 2e-5 of the largest magnitude of its float64 oracle (the direct float path stays within
   * about 1e-6 here; F(4, 3)'s transforms, with entries up to 8 and 1/24, add a few roundings of that size).
   */
  private static void assertClose(double[] ref, Tensor got, String what) {
    double[] g = got.toDoubleArray();
    assertEquals(ref.length, g.length, what);
    double scale = 0;
    for (double r : ref) scale = Math.max(scale, Math.abs(r));
    for (int i = 0; i < ref.length; i++) {
      if (Math.abs(ref[i] - g[i]) > 2e-5 * scale) {
        throw new AssertionError(what + " at " + i + ": " + g[i] + " vs " + ref[i] + " (scale " + scale + ")");
      }
    }
  }

  @Test
  void forwardAndGradientsMatchTheFloat64Oracle() {
    for (Case t : CASES) {
      ConvGeometry g = t.geometry();
      Tensor x = randn(1, DType.F32, t.n, t.c, t.h, t.w);
      Tensor w = randn(2, DType.F32, t.o, t.c, 1, 3);
      Tensor b = randn(3, DType.F32, t.o);
      Tensor gy = randn(4, DType.F32, t.n, t.o, t.h, g.ow());
      assertTrue(WinogradConv.applies(x, t.o, 1, g), t.toString());
      double[][] ref = reference(t, x.toDoubleArray(), w.toDoubleArray(), b.toDoubleArray(), gy.toDoubleArray());

      Tensor out = Tensor.full(Float.NaN, t.n, t.o, t.h, g.ow()); // every element written
      SavedColumns saved = conv.newSavedColumns();
      conv.forward(x, w, b, 1, g, out, saved);
      assertClose(ref[0], out, t + " forward");
      assertEquals(0, saved.elements(), t + " keeps nothing");

      Tensor relu = Tensor.full(Float.NaN, t.n, t.o, t.h, g.ow());
      assertTrue(conv.forwardRelu(x, w, b, 1, g, relu));
      float[] p = out.toFloatArray();
      float[] q = relu.toFloatArray();
      for (int i = 0; i < p.length; i++) {
        assertEquals(Float.floatToRawIntBits(p[i] <= 0 ? 0f : p[i]), Float.floatToRawIntBits(q[i]), t + " relu " + i);
      }

      Tensor dx = Tensor.empty(DType.F32, x.shape());
      Tensor dw = Tensor.empty(DType.F32, w.shape());
      conv.backward(x, w, gy, 1, g, dx, dw, saved);
      assertClose(ref[1], dx, t + " dx");
      assertClose(ref[2], dw, t + " dw");

      Tensor dwAlone = Tensor.empty(DType.F32, w.shape()); // the weight gradient alone: the same bits
      conv.backward(x, w, gy, 1, g, null, dwAlone, null);
      assertTrue(Arrays.equals(dw.toFloatArray(), dwAlone.toFloatArray()), t + " dW alone differs");
    }
  }

  @Test
  void appliesOnlyToWideOneGroupStrideOneRowConvolutions() {
    Tensor x = Tensor.zeros(2, 32, 1, 40);
    ConvGeometry g = new ConvGeometry(1, 40, 1, 3, 1, 1, 0, 1, 1, 1, 1, 40);
    assertTrue(WinogradConv.applies(x, 32, 1, g));
    assertFalse(WinogradConv.applies(x, 16, 1, g), "few output channels");
    assertFalse(WinogradConv.applies(Tensor.zeros(2, 16, 1, 40), 32, 1, g), "few input channels");
    assertFalse(WinogradConv.applies(x, 32, 2, g), "groups");
    assertFalse(WinogradConv.applies(x.to(DType.F64), 32, 1, g), "float64 keeps the direct path");
    assertFalse(WinogradConv.applies(x, 32, 1, new ConvGeometry(1, 40, 1, 3, 1, 2, 0, 1, 1, 1, 1, 20)), "stride");
    assertFalse(WinogradConv.applies(x, 32, 1, new ConvGeometry(1, 40, 1, 3, 1, 1, 0, 2, 1, 2, 1, 40)), "dilation");
    assertFalse(WinogradConv.applies(x, 32, 1, new ConvGeometry(1, 40, 1, 5, 1, 1, 0, 2, 1, 1, 1, 40)), "kernel 5");
  }

  @Test
  void resultsAreBitwiseTheSameOnOneAndTwoThreads() {
    Case t = new Case(4, 32, 48, 2, 90, 1);
    ConvGeometry g = t.geometry();
    Tensor x = randn(1, DType.F32, t.n, t.c, t.h, t.w);
    Tensor w = randn(2, DType.F32, t.o, t.c, 1, 3);
    Tensor b = randn(3, DType.F32, t.o);
    Tensor gy = randn(4, DType.F32, t.n, t.o, t.h, g.ow());
    float[][][] runs = new float[2][][];
    int old = Parallel.threads();
    try {
      for (int threads = 1; threads <= 2; threads++) {
        Parallel.setThreads(threads);
        Tensor out = Tensor.empty(DType.F32, t.n, t.o, t.h, g.ow());
        conv.forward(x, w, b, 1, g, out, null);
        Tensor dx = Tensor.empty(DType.F32, x.shape());
        Tensor dw = Tensor.empty(DType.F32, w.shape());
        conv.backward(x, w, gy, 1, g, dx, dw, null);
        runs[threads - 1] = new float[][] {out.toFloatArray(), dx.toFloatArray(), dw.toFloatArray()};
      }
    } finally {
      Parallel.setThreads(old);
    }
    for (int i = 0; i < 3; i++) assertTrue(Arrays.equals(runs[0][i], runs[1][i]), "result " + i);
  }

  @Test
  void vectorTransformsHaveTheBitsOfTheScalarOnes() {
    RowKernels vector = RowKernels.Choice.vectorOrNull();
    if (vector == null) return; // no Vector API module: the scalar loops are the only ones
    RowKernels scalar = new RowKernels.Scalar();
    java.util.Random r = new java.util.Random(5);
    for (int len : new int[] {3, 17, 64, 70, 131, 512}) {
      for (int pad = 0; pad <= 2; pad++) {
        float[] s = new float[len + 3];
        for (int i = 0; i < s.length; i++) s[i] = (float) r.nextGaussian();
        int tw = Math.ceilDiv(len + 2 * pad - 2, 4);
        if (tw <= 0) continue;
        float[] a = new float[6 * tw + 1];
        float[] b = new float[6 * tw + 1];
        scalar.winogradInput(s, 1, len, pad, tw, a, 1, tw);
        vector.winogradInput(s, 1, len, pad, tw, b, 1, tw);
        assertTrue(Arrays.equals(a, b), "input len " + len + " pad " + pad);
        int gtw = Math.ceilDiv(len, 4);
        float[] c = new float[6 * gtw];
        float[] d = new float[6 * gtw];
        scalar.winogradGrad(s, 1, len, gtw, c, 0, gtw);
        vector.winogradGrad(s, 1, len, gtw, d, 0, gtw);
        assertTrue(Arrays.equals(c, d), "grad len " + len);
        for (boolean relu : new boolean[] {false, true}) {
          float[] y1 = new float[len + 2];
          float[] y2 = new float[len + 2];
          scalar.winogradOutput(c, 0, gtw, gtw, 0.25f, relu, y1, 1, len);
          vector.winogradOutput(c, 0, gtw, gtw, 0.25f, relu, y2, 1, len);
          assertTrue(Arrays.equals(y1, y2), "output len " + len + " relu " + relu);
        }
      }
    }
  }
}
