package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.LinearAxis;
import dev.ember.backend.ResamplingKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * The CPU resampling kernels through the SPI: each forward against its index tables read element by
 * element, and each backward as the forward's adjoint ({@code <A x, g> = <x, A^T g>}).
 */
class CpuResamplingTest {
  private final ResamplingKernels resample = Device.CPU.backend().resampling();

  private static final int PLANES = 3;
  private static final int IH = 5;
  private static final int IW = 6;

  @Test
  void nearestReadsTheIndexedElementAndItsBackwardIsTheAdjoint() {
    int[] hIdx = {0, 0, 1, 2, 2, 3, 4, 4};
    int[] wIdx = {5, 4, 0, 0, 1};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor x = randn(1, dt, PLANES, IH, IW);
      Tensor y = Tensor.empty(dt, PLANES, hIdx.length, wIdx.length);
      resample.nearestForward(x, PLANES, IH, IW, hIdx, wIdx, y);
      double[] xs = x.toDoubleArray();
      double[] ys = y.toDoubleArray();
      for (int p = 0; p < PLANES; p++) {
        for (int i = 0; i < hIdx.length; i++) {
          for (int j = 0; j < wIdx.length; j++) {
            assertEquals(xs[(p * IH + hIdx[i]) * IW + wIdx[j]], ys[(p * hIdx.length + i) * wIdx.length + j]);
          }
        }
      }
      Tensor g = randn(2, dt, y.shape());
      Tensor dx = Tensor.zeros(dt, x.shape());
      resample.nearestBackward(g, PLANES, IH, IW, hIdx, wIdx, dx);
      assertAdjoint(x, y, g, dx, "nearest " + dt);
    }
  }

  @Test
  void bilinearMixesFourNeighboursAndItsBackwardIsTheAdjoint() {
    LinearAxis h = new LinearAxis(new int[] {0, 1, 3, 4}, new int[] {1, 2, 4, 4}, new double[] {0.75, 0.5, 0.25, 1},
        new double[] {0.25, 0.5, 0.75, 0});
    LinearAxis w = new LinearAxis(new int[] {0, 2, 5}, new int[] {1, 3, 5}, new double[] {0.5, 0.125, 1},
        new double[] {0.5, 0.875, 0});
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor x = randn(3, dt, PLANES, IH, IW);
      Tensor y = Tensor.empty(dt, PLANES, 4, 3);
      resample.bilinearForward(x, PLANES, IH, IW, h, w, y);
      double[] xs = x.toDoubleArray();
      double[] ys = y.toDoubleArray();
      for (int p = 0; p < PLANES; p++) {
        for (int i = 0; i < 4; i++) {
          for (int j = 0; j < 3; j++) {
            int r0 = (p * IH + h.i0()[i]) * IW;
            int r1 = (p * IH + h.i1()[i]) * IW;
            double t0 = xs[r0 + w.i0()[j]] * w.l0()[j] + xs[r0 + w.i1()[j]] * w.l1()[j];
            double t1 = xs[r1 + w.i0()[j]] * w.l0()[j] + xs[r1 + w.i1()[j]] * w.l1()[j];
            assertEquals(t0 * h.l0()[i] + t1 * h.l1()[i], ys[(p * 4 + i) * 3 + j], 1e-6, "bilinear " + dt);
          }
        }
      }
      Tensor g = randn(4, dt, y.shape());
      Tensor dx = Tensor.zeros(dt, x.shape());
      resample.bilinearBackward(g, PLANES, IH, IW, h, w, dx);
      assertAdjoint(x, y, g, dx, "bilinear " + dt);
    }
  }

  @Test
  void paddingReadsTheMappedElementOrTheConstant() {
    int[] mapH = {-1, 1, 0, 1, 2, 3, 4, 3}; // a constant row, a reflected one, the rows, a reflected one
    int[] mapW = {0, 0, 1, 2, 3, 4, 5, -1, 5};
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor x = randn(5, dt, PLANES, IH, IW);
      Tensor y = Tensor.empty(dt, PLANES, mapH.length, mapW.length);
      resample.padForward(x, PLANES, IH, IW, mapH, mapW, 1.5, y);
      double[] xs = x.toDoubleArray();
      double[] ys = y.toDoubleArray();
      for (int p = 0; p < PLANES; p++) {
        for (int i = 0; i < mapH.length; i++) {
          for (int j = 0; j < mapW.length; j++) {
            double expect = mapH[i] < 0 || mapW[j] < 0 ? 1.5 : xs[(p * IH + mapH[i]) * IW + mapW[j]];
            assertEquals(expect, ys[(p * mapH.length + i) * mapW.length + j]);
          }
        }
      }
      Tensor g = randn(6, dt, y.shape());
      Tensor dx = Tensor.zeros(dt, x.shape());
      resample.padBackward(g, PLANES, IH, IW, mapH, mapW, dx);
      // the constant is no linear map of x: take it out of y before the adjoint check
      Tensor y0 = Tensor.empty(dt, y.shape());
      resample.padForward(x, PLANES, IH, IW, mapH, mapW, 0, y0);
      assertAdjoint(x, y0, g, dx, "pad " + dt);
    }
  }

  private static Tensor randn(int seed, DType dt, int... shape) {
    return Tensor.randn(new Generator(seed), DType.F64, shape).to(dt);
  }

  /** {@code <y, g> = <x, dx>}: dx is the adjoint of the linear map x -> y applied to g. */
  private static void assertAdjoint(Tensor x, Tensor y, Tensor g, Tensor dx, String what) {
    double lhs = dot(y.toDoubleArray(), g.toDoubleArray());
    double rhs = dot(x.toDoubleArray(), dx.toDoubleArray());
    assertEquals(lhs, rhs, 1e-5 * (1 + Math.abs(lhs)), what + ": the backward is not the forward's adjoint");
  }

  private static double dot(double[] a, double[] b) {
    double s = 0;
    for (int i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  }
}
