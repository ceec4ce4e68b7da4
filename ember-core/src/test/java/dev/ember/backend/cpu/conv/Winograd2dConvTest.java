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
 * The Winograd F(4x4, 3x3) path of 3 x 3 convolutions against a float64 oracle: forward (with bias and the fused
 * ReLU), input gradient and weight gradient (each gradient alone the same bits as both together), for
 * paddings 0-2 on each axis, part-filled last tiles, small planes several to a task, in one block of tile rows and
 * in blocks of one (the same bits); the same bits on 1 and 2 threads; the column transforms' vector and scalar bits.
 */
class Winograd2dConvTest {
  private final ConvolutionKernels conv = Device.CPU.backend().convolution();

  /** x [n, c, h, w] with an [o, c, 3, 3] kernel and padding (ph, pw). */
  private record Case(int n, int c, int o, int h, int w, int ph, int pw) {
    ConvGeometry geometry() {
      return new ConvGeometry(h, w, 3, 3, 1, 1, ph, pw, 1, 1, h + 2 * ph - 2, w + 2 * pw - 2);
    }
  }

  private static final Case[] CASES = {
      new Case(2, 32, 40, 12, 48, 1, 1), // "same", whole tiles
      new Case(2, 36, 32, 15, 51, 0, 0), // valid: last tiles part-filled both ways
      new Case(1, 32, 33, 5, 50, 2, 2), // p=2: the input gradient unpadded
      new Case(2, 33, 32, 7, 50, 1, 0), // different paddings per axis
      new Case(1, 32, 32, 3, 48, 1, 1), // one tile row, mostly padding
      new Case(2, 64, 64, 20, 56, 1, 1), // VGG-like
      new Case(17, 32, 40, 16, 16, 1, 1), // small planes: two images per task, an odd one left
      new Case(16, 40, 32, 16, 17, 0, 1), // small planes, part-filled tiles
  };

  private static Tensor randn(int seed, int... shape) {
    return Tensor.randn(new Generator(seed), DType.F64, shape).to(DType.F32);
  }

  /** {out, dx, dw} of the convolution in double, term by term. */
  private static double[][] reference(Case t, double[] x, double[] w, double[] b, double[] gy) {
    ConvGeometry g = t.geometry();
    int oh = g.oh();
    int ow = g.ow();
    double[] out = new double[t.n * t.o * oh * ow];
    double[] dx = new double[x.length];
    double[] dw = new double[w.length];
    for (int img = 0; img < t.n; img++) {
      for (int oc = 0; oc < t.o; oc++) {
        for (int oy = 0; oy < oh; oy++) {
          for (int ox = 0; ox < ow; ox++) {
            int at = ((img * t.o + oc) * oh + oy) * ow + ox;
            double s = b[oc];
            for (int ci = 0; ci < t.c; ci++) {
              for (int i = 0; i < 3; i++) {
                int iy = oy - t.ph + i;
                if (iy < 0 || iy >= t.h) continue;
                for (int j = 0; j < 3; j++) {
                  int ix = ox - t.pw + j;
                  if (ix < 0 || ix >= t.w) continue;
                  int xi = ((img * t.c + ci) * t.h + iy) * t.w + ix;
                  int wi = ((oc * t.c + ci) * 3 + i) * 3 + j;
                  s += w[wi] * x[xi];
                  dx[xi] += w[wi] * gy[at];
                  dw[wi] += x[xi] * gy[at];
                }
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
   * Each result within TOLERANCE of the largest magnitude of its float64 oracle. F(4x4, 3x3)'s transforms (entries
   * up to 8 x 8 on the output side, 1/576 on the filter side) add roundings of up to about 1e-5 of the largest
   * magnitude here (measured: 5e-7 .. 7e-6); the direct float path stays within about 1e-6.
   */
  private static final double TOLERANCE = 2e-5;

  private static double assertClose(double[] ref, Tensor got, String what) {
    double[] g = got.toDoubleArray();
    assertEquals(ref.length, g.length, what);
    double scale = 0;
    for (double r : ref) scale = Math.max(scale, Math.abs(r));
    double worst = 0;
    for (int i = 0; i < ref.length; i++) {
      double err = Math.abs(ref[i] - g[i]);
      worst = Math.max(worst, err / scale);
      if (!(err <= TOLERANCE * scale)) {
        throw new AssertionError(what + " at " + i + ": " + g[i] + " vs " + ref[i] + " (scale " + scale + ")");
      }
    }
    return worst;
  }

  @Test
  void forwardAndGradientsMatchTheFloat64Oracle() {
    long old = Winograd2dConv.blockFloats;
    try {
      for (Case t : CASES) {
        Winograd2dConv.blockFloats = old;
        float[][] whole = check(t, old);
        Winograd2dConv.blockFloats = 1; // blocks of one tile row, one image per task: the same bits
        float[][] rows = check(t, 1);
        for (int i = 0; i < whole.length; i++) assertTrue(Arrays.equals(whole[i], rows[i]), t + " blocks: result " + i);
      }
    } finally {
      Winograd2dConv.blockFloats = old;
    }
  }

  /** {out, dx, dw}, each checked against the oracle. */
  private float[][] check(Case t, long block) {
    String name = t + " block " + block;
    ConvGeometry g = t.geometry();
    Tensor x = randn(1, t.n, t.c, t.h, t.w);
    Tensor w = randn(2, t.o, t.c, 3, 3);
    Tensor b = randn(3, t.o);
    Tensor gy = randn(4, t.n, t.o, g.oh(), g.ow());
    assertTrue(Winograd2dConv.applies(x, t.o, 1, g), name);
    double[][] ref = reference(t, x.toDoubleArray(), w.toDoubleArray(), b.toDoubleArray(), gy.toDoubleArray());

    Tensor out = Tensor.full(Float.NaN, t.n, t.o, g.oh(), g.ow()); // every element written
    SavedColumns saved = conv.newSavedColumns();
    conv.forward(x, w, b, 1, g, out, saved);
    double ef = assertClose(ref[0], out, name + " forward");

    Tensor relu = Tensor.full(Float.NaN, t.n, t.o, g.oh(), g.ow());
    assertTrue(conv.forwardRelu(x, w, b, 1, g, relu));
    float[] p = out.toFloatArray();
    float[] q = relu.toFloatArray();
    for (int i = 0; i < p.length; i++) {
      assertEquals(Float.floatToRawIntBits(p[i] <= 0 ? 0f : p[i]), Float.floatToRawIntBits(q[i]), name + " relu " + i);
    }

    Tensor dx = Tensor.full(Float.NaN, x.shape());
    Tensor dw = Tensor.full(Float.NaN, w.shape());
    conv.backward(x, w, gy, 1, g, dx, dw, saved);
    double ex = assertClose(ref[1], dx, name + " dx");
    double ew = assertClose(ref[2], dw, name + " dw");
    System.out.printf("%s: forward %.2g, dx %.2g, dw %.2g of the largest magnitude%n", name, ef, ex, ew);

    Tensor dxAlone = Tensor.full(Float.NaN, x.shape()); // the input gradient alone: the same bits
    conv.backward(x, w, gy, 1, g, dxAlone, null, null);
    assertTrue(Arrays.equals(dx.toFloatArray(), dxAlone.toFloatArray()), name + " dx alone differs");
    Tensor dwAlone = Tensor.full(Float.NaN, w.shape()); // the weight gradient alone: the same bits
    conv.backward(x, w, gy, 1, g, null, dwAlone, null);
    assertTrue(Arrays.equals(dw.toFloatArray(), dwAlone.toFloatArray()), name + " dw alone differs");
    return new float[][] {p, dx.toFloatArray(), dw.toFloatArray()};
  }

  /**
   * The weight gradient sums over every tile of the batch (here 8 x 6 x 15 = 720 per weight, VGG's first 64-channel
   * layer at batch 8 has 1680): within the same TOLERANCE of the float64 oracle's largest magnitude (measured
   * 5e-6 here).
   */
  @Test
  void weightGradientOfAVggLikeBatchMatchesTheFloat64Oracle() {
    Case t = new Case(8, 64, 64, 24, 56, 1, 1);
    ConvGeometry g = t.geometry();
    Tensor x = randn(5, t.n, t.c, t.h, t.w);
    Tensor w = randn(6, t.o, t.c, 3, 3);
    Tensor gy = randn(7, t.n, t.o, g.oh(), g.ow());
    double[][] ref = reference(t, x.toDoubleArray(), w.toDoubleArray(), new double[t.o], gy.toDoubleArray());
    Tensor dw = Tensor.full(Float.NaN, w.shape());
    conv.backward(x, w, gy, 1, g, null, dw, null);
    System.out.printf("%s: dw %.2g of the largest magnitude%n", t, assertClose(ref[2], dw, t + " dw"));
  }

  /**
   * The transformed-domain weight gradient itself on every case (the backend takes it from 64 channels only, where it
   * is faster): within TOLERANCE of the oracle, the same bits on 1 and 2 threads.
   */
  @Test
  void winogradWeightGradientMatchesTheOracleOnEveryCaseAndThreadCount() {
    for (Case t : CASES) {
      ConvGeometry g = t.geometry();
      Tensor x = randn(1, t.n, t.c, t.h, t.w);
      Tensor w = randn(2, t.o, t.c, 3, 3);
      Tensor gy = randn(4, t.n, t.o, g.oh(), g.ow());
      double[][] ref = reference(t, x.toDoubleArray(), w.toDoubleArray(), new double[t.o], gy.toDoubleArray());
      float[][] runs = new float[2][];
      int old = Parallel.threads();
      try {
        for (int threads = 1; threads <= 2; threads++) {
          Parallel.setThreads(threads);
          Tensor dw = Tensor.full(Float.NaN, w.shape());
          Winograd2dConv.weightGrad(x, gy, dw, g);
          assertClose(ref[2], dw, t + " winograd dw, threads " + threads);
          runs[threads - 1] = dw.toFloatArray();
        }
      } finally {
        Parallel.setThreads(old);
      }
      assertTrue(Arrays.equals(runs[0], runs[1]), t + " winograd dw on 1 and 2 threads");
    }
    Tensor x = Tensor.zeros(2, 64, 16, 56);
    ConvGeometry g = new ConvGeometry(16, 56, 3, 3, 1, 1, 1, 1, 1, 1, 16, 56);
    assertTrue(Winograd2dConv.weightGradApplies(x, 64, 1, g));
    assertFalse(Winograd2dConv.weightGradApplies(x, 32, 1, g), "few output channels for the weight gradient");
    assertFalse(Winograd2dConv.weightGradApplies(Tensor.zeros(2, 32, 16, 56), 64, 1, g), "few input channels");
  }

  @Test
  void appliesOnlyToWideOneGroupStrideOneThreeByThreeConvolutions() {
    Tensor x = Tensor.zeros(2, 32, 16, 56);
    ConvGeometry g = new ConvGeometry(16, 56, 3, 3, 1, 1, 1, 1, 1, 1, 16, 56);
    assertTrue(Winograd2dConv.applies(x, 32, 1, g));
    assertFalse(Winograd2dConv.applies(x, 16, 1, g), "few output channels");
    assertFalse(Winograd2dConv.applies(Tensor.zeros(2, 16, 16, 56), 32, 1, g), "few input channels");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 8)), "narrow");
    assertFalse(Winograd2dConv.applies(x, 32, 2, g), "groups");
    assertFalse(Winograd2dConv.applies(x.to(DType.F64), 32, 1, g), "float64 keeps the direct path");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(16, 56, 3, 3, 2, 2, 1, 1, 1, 1, 8, 28)), "stride");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(16, 56, 3, 3, 1, 1, 2, 2, 2, 2, 16, 56)),
        "dilation");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(16, 56, 5, 5, 1, 1, 2, 2, 1, 1, 16, 56)),
        "kernel 5");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(16, 56, 3, 3, 1, 1, 3, 3, 1, 1, 20, 60)),
        "padding 3");
    assertFalse(Winograd2dConv.applies(x, 32, 1, new ConvGeometry(16, 56, 1, 3, 1, 1, 0, 1, 1, 1, 16, 56)),
        "1 x 3 (WinogradConv's)");
  }

  @Test
  void resultsAreBitwiseTheSameOnOneAndTwoThreads() {
    for (Case t : new Case[] {new Case(5, 32, 48, 18, 49, 1, 1), new Case(19, 32, 40, 16, 16, 1, 1)}) {
      ConvGeometry g = t.geometry();
      Tensor x = randn(1, t.n, t.c, t.h, t.w);
      Tensor w = randn(2, t.o, t.c, 3, 3);
      Tensor b = randn(3, t.o);
      Tensor gy = randn(4, t.n, t.o, g.oh(), g.ow());
      float[][][] runs = new float[2][][];
      int old = Parallel.threads();
      try {
        for (int threads = 1; threads <= 2; threads++) {
          Parallel.setThreads(threads);
          Tensor out = Tensor.empty(DType.F32, t.n, t.o, g.oh(), g.ow());
          conv.forward(x, w, b, 1, g, out, null);
          Tensor dx = Tensor.empty(DType.F32, x.shape());
          Tensor dw = Tensor.empty(DType.F32, w.shape());
          conv.backward(x, w, gy, 1, g, dx, dw, null);
          runs[threads - 1] = new float[][] {out.toFloatArray(), dx.toFloatArray(), dw.toFloatArray()};
        }
      } finally {
        Parallel.setThreads(old);
      }
      for (int i = 0; i < 3; i++) assertTrue(Arrays.equals(runs[0][i], runs[1][i]), t + " result " + i);
    }
  }

  @Test
  void vectorColumnTransformsHaveTheBitsOfTheScalarOnes() {
    RowKernels vector = RowKernels.Choice.vectorOrNull();
    if (vector == null) return; // no Vector API module: the scalar loops are the only ones
    RowKernels scalar = new RowKernels.Scalar();
    java.util.Random r = new java.util.Random(5);
    for (int n : new int[] {1, 7, 16, 60, 131}) {
      int ss = n + 3;
      float[] s = new float[1 + 6 * ss];
      for (int i = 0; i < s.length; i++) s[i] = (float) r.nextGaussian();
      float[] a = new float[2 + 6 * (n + 1)];
      float[] b = new float[a.length];
      scalar.winogradColumns(s, 1, ss, n, a, 2, n + 1);
      vector.winogradColumns(s, 1, ss, n, b, 2, n + 1);
      assertTrue(Arrays.equals(a, b), "columns n " + n);
      float[] c = new float[1 + 4 * (n + 2)];
      float[] d = new float[c.length];
      scalar.winogradColumnsOut(s, 1, ss, n, c, 1, n + 2);
      vector.winogradColumnsOut(s, 1, ss, n, d, 1, n + 2);
      assertTrue(Arrays.equals(c, d), "columns out n " + n);
    }
  }
}
