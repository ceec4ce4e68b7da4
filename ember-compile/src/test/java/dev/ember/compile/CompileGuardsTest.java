package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.ops.IndexOps;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a compiled module must not freeze at its trace: random draws, values read into Java, a result whose size
 * depends on the data, forward hooks, and the module's tensors as they were (converted, frozen, unfrozen); each
 * case against eager on the same inputs, over several calls.
 */
class CompileGuardsTest {
  /** x plus fresh noise on every call (a VAE's reparameterization draws this way). */
  static final class Noise extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.add(Tensor.randn(x.shape()));
    }
  }

  /** A branch on a value read into Java with toDoubleArray. */
  static final class Branch extends Module {
    final Linear l = registerModule("l", new Linear(4, 3));

    @Override
    public Tensor forward(Tensor x) {
      return x.sum().toDoubleArray()[0] > 0 ? l.call(x) : l.call(x).neg();
    }
  }

  /** The sum of the positive elements, through masked_select (a result sized by the data). */
  static final class PositiveSum extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return IndexOps.maskedSelect(x, x.gt(0)).sum();
    }
  }

  /** A linear layer scaled by a tensor that requires grad but is not a registered parameter. */
  static final class FreeLeaf extends Module {
    final Linear l = registerModule("l", new Linear(4, 4, true, new Generator(3)));
    final Tensor scale = Tensor.full(1.5, DType.F32, 4).requiresGrad(true);

    @Override
    public Tensor forward(Tensor x) {
      return l.call(x).mul(scale);
    }
  }

  private static Tensor eager(Module m, Tensor x) {
    try (Grad off = Grad.off()) {
      return m.call(x);
    }
  }

  @Test
  void randomDrawsInTheForwardAreDrawnOnEveryCallAsEagerDraws() {
    Noise m = new Noise();
    CompiledModule c = Compiler.compile(m);
    Tensor x = Tensor.arange(8).to(DType.F32).reshape(4, 2);
    Tensor previous = null;
    for (int call = 0; call < 3; call++) {
      Generator.manualSeed(40 + call);
      Tensor e = eager(m, x);
      Generator.manualSeed(40 + call);
      Tensor got = eager(c, x);
      assertBitwise(e, got);
      if (previous != null) assertFalse(java.util.Arrays.equals(previous.toFloatArray(), got.toFloatArray()));
      previous = got;
    }
    assertTrue(c.explain().contains("random draw"), c.explain());
  }

  @Test
  void aBranchOnToDoubleArrayFollowsEachCallsValues() {
    Branch m = new Branch();
    CompiledModule c = Compiler.compile(m);
    Tensor pos = Tensor.ones(2, 4);
    Tensor neg = pos.neg();
    for (Tensor x : List.of(pos, neg, pos, neg)) assertBitwise(eager(m, x), eager(c, x));
    assertTrue(c.explain().contains("toDoubleArray"), c.explain());
  }

  @Test
  void maskedSelectIsNotFrozenAtTheTracesMask() {
    PositiveSum m = new PositiveSum();
    CompiledModule c = Compiler.compile(m);
    Tensor a = Tensor.of(new float[] {1, -2, 3, -4}, 4);
    Tensor b = a.neg();
    for (Tensor x : List.of(a, b, a)) assertBitwise(eager(m, x), eager(c, x));
  }

  @Test
  void forwardHooksRunOnEveryCallRegisteredBeforeOrAfterCompiling() {
    Generator.manualSeed(7);
    Sequential m = new Sequential(new Linear(4, 4), new ReLU(), new Linear(4, 2));
    int[] before = {0};
    m.get(0).registerForwardHook((mod, in, out) -> before[0]++);
    CompiledModule c = Compiler.compile(m);
    Tensor x = Tensor.randn(3, 4);
    for (int i = 0; i < 4; i++) assertBitwise(eager(m, x), eager(c, x));
    assertEquals(4 + 4, before[0]); // four eager calls, four compiled ones
    int[] after = {0};
    var handle = m.registerForwardHook((mod, in, out) -> after[0]++);
    for (int i = 0; i < 3; i++) c.call(x);
    assertEquals(3, after[0]);
    handle.remove();
    c.call(x);
    c.call(x);
    assertEquals(3, after[0]);
    assertTrue(c.explain().contains("forward hook"), c.explain());
  }

  @Test
  void convertingTheModuleToAnotherDtypeRetracesOnItsTensors() {
    Generator.manualSeed(8);
    Sequential m = new Sequential(new Linear(5, 3));
    Tensor weight = m.parameters().get(0);
    CompiledModule c = Compiler.compile(m);
    Tensor x = Tensor.randn(2, 5);
    c.call(x);
    m.to(DType.F64);
    assertSame(weight, m.parameters().get(0)); // converted in place, as PyTorch's model.to(dtype)
    Tensor x64 = x.to(DType.F64);
    assertBitwise(eager(m, x64), eager(c, x64));
    assertEquals(DType.F64, eager(c, x64).dtype());
    m.to(DType.F32);
    try (Grad off = Grad.off()) {
      weight.mul_(3);
    }
    assertBitwise(eager(m, x), eager(c, x));
  }

  @Test
  void theTraceCallsResultRequiresGradOnlyWhereEagersDoes() {
    Generator.manualSeed(9);
    Sequential m = new Sequential(new Linear(3, 2));
    for (Tensor p : m.parameters()) p.requiresGrad(false);
    CompiledModule c = Compiler.compile(m);
    Tensor x = Tensor.randn(2, 3);
    assertFalse(m.call(x).requiresGrad());
    assertFalse(c.call(x).requiresGrad()); // the trace
    assertFalse(c.call(x).requiresGrad()); // the graph
    for (Tensor p : m.parameters()) p.requiresGrad(true);
    assertTrue(c.call(x).requiresGrad());
  }

  @Test
  void freezingOrUnfreezingALayerAfterTheTraceTrainsAsEager() {
    Generator.manualSeed(10);
    Sequential e = new Sequential(new Linear(4, 4), new ReLU(), new Linear(4, 2));
    Generator.manualSeed(10);
    Sequential m = new Sequential(new Linear(4, 4), new ReLU(), new Linear(4, 2));
    Optimizer oe = new SGD(e.parameters(), 0.1);
    Optimizer om = new SGD(m.parameters(), 0.1);
    TrainingStep step = Compiler.compileTraining(m, F::mseLoss);
    Generator data = new Generator(11);
    for (int s = 0; s < 6; s++) {
      if (s == 2 || s == 4) { // freeze the first layer, then unfreeze it
        boolean on = s == 4;
        for (Tensor p : e.get(0).parameters()) p.requiresGrad(on);
        for (Tensor p : m.get(0).parameters()) p.requiresGrad(on);
      }
      Tensor x = Tensor.randn(data, 5, 4);
      Tensor y = Tensor.randn(data, 5, 2);
      Tensor le = F.mseLoss(e.call(x), y);
      le.backward();
      oe.step();
      oe.zeroGrad();
      assertBitwise(le.detach(), step.step(x, y, om));
      for (int i = 0; i < e.parameters().size(); i++) {
        assertBitwise(e.parameters().get(i), m.parameters().get(i));
      }
    }
    assertTrue(step.explain().contains("2 of 4 parameters trainable"), step.explain());
  }

  @Test
  void threadsSharingACompiledModuleGetTheirOwnSignaturesResults() throws Exception {
    // a server's request threads on one module: the fast path's plan and its shape were four fields written one by
    // one, so a call could run another batch size's graph (Graph.run: input 0 must be f32[2, 8]: input=[1, 8])
    Generator.manualSeed(13);
    Module m = dev.ember.nn.Models.mlp(8, 16, 4).eval();
    CompiledModule c = Compiler.compile(m);
    Tensor[] xs = {Tensor.randn(1, 8), Tensor.randn(2, 8), Tensor.randn(3, 8)};
    Tensor[] expected = new Tensor[xs.length];
    for (int i = 0; i < xs.length; i++) expected[i] = eager(m, xs[i]);
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(4);
    try {
      List<java.util.concurrent.Future<Integer>> runs = new java.util.ArrayList<>();
      for (int t = 0; t < 4; t++) {
        int seed = t;
        runs.add(pool.submit(() -> {
          int wrong = 0;
          for (int k = 0; k < 3000; k++) {
            int i = (k + seed) % xs.length;
            Tensor y = eager(c, xs[i]);
            if (!java.util.Arrays.equals(expected[i].toFloatArray(), y.toFloatArray())) wrong++;
          }
          return wrong;
        }));
      }
      for (var r : runs) assertEquals(0, r.get(60, java.util.concurrent.TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aTensorThatRequiresGradButIsNoParameterGetsEagersGradientEveryStep() {
    FreeLeaf e = new FreeLeaf();
    FreeLeaf m = new FreeLeaf();
    TrainingStep step = Compiler.compileTraining(m, F::mseLoss);
    Generator data = new Generator(12);
    for (int s = 0; s < 3; s++) {
      Tensor x = Tensor.randn(data, 5, 4);
      Tensor y = Tensor.randn(data, 5, 4);
      F.mseLoss(e.call(x), y).backward();
      step.run(x, y);
      assertNotNull(m.scale.grad(), "step " + s);
      assertBitwise(e.scale.grad(), m.scale.grad());
      e.scale.setGrad(null);
      m.scale.setGrad(null);
      e.zeroGrad(true);
      m.zeroGrad(true);
    }
    assertTrue(step.explain().contains("not a parameter of the module"), step.explain());
  }
}
