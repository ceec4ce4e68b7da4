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
  /** Inputs of one step pass, F64, each its own draw: randn scaled by 2, or uniform in [0, 1) where {@code unit}. */
  private static Tensor[] draws(int seed, boolean[] unit, int[]... shapes) {
    Tensor[] t = new Tensor[shapes.length];
    for (int i = 0; i < shapes.length; i++) {
      Generator g = new Generator(seed + i);
      t[i] = unit[i] ? Tensor.rand(g, DType.F64, shapes[i]) : Tensor.randn(g, DType.F64, shapes[i]).mul(2);
    }
    return t;
  }

  private static Tensor[] as(DType dt, Tensor[] ts) {
    Tensor[] out = new Tensor[ts.length];
    for (int i = 0; i < ts.length; i++) out[i] = ts[i].to(dt).contiguous().clone();
    return out;
  }

  /** One step pass on {@code k} with every tensor (inputs and outputs) as given, in place. */
  private interface Pass {
    void run(RecurrentKernels k, Tensor[] t);
  }

  /**
   * Runs {@code pass} in float64 (the interface's double loops) and in float32 on the scalar kernel set and on the
   * default one (the Vector API's when present), and compares every tensor it writes.
   */
  private static void agree(String what, Pass pass, Tensor[] f64) {
    Tensor[] d = as(DType.F64, f64);
    pass.run(K, d);
    for (RecurrentKernels k : new RecurrentKernels[] {CpuBackends.scalar().recurrent(), K}) {
      Tensor[] f = as(DType.F32, f64);
      pass.run(k, f);
      for (int i = 0; i < d.length; i++) {
        double[] want = d[i].toDoubleArray(), got = f[i].toDoubleArray();
        for (int e = 0; e < want.length; e++) {
          assertEquals(want[e], got[e], 2e-5 * (1 + Math.abs(want[e])), what + " tensor " + i + "[" + e + "]");
        }
      }
    }
  }

  /**
   * The whole-sequence step passes (hidden size 20: a vector and a tail on AVX-512, and past one on AVX2) in float32,
   * scalar and vectorized, against the double loops, which follow the gate equations (checked end to end against
   * PyTorch in ember-nn's RnnTest).
   */
  @Test
  void sequenceStepPassesAgreeAcrossKernelSetsAndDtypes() {
    int n = 5, hs = 20;
    int[] g4 = {n, 4 * hs}, g3 = {n, 3 * hs}, st = {n, hs};
    agree("lstmStep", (k, t) -> k.lstmStep(t[0], t[1], t[2], t[3], t[4]),
        draws(10, new boolean[5], g4, st, st, st, st));
    agree("lstmStepBackward", (k, t) -> k.lstmStepBackward(t[0], t[1], t[2], t[3], t[4], t[5], t[6]),
        draws(20, new boolean[] {true, false, true, false, false, false, false}, g4, st, st, st, st, st, g4));
    agree("gruStep", (k, t) -> k.gruStep(t[0], t[1], t[2], t[3], t[4]), draws(30, new boolean[5], g3, g3, st, st, st));
    agree("gruStepBackward", (k, t) -> k.gruStepBackward(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7]),
        draws(40, new boolean[] {true, false, false, false, false, false, false, false}, g3, st, st, st, st, g3, g3,
            st));
  }
}
