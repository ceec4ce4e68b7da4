package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.backend.RecurrentKernels;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The LSTM cell's element loops against their formulas. */
class CpuRecurrentTest {
  private static final RecurrentKernels K = Device.CPU.backend().recurrent();

  @Test
  void stateAndHiddenFollowTheCellEquations() {
    int n = 3, hs = 5;
    Tensor act = Tensor.rand(new Generator(1), DType.F64, n, 4 * hs);
    Tensor c = Tensor.randn(new Generator(2), DType.F64, n, hs);
    Tensor out = Tensor.empty(DType.F64, 2, n, hs);
    K.lstmCellState(act, c, out);
    double[] a = act.toDoubleArray(), cv = c.toDoubleArray(), o = out.toDoubleArray();
    double[] t = new double[n * hs];
    for (int r = 0; r < n; r++) {
      for (int j = 0; j < hs; j++) {
        int g0 = r * 4 * hs;
        double next = a[g0 + hs + j] * cv[r * hs + j] + a[g0 + j] * a[g0 + 2 * hs + j];
        assertEquals(next, o[n * hs + r * hs + j], 1e-15);
        t[r * hs + j] = Math.tanh(next);
      }
    }
    Tensor tanhC = Tensor.of(t, n, hs);
    K.lstmCellHidden(act, tanhC, out);
    o = out.toDoubleArray();
    for (int r = 0; r < n; r++) {
      for (int j = 0; j < hs; j++) assertEquals(a[r * 4 * hs + 3 * hs + j] * t[r * hs + j], o[r * hs + j], 1e-15);
    }
  }

  @Test
  void backwardGivesTheCellStateGradient() {
    int n = 2, hs = 3;
    Tensor act = Tensor.rand(new Generator(3), DType.F64, n, 4 * hs);
    Tensor tanhC = Tensor.rand(new Generator(4), DType.F64, n, hs);
    Tensor g = Tensor.randn(new Generator(5), DType.F64, 2, n, hs);
    Tensor cPrev = Tensor.randn(new Generator(6), DType.F64, n, hs);
    Tensor dGates = Tensor.empty(DType.F64, n, 4 * hs);
    Tensor dc = Tensor.empty(DType.F64, n, hs);
    K.lstmCellBackward(act, tanhC, g, cPrev, dGates, dc);
    double[] a = act.toDoubleArray(), t = tanhC.toDoubleArray(), gv = g.toDoubleArray(), d = dc.toDoubleArray();
    for (int r = 0; r < n; r++) {
      for (int j = 0; j < hs; j++) {
        int e = r * hs + j;
        double f = a[r * 4 * hs + hs + j], o = a[r * 4 * hs + 3 * hs + j];
        double dcNew = gv[n * hs + e] + gv[e] * o * (1 - t[e] * t[e]);
        assertEquals(dcNew * f, d[e], 1e-15);
      }
    }
  }
}
