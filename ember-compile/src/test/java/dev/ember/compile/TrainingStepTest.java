package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

class TrainingStepTest {
  static final BiFunction<Tensor, Tensor, Tensor> CE = F::crossEntropy;

  static Tensor labels(int n, int classes) {
    return Tensor.randint(Generator.global(), 0, classes, n);
  }

  /**
   * Trains two copies of a model (built by {@code make} under one seed), one eagerly and one through a compiled
   * step, on the same batches: each step's loss and every gradient must have the same bits, and so must the
   * weights after the last step. Returns the compiled step.
   */
  static TrainingStep checkSteps(Supplier<Module> make, BiFunction<Tensor, Tensor, Tensor> loss,
      Function<Module, Optimizer> optimizer, List<Tensor[]> batches) {
    Generator.manualSeed(7);
    Module eager = make.get();
    Generator.manualSeed(7);
    Module compiled = make.get();
    Optimizer oe = optimizer.apply(eager);
    Optimizer oc = optimizer.apply(compiled);
    TrainingStep step = Compiler.compileTraining(compiled, loss);
    Map<String, Tensor> pe = eager.namedParameters();
    Map<String, Tensor> pc = compiled.namedParameters();
    for (int s = 0; s < batches.size(); s++) {
      Tensor x = batches.get(s)[0];
      Tensor y = batches.get(s)[1];
      Generator.manualSeed(100 + s); // dropout draws the same masks in both
      Tensor le = loss.apply(eager.call(x), y);
      le.backward();
      Generator.manualSeed(100 + s);
      Tensor lc = step.run(x, y);
      assertBitwise(le.detach(), lc);
      for (String k : pe.keySet()) {
        Tensor ge = pe.get(k).grad();
        Tensor gc = pc.get(k).grad();
        if (ge == null) {
          assertNull(gc, k);
        } else {
          assertBitwise(ge, gc);
        }
      }
      oe.step();
      oc.step();
      oe.zeroGrad();
      oc.zeroGrad();
    }
    for (String k : pe.keySet()) assertBitwise(pe.get(k), pc.get(k));
    for (String k : eager.namedBuffers().keySet()) {
      Tensor be = eager.namedBuffers().get(k);
      Tensor bc = compiled.namedBuffers().get(k);
      if (be.dtype().isFloatingPoint()) assertBitwise(be, bc);
      else assertEquals(be.toDoubleArray()[0], bc.toDoubleArray()[0], k);
    }
    return step;
  }

  static List<Tensor[]> batches(int steps, Supplier<Tensor> x, Supplier<Tensor> y) {
    Generator.manualSeed(3);
    java.util.ArrayList<Tensor[]> out = new java.util.ArrayList<>();
    for (int i = 0; i < steps; i++) out.add(new Tensor[] {x.get(), y.get()});
    return out;
  }

  @Test
  void mlpCrossEntropySgdIsOneGraphAndEagerToTheBit() {
    TrainingStep step = checkSteps(() -> Models.mlp(784, 128, 10), CE, m -> new SGD(m.parameters(), 0.1),
        batches(4, () -> Tensor.randn(32, 1, 28, 28), () -> labels(32, 10)));
    assertTrue(step.isJoint(), step.explain());
    assertTrue(step.breaks().isEmpty(), step.explain());
    String g = step.graph();
    assertTrue(g.contains("cross_entropy_backward("), g);
    assertTrue(g.contains("relu_backward("), g);
    assertTrue(g.contains("mm_tn("), g);
    assertTrue(g.contains("return (%cross_entropy_0, %linear_1, "), g);
  }

  @Test
  void mlpAdamWMatchesEagerWeights() {
    checkSteps(() -> Models.mlp(20, 16, 16, 5), CE, m -> new AdamW(m.parameters(), 1e-2),
        batches(5, () -> Tensor.randn(8, 20), () -> labels(8, 5)));
  }
}
