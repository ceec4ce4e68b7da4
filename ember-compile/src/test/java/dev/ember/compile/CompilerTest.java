package dev.ember.compile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

class CompilerTest {
  static int[] bits(Tensor t) {
    float[] v = t.toFloatArray();
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) b[i] = Float.floatToRawIntBits(v[i]);
    return b;
  }

  static void assertBitwise(Tensor expected, Tensor actual) {
    assertArrayEquals(expected.shape(), actual.shape());
    assertEquals(expected.dtype(), actual.dtype());
    assertArrayEquals(bits(expected), bits(actual));
  }

  /** Eager and compiled outputs of {@code m} on x, twice (trace, then the cached graph): the same bits. */
  static CompiledModule checkBitwise(Module m, Tensor x) {
    Tensor eager;
    try (Grad off = Grad.off()) {
      eager = m.call(x);
    }
    CompiledModule c = Compiler.compile(m);
    assertBitwise(eager, c.call(x));
    assertBitwise(eager, c.call(x));
    assertEquals(1, c.signatures());
    assertTrue(c.breaks().isEmpty(), c.explain());
    return c;
  }

  @Test
  void mlpRunsAsOneGraphBitwise() {
    Generator.manualSeed(1);
    Module mlp = Models.mlp(784, 128, 10).eval();
    CompiledModule c = checkBitwise(mlp, Tensor.randn(32, 1, 28, 28));
    String g = c.graph();
    assertTrue(g.contains("= linear(%"), g);
    assertTrue(g.contains("activation=relu"), g);
    assertTrue(g.contains("parameter(1.weight)"), g);
    assertTrue(g.contains("f32[32, 10]"), g);
    assertTrue(g.trim().endsWith("return %linear_0"), g);
    assertEquals(3, c.lastGraph().opCount(), g); // flatten (a reshape), linear with relu (EpilogueFusion), linear
    assertEquals("""
        %x0 : f32[32, 1, 28, 28] = input(0)
        %reshape_0 : f32[32, 784] = reshape(%x0, shape=[32, 784])
        %1_weight : f32[128, 784] = parameter(1.weight)
        %1_bias : f32[128] = parameter(1.bias)
        %linear_epilogue_0 : f32[32, 128] = linear_epilogue(%reshape_0, %1_weight, %1_bias, None, activation=relu)
        %3_weight : f32[10, 128] = parameter(3.weight)
        %3_bias : f32[10] = parameter(3.bias)
        %linear_0 : f32[32, 10] = linear(%linear_epilogue_0, %3_weight, %3_bias)
        return %linear_0
        """, g);
  }

  @Test
  void lenetRunsAsOneGraphBitwise() {
    Generator.manualSeed(2);
    CompiledModule c = checkBitwise(Models.lenet5(10).eval(), Tensor.randn(4, 1, 28, 28));
    String g = c.graph();
    assertTrue(g.contains("conv2d(%x0, %features_0_weight, %features_0_bias"), g);
    assertTrue(g.contains("max_pool2d("), g);
  }

  @Test
  void convnetRunsAsOneGraphBitwiseInEval() {
    Generator.manualSeed(21);
    Module convnet = Models.convnet(3, 8, 5);
    try (Grad off = Grad.off()) {
      convnet.call(Tensor.randn(4, 3, 8, 8)); // running statistics away from 0 and 1
    }
    CompiledModule c = checkBitwise(convnet.eval(), Tensor.randn(2, 3, 8, 8));
    assertEquals(4, c.graph().split("= batch_norm\\(").length - 1, c.graph());
  }

  @Test
  void lenetGradientsThroughTheGraphMatchEager() {
    Generator.manualSeed(22);
    Module lenet = Models.lenet5(10);
    Tensor x = Tensor.randn(3, 1, 28, 28);
    lenet.call(x).square().sum().backward();
    List<Tensor> eagerGrads = lenet.parameters().stream().map(p -> p.grad().clone()).toList();
    lenet.zeroGrad(true);
    CompiledModule c = Compiler.compile(lenet);
    c.call(x);
    c.call(x).square().sum().backward();
    for (int i = 0; i < eagerGrads.size(); i++) assertBitwise(eagerGrads.get(i), lenet.parameters().get(i).grad());
  }

  @Test
  void transformerLayersRunAsOneGraphBitwise() {
    Generator gen = new Generator(3);
    for (boolean normFirst : new boolean[] {false, true}) {
      for (String act : List.of("relu", "gelu")) {
        Module layer = new TransformerEncoderLayer(16, 4, 32, 0.1, act, 1e-5, true, normFirst, true, gen).eval();
        CompiledModule c = checkBitwise(layer, Tensor.randn(gen, 2, 5, 16));
        assertTrue(c.graph().contains("layer_norm("), c.graph());
        assertTrue(c.graph().contains("scaled_dot_product_attention("), c.graph());
        assertFalse(c.graph().contains("= dropout("), "eval dropouts are identities, removed:\n" + c.graph());
        assertTrue(c.explain().contains("26 ops traced, 20 after passes"), c.explain());
      }
    }
  }

  @Test
  void gradientsThroughTheGraphMatchEager() {
    Generator.manualSeed(4);
    Module mlp = Models.mlp(12, 8, 3);
    Tensor x = Tensor.randn(5, 12);
    mlp.call(x).sum().backward();
    List<Tensor> eagerGrads = mlp.parameters().stream().map(p -> p.grad().clone()).toList();
    mlp.zeroGrad(true);
    CompiledModule c = Compiler.compile(mlp);
    c.call(x); // the trace
    c.call(x).sum().backward(); // the graph
    for (int i = 0; i < eagerGrads.size(); i++) assertBitwise(eagerGrads.get(i), mlp.parameters().get(i).grad());
  }

  @Test
  void aNewSignatureRetraces() {
    Generator.manualSeed(5);
    Module mlp = Models.mlp(6, 4, 2).eval();
    CompiledModule c = Compiler.compile(mlp);
    Tensor a = Tensor.randn(3, 6);
    Tensor b = Tensor.randn(7, 6);
    c.call(a);
    assertTrue(c.graph().contains("f32[3, 2]"));
    assertBitwise(mlp.call(b), c.call(b));
    assertEquals(2, c.signatures());
    assertTrue(c.graph().contains("f32[7, 2]"));
    mlp.train();
    c.call(a);
    assertEquals(3, c.signatures(), c.explain());
    c.call(b);
    assertEquals(4, c.signatures());
    c.call(a);
    assertEquals(4, c.signatures());

    CompiledModule relu = Compiler.compile(new ReLU());
    relu.call(a);
    Tensor a64 = a.to(dev.ember.tensor.DType.F64);
    assertBitwise(a64.relu(), relu.call(a64));
    assertEquals(2, relu.signatures());
    assertTrue(relu.graph().contains("f64[3, 6] = relu(%x0)"), relu.graph());
  }

  @Test
  void aSymbolicBatchSharesOneGraphAcrossBatchSizes() {
    Generator.manualSeed(7);
    Module lenet = Models.lenet5(10).eval();
    CompiledModule c = Compiler.compile(lenet).dynamicBatch(0);
    for (int batch : new int[] {2, 3, 5, 1, 8, 3}) {
      Tensor x = Tensor.randn(batch, 1, 28, 28);
      assertBitwise(lenet.call(x), c.call(x));
    }
    assertEquals(1, c.signatures(), c.explain());
    assertTrue(c.explain().contains("f32[B, 1, 28, 28] eval: 1 graph for every batch size"), c.explain());
    assertTrue(c.graph().contains("%reshape_0 : f32[B, 400] = reshape(%max_pool2d_1, shape=[2, 400])"), c.graph());

    Generator gen = new Generator(8);
    Module layer = new TransformerEncoderLayer(16, 4, 32, 0.1, "gelu", 1e-5, true, false, true, gen).eval();
    CompiledModule t = Compiler.compile(layer).dynamicBatch(0);
    for (int batch : new int[] {2, 3, 4, 1}) {
      Tensor x = Tensor.randn(gen, batch, 5, 16);
      assertBitwise(layer.call(x), t.call(x));
    }
    assertEquals(1, t.signatures(), t.explain());
    assertTrue(t.graph().contains("f32[5B, 16] = reshape(%x0"), t.graph());
  }

  /** Divides by the batch size: a constant that depends on it. */
  static final class BatchMean extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return x.mean(0, true).add(x);
    }
  }

  @Test
  void aGraphThatDependsOnTheBatchSizeIsTracedPerSize() {
    Module m = new BatchMean();
    CompiledModule c = Compiler.compile(m).dynamicBatch(0);
    for (int batch : new int[] {2, 3, 2, 4, 3}) {
      Tensor x = Tensor.randn(batch, 4);
      assertBitwise(m.call(x), c.call(x));
    }
    assertEquals(3, c.signatures(), c.explain());
    assertTrue(c.explain().contains("dim 0 is not a symbolic batch: a constant's value depends on the batch size"),
        c.explain());
  }

  @Test
  void theGraphGuardsItsInputs() {
    Graph g = Compiler.trace(in -> in[0].relu(), Tensor.randn(2, 3));
    assertThrows(dev.ember.tensor.TensorArgumentException.class, () -> g.run(Tensor.randn(3, 3)));
    assertThrows(dev.ember.tensor.TensorArgumentException.class, () -> g.run(Tensor.randn(2, 3), Tensor.randn(2, 3)));
  }

  /** Scales its input by a value it reads into Java: item() cannot be captured. */
  static final class ScaleByMax extends Module {
    @Override
    public Tensor forward(Tensor x) {
      double m = x.abs().max().item();
      return m > 1 ? x.div(m) : x;
    }
  }

  @Test
  void itemSplitsASequentialAndEagerResumes() {
    Generator.manualSeed(6);
    Module s = new Sequential(new Linear(5, 6), new ReLU(), new ScaleByMax(), new Linear(6, 2)).eval();
    Tensor x = Tensor.randn(4, 5).mul(10);
    CompiledModule c = Compiler.compile(s);
    Tensor eager = s.call(x);
    assertBitwise(eager, c.call(x));
    assertBitwise(eager, c.call(x));
    List<GraphBreak> breaks = c.breaks();
    assertEquals("item", breaks.get(0).op(), c.explain());
    assertTrue(breaks.stream().anyMatch(b -> b.op().equals("item") && b.where().equals("2")), c.explain());
    String explain = c.explain();
    assertTrue(explain.contains("split into its 4 children"), explain);
    assertTrue(explain.contains("2 (ScaleByMax) f32[4, 6] eval: eager"), explain);
    assertTrue(explain.contains("0 (Linear) f32[4, 5] eval: 1 graph"), explain);
    assertTrue(explain.contains("reads a tensor's value into Java"), explain);
  }

  @Test
  void itemInAnyOtherModuleRunsItEagerly() {
    Module m = new ScaleByMax();
    Tensor x = Tensor.randn(3, 3).mul(5);
    CompiledModule c = Compiler.compile(m);
    assertBitwise(m.call(x), c.call(x));
    assertTrue(c.explain().contains("eager (1 graph break)"), c.explain());
    assertThrows(IllegalStateException.class, c::graph);
  }

  /** Uses cumsum, an op without a trace hook. */
  static final class CumSum extends Module {
    @Override
    public Tensor forward(Tensor x) {
      return dev.ember.ops.ReduceOps.cumsum(x, 1).relu();
    }
  }

  @Test
  void anOpWithoutAHookIsABreakNotASilentConstant() {
    Module m = new CumSum();
    Tensor x = Tensor.randn(3, 4);
    CompiledModule c = Compiler.compile(m);
    assertBitwise(m.call(x), c.call(x));
    Tensor y = Tensor.randn(3, 4);
    assertBitwise(m.call(y), c.call(y));
    assertEquals("cumsum", c.breaks().get(0).op(), c.explain());
  }
}
