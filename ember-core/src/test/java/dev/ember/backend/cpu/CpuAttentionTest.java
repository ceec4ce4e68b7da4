package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.AttentionKernels.Problem;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/** The tiled attention kernels against the explicit softmax(q k^T * scale) v in double. */
class CpuAttentionTest {
  private static final AttentionKernels K = Device.CPU.backend().attention();

  @Test
  void tiledForwardMatchesTheExplicitFormula() {
    int b = 2, l = 9, s = 11, e = 4, ev = 3;
    for (boolean causal : new boolean[] {false, true}) {
      Problem p = new Problem(b, l, s, e, ev, 0.5, causal, -1, 4, 3, null, 0, 0);
      Tensor q = Tensor.randn(new Generator(1), DType.F64, b, l, e);
      Tensor k = Tensor.randn(new Generator(2), DType.F64, b, s, e);
      Tensor v = Tensor.randn(new Generator(3), DType.F64, b, s, ev);
      Tensor out = Tensor.empty(DType.F64, b, l, ev);
      double[] lse = new double[b * l];
      K.forward(p, q, k, v, out, lse);
      double[] qa = q.toDoubleArray(), ka = k.toDoubleArray(), va = v.toDoubleArray(), oa = out.toDoubleArray();
      for (int bb = 0; bb < b; bb++) {
        for (int i = 0; i < l; i++) {
          double[] w = new double[s];
          double max = Double.NEGATIVE_INFINITY;
          for (int j = 0; j < s; j++) {
            double d = 0;
            for (int c = 0; c < e; c++) d += qa[(bb * l + i) * e + c] * ka[(bb * s + j) * e + c];
            w[j] = p.allowed(i, j) ? d * 0.5 : Double.NEGATIVE_INFINITY;
            max = Math.max(max, w[j]);
          }
          double sum = 0;
          for (int j = 0; j < s; j++) sum += w[j] = Math.exp(w[j] - max);
          assertEquals(max + Math.log(sum), lse[bb * l + i], 1e-12);
          for (int c = 0; c < ev; c++) {
            double o = 0;
            for (int j = 0; j < s; j++) o += w[j] / sum * va[(bb * s + j) * ev + c];
            assertEquals(o, oa[(bb * l + i) * ev + c], 1e-12);
          }
        }
      }
    }
  }

  @Test
  void plainForwardRunsFloat32WithoutMaskOrDropoutAndNamesWhatItGotOtherwise() {
    Problem p = new Problem(2, 3, 4, 2, 2, 1, false, -1, 4, 4, null, 0, 0);
    assertTrue(K.runsPlainForward(p, DType.F32));
    assertTrue(!K.runsPlainForward(p, DType.F64));
    Problem dropout = new Problem(2, 3, 4, 2, 2, 1, false, -1, 4, 4, null, 0.5, 1);
    assertTrue(!K.runsPlainForward(dropout, DType.F32));
    Tensor q = Tensor.zeros(DType.F64, 2, 3, 2);
    Tensor k = Tensor.zeros(DType.F64, 2, 4, 2);
    Tensor out = Tensor.empty(DType.F64, 2, 3, 2);
    IllegalArgumentException ex = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> K.plainForward(p, q, k, k, out));
    assertEquals("scaled_dot_product_attention: plain forward kernel for float32 without mask or dropout, got "
        + "float64 q, float64 k, float64 v, float64 out and 2 batch elements on " + Parallel.threads() + " threads",
        ex.getMessage());
  }

  @Test
  void bandMaskAndDropoutFactorsFollowTheProblem() {
    Problem p = new Problem(2, 5, 6, 1, 1, 1, true, 2, 4, 4, null, 0.4, 99);
    Tensor band = Tensor.empty(DType.BOOL, 5, 6);
    K.bandMask(p, band);
    Tensor keep = Tensor.empty(DType.F32, 2, 5, 6);
    K.dropoutKeep(p, keep);
    double[] m = band.toDoubleArray();
    double[] kv = keep.toDoubleArray();
    for (int i = 0; i < 5; i++) {
      for (int j = 0; j < 6; j++) assertEquals(j <= i && j >= i - 2 ? 1.0 : 0.0, m[i * 6 + j], "i=" + i + " j=" + j);
    }
    for (int bb = 0, o = 0; bb < 2; bb++) {
      for (int i = 0; i < 5; i++) {
        for (int j = 0; j < 6; j++, o++) {
          assertEquals((float) p.keep(bb, i, j), kv[o]);
          assertTrue(kv[o] == 0 || kv[o] == (float) (1 / 0.6));
        }
      }
    }
  }

  @Test
  void counterBasedUniformIsInTheUnitInterval() {
    for (long i = 0; i < 1000; i++) {
      double u = Problem.uniform(7, i);
      assertTrue(u >= 0 && u < 1);
    }
  }

  /**
   * The float32 forward (on the Vector API set: VectorAttention's fused kernel) against the formula in double: value
   * widths a whole number of register tiles (v read in place) or not (v packed), lengths and block sizes that leave
   * partial row groups, key panels and blocks, causality, windows, and a query that sees no key (NaN, lse -inf).
   */
  @Test
  void float32ForwardMatchesTheFormulaInDouble() {
    int[][] shapes = { // b, l, s, e, ev, bq, bk
        {2, 13, 70, 5, 8, 5, 20}, {1, 100, 90, 16, 32, 64, 128}, {3, 30, 41, 7, 40, 12, 33}, {1, 4, 1, 3, 1, 1, 1}};
    FloatKernels fk = ((CpuBackend) Device.CPU.backend()).floatKernels();
    for (int[] sh : shapes) {
      for (int window : new int[] {-1, 0, 6}) {
        for (boolean causal : new boolean[] {false, true}) {
          int b = sh[0], l = sh[1], s = sh[2], e = sh[3], ev = sh[4];
          Problem p = new Problem(b, l, s, e, ev, 0.7, causal, window, sh[5], sh[6], null, 0, 0);
          Tensor q = Tensor.randn(new Generator(4), b, l, e).mul(2);
          Tensor k = Tensor.randn(new Generator(5), b, s, e);
          Tensor v = Tensor.randn(new Generator(6), b, s, ev);
          Tensor out = Tensor.empty(DType.F32, b, l, ev);
          double[] lse = new double[b * l];
          boolean fused = fk.attentionForward(p, q.storage().floats(), q.offset(), k.storage().floats(), k.offset(),
              v.storage().floats(), v.offset(), out.storage().floats(), out.offset(), lse);
          assertEquals(fk.name().equals("cpu-vector"), fused, "the Vector API set has a fused float32 forward");
          if (!fused) K.forward(p, q, k, v, out, lse);
          String where = java.util.Arrays.toString(sh) + " window " + window + " causal " + causal;
          checkAgainstFormula(p, q, k, v, out, lse, where);
        }
      }
    }
  }

  private static void checkAgainstFormula(Problem p, Tensor q, Tensor k, Tensor v, Tensor out, double[] lse,
      String where) {
    int l = p.l(), s = p.s(), e = p.e(), ev = p.ev();
    double[] qa = q.toDoubleArray(), ka = k.toDoubleArray(), va = v.toDoubleArray(), oa = out.toDoubleArray();
    for (int bb = 0; bb < p.batch(); bb++) {
      for (int i = 0; i < l; i++) {
        double[] w = new double[s];
        double max = Double.NEGATIVE_INFINITY;
        for (int j = 0; j < s; j++) {
          double d = 0;
          for (int c = 0; c < e; c++) d += qa[(bb * l + i) * e + c] * ka[(bb * s + j) * e + c];
          w[j] = p.allowed(i, j) ? d * p.scale() : Double.NEGATIVE_INFINITY;
          max = Math.max(max, w[j]);
        }
        String at = where + " b " + bb + " i " + i;
        if (max == Double.NEGATIVE_INFINITY) { // no visible key
          assertEquals(Double.NEGATIVE_INFINITY, lse[bb * l + i], at);
          for (int c = 0; c < ev; c++) assertTrue(Double.isNaN(oa[(bb * l + i) * ev + c]), at);
          continue;
        }
        double sum = 0;
        for (int j = 0; j < s; j++) sum += w[j] = Math.exp(w[j] - max);
        assertEquals(max + Math.log(sum), lse[bb * l + i], 1e-5 * (1 + Math.abs(max)), at);
        for (int c = 0; c < ev; c++) {
          double o = 0;
          for (int j = 0; j < s; j++) o += w[j] / sum * va[(bb * s + j) * ev + c];
          assertEquals(o, oa[(bb * l + i) * ev + c], 1e-5 + 1e-5 * Math.abs(o), at + " c " + c);
        }
      }
    }
  }

  /** The float32 forward's tasks are (batch, query block) pairs whatever the thread count: the same bits. */
  @Test
  void float32ForwardIsBitwiseTheSameOnOneAndTwoThreads() {
    int before = Parallel.threads();
    int b = 3, l = 150, s = 170, e = 24, ev = 40;
    Tensor q = Tensor.randn(new Generator(7), b, l, e);
    Tensor k = Tensor.randn(new Generator(8), b, s, e);
    Tensor v = Tensor.randn(new Generator(9), b, s, ev);
    float[][] outs = new float[2][];
    double[][] lses = new double[2][];
    try {
      for (int t = 1; t <= 2; t++) {
        Parallel.setThreads(t);
        Problem p = new Problem(b, l, s, e, ev, 0.3, true, 90, 32, 64, null, 0, 0);
        Tensor out = Tensor.empty(DType.F32, b, l, ev);
        lses[t - 1] = new double[b * l];
        K.forward(p, q, k, v, out, lses[t - 1]);
        outs[t - 1] = out.toFloatArray();
      }
    } finally {
      Parallel.setThreads(before);
    }
    org.junit.jupiter.api.Assertions.assertArrayEquals(outs[0], outs[1]);
    org.junit.jupiter.api.Assertions.assertArrayEquals(lses[0], lses[1]);
  }
  /**
   * The float32 forward's bits do not follow the JIT: the first call (interpreted kernel) against the 400th (C2 has
   * compiled it). Each row's exp sum once went through reduceLanes(ADD), whose rounding changes when C2 compiles it,
   * so a forward computed early in a run and the same one computed later differed in the last bit (CI caught it).
   */
  @Test
  void float32ForwardIsBitwiseTheSameBeforeAndAfterC2CompilesIt() {
    int b = 2, l = 96, s = 200, e = 16, ev = 32;
    Tensor q = Tensor.randn(new Generator(10), b, l, e);
    Tensor k = Tensor.randn(new Generator(11), b, s, e);
    Tensor v = Tensor.randn(new Generator(12), b, s, ev);
    Problem p = new Problem(b, l, s, e, ev, 0.25, false, -1, 64, 128, null, 0, 0);
    float[] first = null;
    double[] firstLse = null;
    for (int it = 0; it < 400; it++) {
      Tensor out = Tensor.empty(DType.F32, b, l, ev);
      double[] lse = new double[b * l];
      K.forward(p, q, k, v, out, lse);
      if (it == 0) {
        first = out.toFloatArray();
        firstLse = lse;
      } else if (it == 399) {
        org.junit.jupiter.api.Assertions.assertArrayEquals(first, out.toFloatArray(), "output, call 1 vs call 400");
        org.junit.jupiter.api.Assertions.assertArrayEquals(firstLse, lse, "lse, call 1 vs call 400");
      }
    }
  }
}
