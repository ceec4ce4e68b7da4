package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static dev.ember.compile.TrainingStepTest.checkSteps;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Grad;
import dev.ember.nn.Models;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Reduction;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BiFunction;
import org.junit.jupiter.api.Test;

/** {@link CrossEntropyRows}: a training step's cross entropy and its gradient as row loops, with eager's bits. */
class CrossEntropyRowsTest {
  /** Batches of n rows whose targets have {@code ignored} entries -100 in step s (s + ignored of them at most n). */
  private static List<Tensor[]> batches(int steps, int n, int in, int classes, int ignored) {
    Generator.manualSeed(5);
    List<Tensor[]> out = new ArrayList<>();
    for (int s = 0; s < steps; s++) {
      long[] y = Tensor.randint(Generator.global(), 0, classes, n).toLongArray();
      for (int k = 0; k < Math.min(n, ignored * s); k++) y[k] = -100;
      out.add(new Tensor[] {Tensor.randn(n, in), Tensor.of(y, n)});
    }
    return out;
  }

  @Test
  void meanAndSumWithAndWithoutIgnoredTargetsHaveEagersBits() {
    List<BiFunction<Tensor, Tensor, Tensor>> losses = List.of(F::crossEntropy,
        (o, t) -> F.crossEntropy(o, t, Reduction.SUM));
    for (BiFunction<Tensor, Tensor, Tensor> loss : losses) {
      for (int ignored : new int[] {0, 2, 3}) { // 3: the last step ignores every target (NaN mean, zero gradient)
        TrainingStep step = checkSteps(() -> Models.mlp(6, 8, 4), loss, m -> new SGD(m.parameters(), 0.1),
            batches(3, 6, 6, 4, ignored));
        String g = step.graph();
        assertTrue(g.contains("= log_softmax(") && g.contains("= nll_loss(") && g.contains("cross_entropy_backward("),
            g);
        assertFalse(g.contains("= cross_entropy("), g);
        FusedOptimizerStepTest.checkFused(() -> Models.mlp(6, 8, 4), loss, m -> new SGD(m.parameters(), 0.1),
            batches(3, 6, 6, 4, ignored), null);
      }
    }
  }

  @Test
  void manyLogitsScaleTheRowsAsEagerDoes() {
    // 48 x 100 logits: past 4096 eager scales the rows by a broadcast multiply, and so does the node
    TrainingStep step = checkSteps(() -> Models.mlp(10, 12, 100), F::crossEntropy, m -> new SGD(m.parameters(), 0.1),
        batches(2, 48, 10, 100, 1));
    assertTrue(step.graph().contains("= nll_loss("), step.graph());
  }

  @Test
  void weightsAndSmoothingKeepTheOp() {
    Tensor w = Tensor.rand(4).add(0.5);
    for (BiFunction<Tensor, Tensor, Tensor> loss : List.<BiFunction<Tensor, Tensor, Tensor>>of(
        (o, t) -> F.crossEntropy(o, t, null, -100, Reduction.MEAN, 0.1),
        (o, t) -> F.crossEntropy(o, t, w, -100, Reduction.MEAN, 0.0))) {
      TrainingStep step = checkSteps(() -> Models.mlp(6, 8, 4), loss, m -> new SGD(m.parameters(), 0.1),
          batches(2, 6, 6, 4, 0));
      if (step.isJoint()) assertFalse(step.graph().contains("nll_loss"), step.graph()); // (weights: a break)
    }
  }

  @Test
  void aTargetOutOfRangeThrowsEagersError() {
    TrainingStep step = Compiler.compileTraining(Models.mlp(6, 8, 4), F::crossEntropy);
    step.run(Tensor.randn(5, 6), Tensor.of(new long[] {0, 1, 2, 3, 0}, 5));
    assertTrue(step.graph().contains("= nll_loss("), step.graph());
    Tensor bad = Tensor.of(new long[] {0, 1, 4, 3, 0}, 5);
    Tensor x = Tensor.randn(5, 6);
    IllegalArgumentException eager = assertThrows(IllegalArgumentException.class,
        () -> F.crossEntropy(Tensor.randn(5, 4), bad));
    IllegalArgumentException compiled = assertThrows(IllegalArgumentException.class, () -> step.run(x, bad));
    assertEquals(eager.getMessage().substring(0, eager.getMessage().indexOf("input=")),
        compiled.getMessage().substring(0, compiled.getMessage().indexOf("input=")));
  }

  @Test
  void aGradientOnTheTapeTakesTheOpsRule() {
    // the row loops take a plain float32 g; one that requires grad (a graph through it) runs the op's own rule
    Tensor logits = Tensor.randn(6, 4);
    Tensor y = Tensor.of(new long[] {0, 1, 2, 3, -100, 1}, 6);
    Tensor g = Tensor.scalar(0.75, dev.ember.tensor.DType.F32).requiresGrad(true);
    Tensor expected;
    Tensor x = logits.detach().requiresGrad(true);
    try (Grad on = Grad.on()) {
      expected = Autograd.backwardOf(F.crossEntropy(x, y), g.detach())[0];
    }
    Tensor logp = logits.logSoftmax(1);
    assertBitwise(expected, CrossEntropyRows.grad(g, logp, y, logits, -100, Reduction.MEAN).detach());
    assertBitwise(expected, CrossEntropyRows.grad(g.detach(), logp, y, logits, -100, Reduction.MEAN));
  }
}
