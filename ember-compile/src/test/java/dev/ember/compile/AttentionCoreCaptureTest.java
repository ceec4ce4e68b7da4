package dev.ember.compile;

import static dev.ember.compile.TrainingStepTest.batches;
import static dev.ember.compile.TrainingStepTest.checkSteps;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.MultiheadAttention;
import dev.ember.nn.Transformer;
import dev.ember.nn.functional.F;
import dev.ember.optim.AdamW;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * MultiheadAttention's attention core in a compiled training step: one {@code attention_core} node whose replay is
 * eager's head-by-head forward, and one {@code attention_core_backward} node applying eager's backward rule, so the
 * step has eager's bits.
 */
class AttentionCoreCaptureTest {
  /** Attention of x over itself (packed projection) or over its first L-1 positions (three projections), masked. */
  static final class Masked extends Module {
    private final MultiheadAttention mha;
    private final boolean cross;
    private final Tensor mask;
    private final Tensor keyPadding;

    Masked(MultiheadAttention mha, boolean cross, Tensor mask, Tensor keyPadding) {
      this.mha = registerModule("mha", mha);
      this.cross = cross;
      this.mask = mask;
      this.keyPadding = keyPadding;
    }

    @Override
    public Tensor forward(Tensor x) {
      int seq = mha.batchFirst() ? 1 : 0;
      Tensor kv = cross ? x.narrow(seq, 0, x.size(seq) - 1) : x;
      return mha.forward(x, kv, kv, keyPadding, mask, false, false).output();
    }
  }

  private static Tensor keyPadding(int n, int s) {
    boolean[] pad = new boolean[n * s];
    for (int i = 0; i < pad.length; i++) pad[i] = i % s == s - 1 - i / s; // one key per batch element, not all
    return Tensor.of(pad, n, s);
  }

  @Test
  void theCoreIsOneNodeForwardAndBackwardWithEagersBits() {
    int n = 3, l = 6, e = 16, h = 4;
    for (boolean batchFirst : new boolean[] {true, false}) {
      for (boolean cross : new boolean[] {false, true}) {
        int s = cross ? l - 1 : l;
        Tensor mask = cross ? Tensor.randn(new Generator(5), l, s) : Transformer.generateSquareSubsequentMask(l);
        Tensor pad = keyPadding(n, s);
        TrainingStep step = checkSteps(() -> new Masked(new MultiheadAttention(e, h, 0.0, true, batchFirst,
            new Generator(3)), cross, mask, pad), F::mseLoss, m -> new AdamW(m.parameters(), 1e-2),
            batches(3, () -> batchFirst ? Tensor.randn(n, l, e) : Tensor.randn(l, n, e),
                () -> batchFirst ? Tensor.randn(n, l, e) : Tensor.randn(l, n, e)));
        String what = "batchFirst " + batchFirst + " cross " + cross + ":\n";
        assertTrue(step.isJoint(), what + step.explain());
        String g = step.graph();
        assertEquals(1, g.split("= attention_core\\(", -1).length - 1, what + g);
        assertTrue(g.contains("heads=4, batch_first=" + batchFirst), what + g);
        // the packed projection's gradient is one node; three projections get one each, from one rule's application
        assertEquals(cross ? 3 : 1, g.split("= attention_core_backward\\(", -1).length - 1, what + g);
        assertFalse(g.contains("softmax"), what + g);
        // kept for the backward: at least the core's output, its projections, and in its autograd node the
        // probabilities [H, N, L, S] and the scaled q
        long projections = cross ? (long) n * (l + 2 * s) * e : (long) n * l * 3 * e;
        long core = 2L * n * l * e + projections + (long) h * n * l * s;
        assertTrue(Rematerialization.keptBytes(step.lastGraph()) >= core * 4, what + step.explain());
      }
    }
  }

  /**
   * The compiled step's gradients in float64 against central differences of the compiled step's own loss (its
   * graph reads the parameters when it runs), through a masked core with three projections and a packed one.
   */
  @Test
  void compiledCoreGradientsMatchCentralDifferencesInFloat64() {
    int n = 2, l = 4, e = 8, h = 2;
    for (boolean cross : new boolean[] {false, true}) {
      int s = cross ? l - 1 : l;
      Generator gen = new Generator(13);
      Module m = new Masked(new MultiheadAttention(e, h, 0.0, true, true, gen), cross,
          Tensor.randn(gen, DType.F64, l, s), keyPadding(n, s));
      m.to(DType.F64);
      for (Tensor p : m.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.5, gen);
      Tensor x = Tensor.randn(gen, DType.F64, n, l, e);
      Tensor y = Tensor.randn(gen, DType.F64, n, l, e);
      TrainingStep step = Compiler.compileTraining(m, F::mseLoss);
      step.run(x, y); // traces
      for (Tensor p : m.parameters()) p.setGrad(null);
      step.run(x, y); // the graph
      assertTrue(step.isJoint() && step.graph().contains("= attention_core_backward("), step.explain());
      java.util.Map<String, Tensor> grads = new java.util.LinkedHashMap<>();
      for (java.util.Map.Entry<String, Tensor> p : m.namedParameters().entrySet()) {
        grads.put(p.getKey(), p.getValue().grad().detach().cloneContiguous());
      }
      double eps = 1e-6;
      for (java.util.Map.Entry<String, Tensor> p : m.namedParameters().entrySet()) {
        Tensor w = p.getValue();
        double[] analytic = grads.get(p.getKey()).toDoubleArray();
        for (int i = 0; i < w.numel(); i++) {
          double w0 = w.toDoubleArray()[i];
          double plus = lossAt(step, m, w, i, w0 + eps, x, y);
          double minus = lossAt(step, m, w, i, w0 - eps, x, y);
          lossAt(step, m, w, i, w0, x, y);
          double numeric = (plus - minus) / (2 * eps);
          assertEquals(numeric, analytic[i], 1e-5 + 1e-3 * Math.abs(numeric),
              "cross " + cross + " d loss / d " + p.getKey() + "[" + i + "]");
        }
      }
    }
  }

  /** The compiled step's loss with element i of w set to v (the parameters' gradients dropped again). */
  private static double lossAt(TrainingStep step, Module m, Tensor w, int i, double v, Tensor x, Tensor y) {
    try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
      w.view(-1).narrow(0, i, 1).fill_(v);
    }
    double loss = step.run(x, y).item();
    for (Tensor p : m.parameters()) p.setGrad(null);
    return loss;
  }

  /** A plain kernel asked for keeps scaled_dot_product_attention's ops in the graph, as in eager. */
  @Test
  void thePlainKernelKeepsTheComposedOps() {
    TrainingStep step = checkSteps(() -> new Masked(new MultiheadAttention(8, 2, 0.0, true, true, new Generator(3))
        .attentionKernel(dev.ember.nn.functional.Attention.Kernel.plain()), false, null, null), F::mseLoss,
        m -> new SGD(m.parameters(), 0.1), batches(2, () -> Tensor.randn(2, 5, 8), () -> Tensor.randn(2, 5, 8)));
    String g = step.graph();
    assertFalse(g.contains("attention_core"), g);
    assertTrue(g.contains("= softmax("), g);
  }
}
