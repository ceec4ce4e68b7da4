package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Dropout;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Reduction;
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
      assertSame("step " + s + " loss", le.detach(), lc);
      for (String k : pe.keySet()) {
        Tensor ge = pe.get(k).grad();
        Tensor gc = pc.get(k).grad();
        if (ge == null) {
          assertNull(gc, k);
        } else {
          assertSame("step " + s + " grad of " + k, ge, gc);
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

  /** Bitwise equality, the message naming what differs. */
  static void assertSame(String what, Tensor expected, Tensor actual) {
    try {
      assertBitwise(expected, actual);
    } catch (AssertionError e) {
      throw new AssertionError(what + ": " + e.getMessage(), e);
    }
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
    // the loss, the logits, the gradients; CrossEntropyRows: the loss and its gradient as row loops over log_softmax
    assertTrue(g.contains("return (%nll_loss_0, %linear_0, "), g);
    assertTrue(g.contains("= log_softmax(%linear_0, dim=1)"), g);
    // ReluGradFromOutput: relu's backward reads the activation, so the first linear takes the relu as its epilogue
    // and nothing is recomputed
    assertTrue(g.contains("= linear_epilogue(") && g.contains("activation=relu"), g);
    assertTrue(g.contains("relu_backward(%matmul_0, %linear_epilogue_0)"), g);
    assertFalse(g.contains("= relu("), g);
  }

  @Test
  void reluGradFromOutputSavesTheRecomputedReluAndTheSeparateActivation() {
    List<Pass> without = new java.util.ArrayList<>(Pass.training());
    without.removeIf(p -> p instanceof ReluGradFromOutput);
    int[] ops = new int[2];
    for (int i = 0; i < 2; i++) {
      Generator.manualSeed(7);
      Module m = Models.mlp(20, 16, 5);
      TrainingStep step = Compiler.compileTraining(m, CE, i == 0 ? without : Pass.training());
      step.run(Tensor.randn(4, 20), labels(4, 5));
      ops[i] = step.lastGraph().opCount();
    }
    assertEquals(ops[0] - 2, ops[1], "the relu and its recomputation are gone");
    Graph g = Compiler.trace(in -> in[0].relu(), Tensor.randn(2, 3));
    assertEquals(g.toString(), new ReluGradFromOutput().run(g).toString(), "a graph without relu_backward is kept");
  }

  @Test
  void mlpAdamWMatchesEagerWeights() {
    checkSteps(() -> Models.mlp(20, 16, 16, 5), CE, m -> new AdamW(m.parameters(), 1e-2),
        batches(5, () -> Tensor.randn(8, 20), () -> labels(8, 5)));
  }

  @Test
  void lenet5IsOneGraphWithOpaqueConvolutionAndPoolingBackwards() {
    TrainingStep step = checkSteps(() -> Models.lenet5(10), CE, m -> new SGD(m.parameters(), 0.05),
        batches(3, () -> Tensor.randn(4, 1, 28, 28), () -> labels(4, 10)));
    assertTrue(step.isJoint(), step.explain());
    assertTrue(step.graph().contains("conv2d_backward("), step.graph());
  }

  @Test
  void convnetInTrainingModeUpdatesRunningStatisticsOncePerStep() {
    TrainingStep step = checkSteps(() -> Models.convnet(3, 8, 5), CE, m -> new AdamW(m.parameters(), 1e-3),
        batches(3, () -> Tensor.randn(4, 3, 8, 8), () -> labels(4, 5)));
    assertTrue(step.isJoint(), step.explain());
    assertTrue(step.graph().contains("counts_batches=true"), step.graph());
  }

  @Test
  void transformerEncoderLayersAreOneGraphAndMatchEager() {
    for (boolean normFirst : new boolean[] {false, true}) {
      for (String act : List.of("relu", "gelu")) {
        TrainingStep step = checkSteps(() -> new TransformerEncoderLayer(16, 4, 32, 0.0, act, 1e-5, true, normFirst,
            true, new Generator(3)), F::mseLoss, m -> new AdamW(m.parameters(), 1e-2),
            batches(3, () -> Tensor.randn(2, 5, 16), () -> Tensor.randn(2, 5, 16)));
        assertTrue(step.isJoint(), step.explain());
        String g = step.graph();
        assertTrue(g.contains("layer_norm"), g);
        // the attention core is one node, as in eager (one autograd node), and so is its backward rule
        assertFalse(g.contains("scaled_dot_product_attention("), g);
        assertFalse(g.contains("= softmax("), g);
        assertTrue(g.contains(": f32[2, 5, 16] = attention_core(%") && g.contains("heads=4, batch_first=true"), g);
        assertTrue(g.contains(": f32[2, 5, 48] = attention_core_backward(%"), g);
      }
    }
  }

  @Test
  void aTransformerLayerWithDropoutsIsOneGraphDrawingEagersMasks() {
    // attention dropout draws its mask inside one composite op: traced as one checkpointed node, whose backward
    // redraws the step's mask; the layer's other dropouts are ops of their own
    TrainingStep step = checkSteps(() -> new TransformerEncoderLayer(16, 4, 32, 0.1, "relu", 1e-5, true, false,
        true, new Generator(3)), F::mseLoss, m -> new AdamW(m.parameters(), 1e-2),
        batches(3, () -> Tensor.randn(2, 5, 16), () -> Tensor.randn(2, 5, 16)));
    assertTrue(step.isJoint(), step.explain());
    String g = step.graph();
    assertTrue(g.contains("checkpoint_backward(%"), g);
    assertTrue(g.contains("scaled_dot_product_attention(") && g.contains("dropout_p=0.1"), g);
  }

  @Test
  void dropoutInTrainingDrawsANewMaskEveryStepAsEager() {
    TrainingStep step = checkSteps(() -> new Sequential(new Linear(6, 16), new Dropout(0.3), new Linear(16, 3)),
        F::mseLoss, m -> new SGD(m.parameters(), 0.1),
        batches(4, () -> Tensor.randn(5, 6), () -> Tensor.randn(5, 3)));
    assertTrue(step.isJoint(), step.explain());
    String g = step.graph();
    assertTrue(g.contains("= dropout("), g);
    assertTrue(g.contains("mul_backward(%"), g); // the mask's product, applied again to each run's output
  }

  @Test
  void anEmbeddingModelIsOneGraph() {
    TrainingStep step = checkSteps(
        () -> new Sequential(new Embedding(20, 8), new Flatten(), new Linear(24, 3)), CE,
        m -> new SGD(m.parameters(), 0.1),
        batches(3, () -> Tensor.randint(Generator.global(), 0, 20, 4, 3), () -> labels(4, 3)));
    assertTrue(step.isJoint(), step.explain());
    assertTrue(step.graph().contains("embedding_backward("), step.graph());
  }

  @Test
  void lossesMatchEager() {
    Map<String, BiFunction<Tensor, Tensor, Tensor>> regression = new java.util.LinkedHashMap<>();
    regression.put("mse", F::mseLoss);
    regression.put("mse sum", (o, t) -> F.mseLoss(o, t, Reduction.SUM));
    regression.put("l1", F::l1Loss);
    regression.put("smooth_l1", F::smoothL1Loss);
    regression.put("huber", (o, t) -> F.huberLoss(o, t, Reduction.MEAN, 0.5));
    regression.put("bce_with_logits", (o, t) -> F.bceWithLogits(o, t.sigmoid()));
    for (Map.Entry<String, BiFunction<Tensor, Tensor, Tensor>> e : regression.entrySet()) {
      TrainingStep step = checkSteps(() -> Models.mlp(6, 8, 3), e.getValue(), m -> new SGD(m.parameters(), 0.1),
          batches(3, () -> Tensor.randn(5, 6), () -> Tensor.randn(5, 3)));
      assertTrue(step.isJoint(), e.getKey() + ": " + step.explain());
    }
    Map<String, BiFunction<Tensor, Tensor, Tensor>> classification = new java.util.LinkedHashMap<>();
    classification.put("cross_entropy sum", (o, t) -> F.crossEntropy(o, t, Reduction.SUM));
    classification.put("cross_entropy smoothing", (o, t) -> F.crossEntropy(o, t, null, -100, Reduction.MEAN, 0.1));
    classification.put("nll", (o, t) -> F.nllLoss(F.logSoftmax(o, 1), t));
    classification.put("cross_entropy of clamped logits", (o, t) -> F.crossEntropy(o.clamp(-0.5, 0.5), t));
    for (Map.Entry<String, BiFunction<Tensor, Tensor, Tensor>> e : classification.entrySet()) {
      checkSteps(() -> Models.mlp(6, 8, 4), e.getValue(), m -> new SGD(m.parameters(), 0.1),
          batches(3, () -> Tensor.randn(5, 6), () -> labels(5, 4)));
    }
  }

  @Test
  void ignoredTargetsChangeTheScaleEachBatchAsEager() {
    // the mean divides by the number of counted targets, which the replayed backward reads from each batch
    List<Tensor[]> data = new java.util.ArrayList<>();
    Generator.manualSeed(5);
    for (int i = 0; i < 3; i++) {
      long[] y = Tensor.randint(Generator.global(), 0, 4, 6).toLongArray();
      for (int k = 0; k <= i; k++) y[k] = -100;
      data.add(new Tensor[] {Tensor.randn(6, 6), Tensor.of(y, 6)});
    }
    TrainingStep step = checkSteps(() -> Models.mlp(6, 8, 4), CE, m -> new SGD(m.parameters(), 0.1), data);
    assertTrue(step.isJoint(), step.explain());
  }

  /** A linear layer applied twice: its gradients are sums of two uses, add nodes of the graph. */
  static final class Twice extends Module {
    private final Linear lin;

    Twice() {
      lin = registerModule("lin", new Linear(6, 6));
    }

    @Override
    public String name() {
      return "Twice";
    }

    @Override
    public Tensor forward(Tensor x) {
      return lin.call(lin.call(x).relu());
    }
  }

  @Test
  void aParameterUsedTwiceGetsTheSumOfItsGradients() {
    TrainingStep step = checkSteps(Twice::new, F::mseLoss, m -> new SGD(m.parameters(), 0.1),
        batches(3, () -> Tensor.randn(5, 6), () -> Tensor.randn(5, 6)));
    assertTrue(step.isJoint(), step.explain());
    assertTrue(step.graph().contains("= add(%mm_tn_"), step.graph());
  }

  @Test
  void gradientsAccumulateOntoExistingOnesAsEager() {
    Generator.manualSeed(9);
    Module eager = Models.mlp(6, 8, 3);
    Generator.manualSeed(9);
    Module compiled = Models.mlp(6, 8, 3);
    TrainingStep step = Compiler.compileTraining(compiled, F::mseLoss);
    for (int i = 0; i < 3; i++) { // no zeroGrad: trace, then two graph runs, each adding to the last
      Tensor x = Tensor.randn(5, 6);
      Tensor y = Tensor.randn(5, 3);
      F.mseLoss(eager.call(x), y).backward();
      step.run(x, y);
    }
    for (String k : eager.namedParameters().keySet()) {
      assertBitwise(eager.namedParameters().get(k).grad(), compiled.namedParameters().get(k).grad());
    }
  }

  /** A forward that reads a value into Java: the step cannot be one graph. */
  static final class Reads extends Module {
    private final Linear lin;

    Reads() {
      lin = registerModule("lin", new Linear(6, 3));
    }

    @Override
    public String name() {
      return "Reads";
    }

    @Override
    public Tensor forward(Tensor x) {
      Tensor h = lin.call(x);
      return h.sum().item() > 0 ? h.relu() : h.tanh();
    }
  }

  @Test
  void aStepThatCannotBeOneGraphRunsTheForwardCompiledAndTheBackwardEagerly() {
    TrainingStep step = checkSteps(Reads::new, F::mseLoss, m -> new SGD(m.parameters(), 0.1),
        batches(3, () -> Tensor.randn(5, 6), () -> Tensor.randn(5, 3)));
    assertFalse(step.isJoint());
    String explain = step.explain();
    assertTrue(explain.contains("compiled forward + eager backward"), explain);
    assertTrue(explain.contains("item: reads a tensor's value into Java"), explain);
  }

  @Test
  void aNewInputShapeTracesAgain() {
    Generator.manualSeed(2);
    TrainingStep step = Compiler.compileTraining(Models.mlp(6, 8, 3), CE);
    step.run(Tensor.randn(4, 6), labels(4, 3));
    step.run(Tensor.randn(7, 6), labels(7, 3));
    String explain = step.explain();
    assertTrue(explain.contains("training step f32[4, 6], i64[4] train: 1 joint graph"), explain);
    assertTrue(explain.contains("training step f32[7, 6], i64[7] train: 1 joint graph"), explain);
  }

  @Test
  void rematerializationRecomputesTheReluTheWeightGradientReads() {
    Generator.manualSeed(4);
    Module m = Models.mlp(784, 128, 10);
    Tensor x = Tensor.randn(32, 784);
    Tensor y = labels(32, 10);
    TrainingStep plain = Compiler.compileTraining(m, CE, Pass.defaults());
    plain.run(x, y);
    Graph before = plain.lastGraph();
    Graph after = new Rematerialization().run(before);
    String g = after.toString();
    // the forward's relu feeds the second linear; the backward's dW reads a relu computed again from the linear
    assertTrue(g.contains("%relu_1 : f32[32, 128] = relu(%linear_0)"), g);
    assertTrue(g.contains("mm_tn(%cross_entropy_backward_0, %relu_1)"), g);
    assertTrue(g.indexOf("%relu_1 ") > g.indexOf("%cross_entropy_0 "), "recomputed in the backward:\n" + g);
    assertEquals(before.opCount() + 1, after.opCount());
    long kept = Rematerialization.keptBytes(before);
    assertEquals(kept - 32 * 128 * 4, Rematerialization.keptBytes(after), g);
    for (Pass p : List.of(new Rematerialization())) { // the same values, bitwise
      Tensor[] a = before.runAll(x, y);
      Tensor[] b = p.run(before).runAll(x, y);
      for (int i = 0; i < a.length; i++) assertSame("output " + i, a[i], b[i]);
    }
    for (Tensor p : m.parameters()) p.setGrad(null);
    TrainingStep step = checkSteps(() -> Models.mlp(784, 128, 10), CE, mm -> new SGD(mm.parameters(), 0.1),
        batches(3, () -> Tensor.randn(32, 784), () -> labels(32, 10)));
    assertTrue(step.explain().contains("Rematerialization"), step.explain());
    assertTrue(step.explain().contains("forward values kept for the backward: "), step.explain());
  }

  @Test
  void badArgumentsAreRefusedByName() {
    Module m = Models.mlp(6, 3);
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> Compiler.compileTraining(m, (o, t) -> o.sub(t)).run(Tensor.randn(4, 6), Tensor.randn(4, 3)));
    assertEquals("compileTraining: the loss must be a scalar, got shape [4, 3]", e.getMessage());
    for (Tensor p : m.parameters()) assertNull(p.grad(), "a failed trace leaves the gradients as they were");
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> Compiler.compileTraining(null, F::mseLoss));
    IllegalStateException s = org.junit.jupiter.api.Assertions.assertThrows(IllegalStateException.class,
        () -> Compiler.compileTraining(m, F::mseLoss).graph());
    assertTrue(s.getMessage().contains("not called yet"), s.getMessage());
  }
}
