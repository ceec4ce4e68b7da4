package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

class RecurrentTest {
  private static Tensor randn(Generator g, DType dt, int... shape) {
    return Tensor.randn(g, dt, shape).requiresGrad(true);
  }

  /** The LSTM equations written with tensor ops: the oracle for the fused cell. */
  private static Tensor[] composed(Tensor gates, Tensor c) {
    int hs = gates.size(-1) / 4;
    int d = gates.dim() - 1;
    Tensor i = gates.narrow(d, 0, hs).sigmoid(), f = gates.narrow(d, hs, hs).sigmoid();
    Tensor g = gates.narrow(d, 2 * hs, hs).tanh(), o = gates.narrow(d, 3 * hs, hs).sigmoid();
    Tensor c2 = f.mul(c).add(i.mul(g));
    return new Tensor[] {o.mul(c2.tanh()), c2};
  }

  @Test
  void lstmCellMatchesTheComposedEquations() {
    Generator gen = new Generator(3);
    for (int[] shape : new int[][] {{5, 12}, {12}, {1, 4}}) {
      Tensor gates = randn(gen, DType.F64, shape).mul(2).detach().requiresGrad(true);
      int[] st = shape.length == 1 ? new int[] {shape[0] / 4} : new int[] {shape[0], shape[1] / 4};
      Tensor c = randn(gen, DType.F64, st);
      Tensor hc = Recurrent.lstmCell(gates, c);
      Tensor[] want = composed(gates, c);
      for (int k = 0; k < 2; k++) {
        double[] w = want[k].toDoubleArray(), got = hc.select(0, k).toDoubleArray();
        assertArrayEquals(want[k].shape(), hc.select(0, k).shape());
        for (int e = 0; e < w.length; e++) assertEquals(w[e], got[e], 1e-14);
      }
    }
  }

  /**
   * The float32 cell (its own array loops) against the float64 one on the same values, forward and
   * backward, batched and not, and with a pool of NaN arrays: every element of its outputs and
   * gradients is written.
   */
  @Test
  void lstmCellInFloat32MatchesFloat64() {
    Generator gen = new Generator(5);
    for (int[] shape : new int[][] {{7, 20}, {3, 64}, {16}}) {
      Tensor g64 = Tensor.randn(gen, DType.F64, shape).mul(2);
      int[] st = shape.length == 1 ? new int[] {shape[0] / 4} : new int[] {shape[0], shape[1] / 4};
      Tensor c64 = Tensor.randn(gen, DType.F64, st);
      Tensor up64 = Tensor.randn(gen, DType.F64, shape.length == 1 ? new int[] {2, shape[0] / 4}
          : new int[] {2, shape[0], shape[1] / 4});
      java.util.function.Supplier<float[][]> run = () -> {
        Tensor gates = g64.to(DType.F32).requiresGrad(true);
        Tensor c = c64.to(DType.F32).requiresGrad(true);
        Tensor hc = Recurrent.lstmCell(gates, c);
        hc.backward(up64.to(DType.F32));
        return new float[][] {hc.toFloatArray(), gates.grad().toFloatArray(), c.grad().toFloatArray()};
      };
      float[][] got = run.get();
      Tensor gates = g64.detach().requiresGrad(true);
      Tensor c = c64.detach().requiresGrad(true);
      Tensor hc = Recurrent.lstmCell(gates, c);
      hc.backward(up64);
      double[][] want = {hc.toDoubleArray(), gates.grad().toDoubleArray(), c.grad().toDoubleArray()};
      for (int k = 0; k < 3; k++) {
        assertEquals(want[k].length, got[k].length);
        for (int e = 0; e < got[k].length; e++) {
          assertEquals(want[k][e], got[k][e], 2e-6 * Math.max(1, Math.abs(want[k][e])), "output " + k + " element " + e);
        }
      }
      int n = shape.length == 1 ? 1 : shape[0];
      int hs = shape[shape.length - 1] / 4;
      dev.ember.testing.PoolChecks.assertEveryElementWritten(run, 4, n * 4 * hs, n * hs, 2 * n * hs);
    }
  }

  @Test
  void lstmCellRejectsMismatchedStates() {
    Tensor gates = Tensor.zeros(3, 8);
    var e = assertThrows(IllegalArgumentException.class, () -> Recurrent.lstmCell(gates, Tensor.zeros(3, 3)));
    assertEquals("lstm_cell: cell state must be [3, 2] for these gates: gates=[3, 8], c=[3, 3]", e.getMessage());
    var e2 = assertThrows(IllegalArgumentException.class, () -> Recurrent.lstmCell(Tensor.zeros(3, 7), Tensor.zeros(3, 1)));
    assertEquals("lstm_cell: gates must be [N, 4*hidden] or [4*hidden]: gates=[3, 7], c=[3, 1]", e2.getMessage());
  }

  /** gru_cell and rnn_cell against one step of the nn.GRU / nn.RNN modules on the same weights (F64). */
  @Test
  void gruAndRnnCellsMatchOneStepOfTheModules() {
    Generator gen = new Generator(11);
    Tensor x = Tensor.randn(gen, DType.F64, 3, 4);
    Tensor h = Tensor.randn(gen, DType.F64, 3, 5);
    dev.ember.nn.GRU gru = new dev.ember.nn.GRU(4, 5, 1, true, false, 0, false, gen);
    gru.to(DType.F64);
    Tensor want = gru.forward(x.unsqueeze(0), h.unsqueeze(0)).output().squeeze(0);
    Tensor got = Recurrent.gruCell(x, h, gru.param("weight_ih_l0"), gru.param("weight_hh_l0"),
        gru.param("bias_ih_l0"), gru.param("bias_hh_l0"));
    assertArrayEquals(want.toDoubleArray(), got.toDoubleArray(), 1e-14);
    Tensor unbatched = Recurrent.gruCell(x.select(0, 1), h.select(0, 1), gru.param("weight_ih_l0"),
        gru.param("weight_hh_l0"), gru.param("bias_ih_l0"), gru.param("bias_hh_l0"));
    assertArrayEquals(want.select(0, 1).toDoubleArray(), unbatched.toDoubleArray(), 1e-14);
    for (String act : new String[] {"tanh", "relu"}) {
      dev.ember.nn.RNN rnn = new dev.ember.nn.RNN(4, 5, 1, act, true, false, 0, false, gen);
      rnn.to(DType.F64);
      Tensor w = rnn.forward(x.unsqueeze(0), h.unsqueeze(0)).output().squeeze(0);
      Tensor g = Recurrent.rnnCell(x, h, rnn.param("weight_ih_l0"), rnn.param("weight_hh_l0"),
          rnn.param("bias_ih_l0"), rnn.param("bias_hh_l0"), act);
      assertArrayEquals(w.toDoubleArray(), g.toDoubleArray(), 1e-14, act);
    }
  }
}
