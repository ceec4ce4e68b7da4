package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static dev.ember.compile.TrainingStepTest.CE;
import static dev.ember.compile.TrainingStepTest.assertSame;
import static dev.ember.compile.TrainingStepTest.labels;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** {@link TrainingStep#step(Tensor, Tensor, Optimizer)}: the optimizer's update fused into the compiled step. */
class FusedOptimizerStepTest {
  /**
   * Two copies of a model from one seed: one stepped eagerly (zeroGrad, backward, step), one by the fused compiled
   * step. Each loss and, after each step, every parameter must have the same bits, and the fused step must leave no
   * gradient on a parameter. Returns the compiled step.
   */
  static TrainingStep checkFused(Supplier<Module> make, Function<Module, Optimizer> optimizer, List<Tensor[]> batches,
      List<double[]> hookSums) {
    return checkFused(make, CE, optimizer, batches, hookSums);
  }

  static TrainingStep checkFused(Supplier<Module> make, java.util.function.BiFunction<Tensor, Tensor, Tensor> loss,
      Function<Module, Optimizer> optimizer, List<Tensor[]> batches, List<double[]> hookSums) {
    Generator.manualSeed(3);
    Module eager = make.get();
    Generator.manualSeed(3);
    Module compiled = make.get();
    Optimizer oe = optimizer.apply(eager);
    Optimizer oc = optimizer.apply(compiled);
    if (hookSums != null) { // a pre-hook reads every gradient: the fused step must set them for it
      oc.registerStepPreHook(o -> {
        double s = 0;
        for (Tensor p : compiled.parameters()) s += p.grad().sum().item();
        hookSums.add(new double[] {s});
      });
    }
    TrainingStep step = Compiler.compileTraining(compiled, loss);
    Map<String, Tensor> pe = eager.namedParameters();
    Map<String, Tensor> pc = compiled.namedParameters();
    for (int s = 0; s < batches.size(); s++) {
      Tensor x = batches.get(s)[0];
      Tensor y = batches.get(s)[1];
      oe.zeroGrad();
      Generator.manualSeed(100 + s); // dropout draws the same masks in both
      Tensor le = loss.apply(eager.call(x), y);
      le.backward();
      oe.step();
      Generator.manualSeed(100 + s);
      Tensor lc = step.step(x, y, oc);
      assertSame("step " + s + " loss", le.detach(), lc);
      for (String k : pe.keySet()) {
        assertBitwise(pe.get(k), pc.get(k));
        assertNull(pc.get(k).grad(), "step " + s + ": no gradient is left on " + k);
      }
    }
    return step;
  }

  static List<Tensor[]> batches(int steps, int n, int in, int classes) {
    List<Tensor[]> out = new ArrayList<>();
    for (int i = 0; i < steps; i++) out.add(new Tensor[] {Tensor.randn(n, in), labels(n, classes)});
    return out;
  }

  @Test
  void sgdWithMomentumAndWeightDecayHasEagersBits() {
    TrainingStep step = checkFused(() -> Models.mlp(784, 128, 10),
        m -> new SGD(m.parameters(), Map.of("lr", 0.05, "momentum", 0.9, "weight_decay", 1e-3)),
        batches(4, 32, 784, 10), null);
    assertTrue(step.isJoint(), step.explain());
  }

  /**
   * The MNIST MLP at batch 32 and 20: its first layer's product runs as W x^T with the weight's rows read in place
   * (EpilogueFusion's linear_epilogue, {@code Backend.matmulWeightRows}); eager's bits on one thread and on two.
   */
  @Test
  void theWeightRowsProductHasEagersBitsOnOneAndTwoThreads() {
    int before = dev.ember.backend.cpu.Parallel.threads();
    try {
      for (int threads = 1; threads <= 2; threads++) {
        dev.ember.backend.cpu.Parallel.setThreads(threads);
        for (int batch : new int[] {32, 20}) {
          TrainingStep step = checkFused(() -> Models.mlp(784, 128, 10), m -> new SGD(m.parameters(), 0.01),
              batches(3, batch, 784, 10), null);
          assertTrue(step.graph().contains("linear_epilogue"), step.graph());
        }
      }
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(before);
    }
  }

  @Test
  void adamWHasEagersBits() {
    TrainingStep step = checkFused(() -> Models.mlp(20, 16, 16, 5), m -> new AdamW(m.parameters(), 1e-2),
        batches(5, 8, 20, 5), null);
    assertTrue(step.isJoint(), step.explain());
  }

  @Test
  void transformerLayersWithAdamWHaveEagersBits() {
    for (double dropout : new double[] {0.0, 0.1}) {
      TrainingStep step = checkFused(() -> new dev.ember.nn.TransformerEncoderLayer(16, 4, 32, dropout, "gelu", 1e-5,
          true, false, true, new Generator(3)), dev.ember.nn.functional.F::mseLoss,
          m -> new AdamW(m.parameters(), Map.of("lr", 1e-2, "weight_decay", 0.01)), tensors(3), null);
      assertTrue(step.isJoint(), step.explain());
    }
  }

  static List<Tensor[]> tensors(int steps) {
    List<Tensor[]> out = new ArrayList<>();
    for (int i = 0; i < steps; i++) out.add(new Tensor[] {Tensor.randn(2, 5, 16), Tensor.randn(2, 5, 16)});
    return out;
  }

  @Test
  void aStepPreHookReadsTheGradientsAsInEagerSteps() {
    List<double[]> sums = new ArrayList<>();
    checkFused(() -> Models.mlp(12, 8, 4), m -> new SGD(m.parameters(), 0.1), batches(3, 6, 12, 4), sums);
    assertEquals(3, sums.size(), "the hook ran once per step, the gradients set for it");
  }

  @Test
  void gradientsAlreadyThereAreAddedToAsRunAddsThem() {
    Generator.manualSeed(5);
    Module eager = Models.mlp(6, 8, 3);
    Generator.manualSeed(5);
    Module compiled = Models.mlp(6, 8, 3);
    Optimizer oe = new SGD(eager.parameters(), 0.1);
    Optimizer oc = new SGD(compiled.parameters(), 0.1);
    TrainingStep step = Compiler.compileTraining(compiled, CE);
    List<Tensor[]> data = batches(4, 5, 6, 3);
    for (int s = 0; s < data.size(); s++) {
      Tensor x = data.get(s)[0];
      Tensor y = data.get(s)[1];
      Tensor w = eager.parameters().get(0);
      Tensor wc = compiled.parameters().get(0);
      w.setGrad(Tensor.ones(w.shape())); // an accumulated gradient on the first weight only
      wc.setGrad(Tensor.ones(wc.shape()));
      CE.apply(eager.call(x), y).backward();
      oe.step();
      step.step(x, y, oc);
      for (int i = 0; i < eager.parameters().size(); i++) {
        assertBitwise(eager.parameters().get(i), compiled.parameters().get(i));
      }
      assertBitwise(w.grad(), wc.grad()); // kept, with this step's gradient added
      for (int i = 1; i < compiled.parameters().size(); i++) assertNull(compiled.parameters().get(i).grad());
      oe.zeroGrad();
      oc.zeroGrad();
    }
  }

  @Test
  void aStepThatIsNotOneGraphRunsTheFallbackThenSteps() {
    Generator.manualSeed(4);
    Module eager = new TrainingStepTest.Reads();
    Generator.manualSeed(4);
    Module compiled = new TrainingStepTest.Reads();
    Optimizer oe = new SGD(eager.parameters(), 0.1);
    Optimizer oc = new SGD(compiled.parameters(), 0.1);
    TrainingStep step = Compiler.compileTraining(compiled, dev.ember.nn.functional.F::mseLoss);
    for (int s = 0; s < 3; s++) {
      Tensor x = Tensor.randn(4, 6);
      Tensor y = Tensor.randn(4, 3);
      oe.zeroGrad();
      dev.ember.nn.functional.F.mseLoss(eager.call(x), y).backward();
      oe.step();
      step.step(x, y, oc);
      for (int i = 0; i < eager.parameters().size(); i++) {
        assertBitwise(eager.parameters().get(i), compiled.parameters().get(i));
        assertNull(compiled.parameters().get(i).grad());
      }
    }
    assertTrue(!step.isJoint() && !step.breaks().isEmpty(), step.explain());
  }

  /** SGD without momentum that notes, per update, whether the gradient arrived deferred (its product not yet run). */
  static final class Noting extends Optimizer {
    final List<Boolean> deferred = new ArrayList<>();
    private final boolean blocks;

    Noting(List<Tensor> params, boolean blocks) {
      super("Noting", params, Map.<String, Object>of("lr", 0.05), Map.of());
      this.blocks = blocks;
      for (Tensor p : params) dev.ember.tensor.Deferred.consumeInBlocks(p, blocks);
    }

    @Override
    protected boolean takesGradientsInBlocks() {
      return blocks;
    }

    @Override
    protected void update(dev.ember.optim.ParamGroup g, Tensor param, Tensor grad, Map<String, Tensor> state) {
      deferred.add(grad.storage().deferred() != null);
      kernels(param).sgd(param, grad, ((Number) g.get("lr")).doubleValue(), 0, 1);
    }
  }

  @Test
  void weightGradientsReachAnOptimizerThatTakesBlocksDeferredWithEagersBits() {
    for (boolean blocks : new boolean[] {true, false}) {
      Noting[] opts = new Noting[2];
      checkFused(() -> Models.mlp(784, 128, 10), m -> {
        Noting o = new Noting(m.parameters(), blocks);
        opts[opts[0] == null ? 0 : 1] = o;
        return o;
      }, batches(3, 32, 784, 10), null);
      List<Boolean> fused = opts[1].deferred;
      // per step: weight, bias, weight, bias; the trace step runs run() + step(), whose small gradients are plain
      assertEquals(List.of(false, false, false, false), fused.subList(0, 4));
      assertEquals(List.of(blocks, false, blocks, false), fused.subList(4, 8), "blocks " + blocks);
      assertEquals(fused.subList(4, 8), fused.subList(8, 12));
      assertTrue(opts[0].deferred.stream().noneMatch(d -> d), "eager defers only weights of 4 MB and more");
    }
  }

  @Test
  void aNullOptimizerIsRefused() {
    TrainingStep step = Compiler.compileTraining(Models.mlp(6, 3), CE);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> step.step(Tensor.randn(2, 6), labels(2, 3), null));
    assertEquals("TrainingStep.step: optimizer must not be null", e.getMessage());
  }

  @Test
  void stepIfFiniteUpdatesOnlyOnFiniteStepsAndLeavesTheBadStepsGradients() {
    for (boolean joint : new boolean[] {true, false}) {
      Generator.manualSeed(6);
      Module eager = joint ? Models.mlp(12, 8, 4) : new TrainingStepTest.Reads();
      Generator.manualSeed(6);
      Module compiled = joint ? Models.mlp(12, 8, 4) : new TrainingStepTest.Reads();
      java.util.function.BiFunction<Tensor, Tensor, Tensor> loss = joint ? CE : dev.ember.nn.functional.F::mseLoss;
      Optimizer oe = new AdamW(eager.parameters(), 1e-2);
      Optimizer oc = new AdamW(compiled.parameters(), 1e-2);
      TrainingStep step = Compiler.compileTraining(compiled, loss);
      int in = joint ? 12 : 6;
      for (int s = 0; s < 5; s++) {
        float[] xs = Tensor.randn(4, in).toFloatArray();
        boolean bad = s == 2 || s == 3;
        if (bad) xs[5] = Float.NaN;
        Tensor x = Tensor.of(xs, 4, in);
        Tensor y = joint ? labels(4, 4) : Tensor.randn(4, 3);
        oe.zeroGrad();
        Tensor le = loss.apply(eager.call(x), y);
        le.backward();
        if (!bad) oe.step();
        Tensor lc = step.stepIfFinite(x, y, oc);
        assertEquals(!bad, step.updated(), "step " + s);
        assertSame("step " + s + " loss", le.detach(), lc);
        for (int i = 0; i < eager.parameters().size(); i++) {
          Tensor pe = eager.parameters().get(i);
          Tensor pc = compiled.parameters().get(i);
          assertBitwise(pe, pc);
          if (bad) {
            assertBitwise(pe.grad(), pc.grad()); // left for the caller to name the bad one
          } else {
            assertNull(pc.grad());
          }
        }
        oc.zeroGrad();
      }
      assertEquals(joint, step.isJoint(), step.explain());
    }
  }
}
