package dev.ember.optim;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** clipGradNorm / clipGradValue against make_clip_fixtures.py (PyTorch 1.13), and gradient accumulation. */
class ClipGradTest {
  static final Map<String, Tensor> FIX = Fixtures.read(ClipGradTest.class, "clip_fixtures.txt");

  static List<Tensor> params() {
    List<Tensor> ps = new ArrayList<>();
    for (int i = 0; i < 3; i++) {
      Tensor g = FIX.get("grad." + i);
      Tensor p = Tensor.zeros(DType.F64, g.shape()).requiresGrad(true);
      p.setGrad(g.cloneContiguous());
      ps.add(p);
    }
    return ps;
  }

  @Test
  void clipGradNormMatchesPyTorch() {
    Object[][] cases = {{"norm1_2.0", 1.0, 2.0}, {"norm2_1.5", 2.0, 1.5}, {"norm3_1.0", 3.0, 1.0},
        {"norminf_0.5", Double.POSITIVE_INFINITY, 0.5}, {"norm2_100.0", 2.0, 100.0}};
    for (Object[] c : cases) {
      String name = (String) c[0];
      List<Tensor> ps = params();
      double total = GradClip.clipGradNorm(ps, (double) c[2], (double) c[1], true);
      double expected = FIX.get(name + ".total").item();
      assertEquals(expected, total, 1e-12 * expected, name + " total norm");
      for (int i = 0; i < 3; i++) assertClose(FIX.get(name + ".grad." + i), ps.get(i).grad(), 1e-12, 1e-12, name + " grad " + i);
    }
  }

  @Test
  void clipGradValueMatchesPyTorch() {
    List<Tensor> ps = params();
    GradClip.clipGradValue(ps, 0.5);
    for (int i = 0; i < 3; i++) assertClose(FIX.get("value_0.5.grad." + i), ps.get(i).grad(), 0, 0, "grad " + i);
  }

  @Test
  void gradNormLeavesGradientsAlone() {
    List<Tensor> ps = params();
    double n = GradClip.gradNorm(ps, 2.0);
    assertEquals(FIX.get("norm2_1.5.total").item(), n, 1e-12);
    for (int i = 0; i < 3; i++) assertClose(FIX.get("grad." + i), ps.get(i).grad(), 0, 0, "grad " + i);
  }

  @Test
  void nonFiniteNormIsAnErrorWhenAsked() {
    List<Tensor> ps = params();
    ps.get(1).setGrad(Tensor.of(new double[] {1, Double.NaN, 0, 0, 0}, 5));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> GradClip.clipGradNorm(ps, 1.0, 2.0, true));
    assertEquals("clip_grad_norm: the total norm of order 2.0 for gradients is non-finite (NaN), so it cannot be clipped;"
        + " hint: pass errorIfNonfinite=false to scale the gradients by the non-finite norm anyway", e.getMessage());
    assertTrue(Double.isNaN(GradClip.clipGradNorm(ps, 1.0, 2.0, false)));
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> GradClip.clipGradNorm(ps, 1.0, 0.0, false));
    assertEquals("clip_grad_norm: norm_type must be > 0 or infinity, got 0.0", bad.getMessage());
  }

  @Test
  void accumulatedMicroBatchesEqualTheFullBatchGradient() {
    Generator gen = new Generator(9);
    Tensor x = Tensor.randn(gen, DType.F64, 8, 3), y = Tensor.randn(gen, DType.F64, 8, 1);
    Tensor w0 = Tensor.randn(gen, DType.F64, 3, 1);
    Tensor full = w0.cloneContiguous().requiresGrad(true);
    x.matmul(full).sub(y).square().mean().backward();
    Tensor acc = w0.cloneContiguous().requiresGrad(true);
    SGD opt = new SGD(List.of(acc), 0.1);
    GradientAccumulation ga = new GradientAccumulation(opt, 4);
    for (int k = 0; k < 4; k++) {
      assertEquals(false, ga.ready());
      ga.backward(x.narrow(0, 2 * k, 2).matmul(acc).sub(y.narrow(0, 2 * k, 2)).square().mean());
    }
    assertTrue(ga.ready());
    assertArrayEquals(full.grad().toDoubleArray(), acc.grad().toDoubleArray(), 1e-14);
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> ga.backward(acc.sum()));
    assertEquals("GradientAccumulation: 4 micro-batches are already accumulated; call step() before the next backward",
        e.getMessage());
    double[] expected = w0.sub(full.grad().mul(0.1)).toDoubleArray();
    assertTrue(ga.step());
    assertArrayEquals(expected, acc.toDoubleArray(), 1e-14);
    assertEquals(null, acc.grad());
    assertEquals(false, ga.step());
  }
}
