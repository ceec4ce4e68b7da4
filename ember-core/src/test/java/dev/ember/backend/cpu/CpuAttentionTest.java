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
}
