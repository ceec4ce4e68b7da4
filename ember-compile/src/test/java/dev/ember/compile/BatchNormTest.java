package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BatchNormTest {
  /** A conv-BN-ReLU block whose running statistics and affine parameters are not the identity. */
  private static Module block(boolean convBias) {
    Generator.manualSeed(11);
    Module m = new Sequential(new Conv2d(3, 8, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1,
        convBias, "zeros", Generator.global()), new BatchNorm2d(8), new ReLU());
    try (Grad off = Grad.off()) {
      for (int i = 0; i < 3; i++) m.call(Tensor.randn(4, 3, 6, 6).mul(2).add(0.5)); // running stats move
      m.namedParameters().get("1.weight").copy_(Tensor.rand(8).add(0.5));
      m.namedParameters().get("1.bias").copy_(Tensor.randn(8));
    }
    return m.eval();
  }

  private static void assertClose(Tensor expected, Tensor actual, double rel) {
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    assertEquals(e.length, a.length);
    for (int i = 0; i < e.length; i++) {
      assertTrue(Math.abs(e[i] - a[i]) <= rel * Math.max(1, Math.abs(e[i])), i + ": " + e[i] + " vs " + a[i]);
    }
  }

  @Test
  void evalBatchNormFoldsIntoTheConvolution() {
    for (boolean bias : new boolean[] {true, false}) {
      Module m = block(bias);
      Tensor x = Tensor.randn(2, 3, 6, 6);
      Tensor eager = m.call(x);
      CompiledModule c = Compiler.compile(m, Pass.inference());
      assertClose(eager, c.call(x), 1e-5);
      Graph g = c.lastGraph();
      assertEquals(1, g.opCount(), c.graph()); // the folded conv2d, with the relu after it in its epilogue
      assertTrue(c.graph().contains("conv2d(%x0, %const_0, %const_1"), c.graph());
      assertTrue(c.graph().contains("activation=relu"), c.graph());
      assertTrue(c.explain().contains("3 ops traced, 1 after passes"), c.explain());
      assertClose(eager, c.call(x), 1e-5);
    }
  }

  @Test
  void withoutFoldingEvalBatchNormIsBitwise() {
    Module m = block(true);
    Tensor x = Tensor.randn(2, 3, 6, 6);
    CompiledModule c = Compiler.compile(m);
    assertBitwise(m.call(x), c.call(x));
    assertTrue(c.graph().contains("batch_norm(%conv2d_0, %1_running_mean, %1_running_var, %1_weight, %1_bias, training=false"),
        c.graph());
  }

  @Test
  void aBatchNormThatIsNotAloneAfterItsConvolutionStays() {
    Module m = block(true);
    Graph g = Compiler.trace(in -> m.call(in[0]).add(((Sequential) m).get(0).call(in[0])), Tensor.randn(1, 3, 6, 6));
    Graph f = new BatchNormFolding().run(new CommonSubexpressionElimination().run(g));
    assertEquals(1, f.nodes().stream().filter(n -> n.op().equals("batch_norm")).count(), f.toString());
  }

  @Test
  void trainingConvnetIsOneGraphCountingBatchesAndMatchesEager() {
    Generator.manualSeed(12);
    Module a = Models.convnet(3, 8, 5);
    Generator.manualSeed(12);
    Module b = Models.convnet(3, 8, 5);
    CompiledModule c = Compiler.compile(b);
    for (int step = 0; step < 2; step++) {
      Tensor x = Tensor.randn(4, 3, 8, 8);
      assertBitwise(a.call(x), c.call(x));
    }
    for (Map.Entry<String, Tensor> e : a.stateDict().entrySet()) {
      assertBitwise(e.getValue(), b.stateDict().get(e.getKey()));
    }
    String explain = c.explain();
    // a training BatchNorm is one op that also counts the batch (num_batches_tracked), so the graph repeats it
    assertTrue(explain.contains("f32[4, 3, 8, 8] train: 1 graph"), explain);
    assertTrue(c.breaks().isEmpty(), explain);
    assertTrue(c.graph().contains("counts_batches=true"), c.graph());
    assertEquals(2L, ((dev.ember.nn.BatchNorm2d) ((dev.ember.nn.Sequential) b).get(1)).numBatchesTracked());
  }
}
