package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.PoolAxis;
import dev.ember.backend.PoolingKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The CPU pooling kernels through the SPI against plain loops over the windows their axis tables give. */
class CpuPoolingTest {
  private final PoolingKernels pool = Device.CPU.backend().pooling();

  /** Windows of size k, stride s, padding p, dilation d over in positions, clipped (floor mode). */
  private static PoolAxis axis(int in, int k, int s, int p, int d, boolean avg) {
    int out = (in + 2 * p - d * (k - 1) - 1) / s + 1;
    int[] start = new int[out];
    int[] end = new int[out];
    double[] div = avg ? new double[out] : null;
    for (int o = 0; o < out; o++) {
      int s0 = o * s - p;
      end[o] = Math.min(s0 + (k - 1) * d + 1, in);
      while (s0 < 0) s0 += d;
      start[o] = s0;
      if (avg) div[o] = k;
    }
    return new PoolAxis(in, out, start, end, d, div);
  }

  @Test
  void maxPoolingFindsTheFirstMaximumAndRoutesTheGradientThere() {
    // the 2x2 tiles, undilated windows and dilated ones take three different loops
    int[][] cases = {{2, 2, 0, 1}, {3, 2, 1, 1}, {3, 2, 1, 2}}; // k, s, p, d
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      for (int[] c : cases) {
        int planes = 6;
        int ih = 10;
        int iw = 12;
        PoolAxis h = axis(ih, c[0], c[1], c[2], c[3], false);
        PoolAxis w = axis(iw, c[0], c[1], c[2], c[3], false);
        // few distinct values, so windows hold ties
        Tensor x = Tensor.randn(new Generator(3), DType.F64, planes, ih, iw).mul(2).round().to(dt);
        Tensor out = Tensor.empty(dt, planes, h.out(), w.out());
        Tensor arg = Tensor.empty(DType.I32, planes, h.out(), w.out());
        pool.maxForward(x, planes, h, w, out, arg);
        Tensor g = Tensor.randn(new Generator(4), DType.F64, planes, h.out(), w.out()).to(dt);
        Tensor dx = Tensor.zeros(dt, planes, ih, iw);
        pool.maxBackward(g, arg, planes, ih * iw, h.out() * w.out(), dx);
        double[] xs = x.toDoubleArray();
        double[] ys = out.toDoubleArray();
        double[] gs = g.toDoubleArray();
        long[] as = arg.to(DType.I64).toLongArray();
        double[] expectDx = new double[xs.length];
        String what = dt + " k=" + c[0] + " s=" + c[1] + " p=" + c[2] + " d=" + c[3];
        for (int pl = 0; pl < planes; pl++) {
          for (int oy = 0; oy < h.out(); oy++) {
            for (int ox = 0; ox < w.out(); ox++) {
              double best = Double.NEGATIVE_INFINITY;
              int at = -1;
              for (int iy = h.start()[oy]; iy < h.end()[oy]; iy += h.step()) {
                for (int ix = w.start()[ox]; ix < w.end()[ox]; ix += w.step()) {
                  double v = xs[(pl * ih + iy) * iw + ix];
                  if (at < 0 || v > best) {
                    best = v;
                    at = iy * iw + ix;
                  }
                }
              }
              int o = (pl * h.out() + oy) * w.out() + ox;
              assertEquals(best, ys[o], what);
              assertEquals(at, as[o], what + " argmax");
              expectDx[pl * ih * iw + at] += gs[o];
            }
          }
        }
        double[] got = dx.toDoubleArray();
        for (int i = 0; i < got.length; i++) assertEquals(expectDx[i], got[i], 1e-6, what + " dx " + i);
        // without argmax (validation, inference: the 2x2 tiles have a loop of their own) the same values
        Tensor valuesOnly = Tensor.empty(dt, planes, h.out(), w.out());
        pool.maxForward(x, planes, h, w, valuesOnly, null);
        double[] vs = valuesOnly.toDoubleArray();
        for (int i = 0; i < vs.length; i++) assertEquals(ys[i], vs[i], what + " without argmax " + i);
      }
    }
  }

  @Test
  void averagePoolingDividesTheWindowSumAndSpreadsTheGradient() {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      int planes = 4;
      int ih = 9;
      int iw = 7;
      PoolAxis h = axis(ih, 3, 2, 1, 1, true);
      PoolAxis w = axis(iw, 3, 2, 1, 1, true);
      Tensor x = Tensor.randn(new Generator(5), DType.F64, planes, ih, iw).to(dt);
      Tensor out = Tensor.empty(dt, planes, h.out(), w.out());
      pool.avgForward(x, planes, h, w, out);
      Tensor g = Tensor.randn(new Generator(6), DType.F64, planes, h.out(), w.out()).to(dt);
      Tensor dx = Tensor.zeros(dt, planes, ih, iw);
      pool.avgBackward(g, planes, h, w, dx);
      double[] xs = x.toDoubleArray();
      double[] ys = out.toDoubleArray();
      double[] gs = g.toDoubleArray();
      double[] expectDx = new double[xs.length];
      for (int pl = 0; pl < planes; pl++) {
        for (int oy = 0; oy < h.out(); oy++) {
          for (int ox = 0; ox < w.out(); ox++) {
            double s = 0;
            int o = (pl * h.out() + oy) * w.out() + ox;
            for (int iy = h.start()[oy]; iy < h.end()[oy]; iy++) {
              for (int ix = w.start()[ox]; ix < w.end()[ox]; ix++) {
                s += xs[(pl * ih + iy) * iw + ix];
                expectDx[(pl * ih + iy) * iw + ix] += gs[o] / 9;
              }
            }
            assertEquals(s / 9, ys[o], 1e-6, dt + " avg " + o);
          }
        }
      }
      double[] got = dx.toDoubleArray();
      for (int i = 0; i < got.length; i++) assertEquals(expectDx[i], got[i], 1e-6, dt + " avg dx " + i);
    }
  }
}
