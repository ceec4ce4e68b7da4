package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.functional.F;
import dev.ember.nn.Module;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class EpilogueFusionTest {
  private static long count(Graph g, String op) {
    return g.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP && n.op().equals(op)).count();
  }

  /** Traces fn, fuses, and checks the fused graph against the traced one and eager: the same bits. */
  private static Graph fuseAndCheck(java.util.function.Function<Tensor[], Tensor> fn, Tensor... args) {
    Graph traced = Compiler.trace(fn, args);
    Graph fused = new EpilogueFusion().run(traced);
    try (Grad off = Grad.off()) {
      Tensor eager = fn.apply(args);
      assertBitwise(eager, traced.run(args));
      assertBitwise(eager, fused.run(args));
    }
    return fused;
  }

  @Test
  void eachActivationAndTheResidualBecomeOneNodeBitwise() {
    Generator gen = new Generator(11);
    // 301 x 299 outputs: several epilogue blocks, run in parallel, and a tail after the last whole vector
    Tensor x = Tensor.randn(gen, 301, 64);
    Tensor w = Tensor.randn(gen, 299, 64).mul(0.3);
    Tensor b = Tensor.randn(gen, 299);
    Tensor r = Tensor.randn(gen, 301, 299);
    List<UnaryOperator<Tensor>> acts = List.of(Tensor::relu, t -> F.gelu(t), t -> F.gelu(t, true), F::silu,
        Tensor::tanh, Tensor::sigmoid, t -> F.leakyRelu(t, 0.1));
    List<String> names = List.of("relu", "gelu", "gelu_tanh", "silu", "tanh", "sigmoid", "leaky_relu");
    for (int i = 0; i < acts.size(); i++) {
      UnaryOperator<Tensor> act = acts.get(i);
      Graph g = fuseAndCheck(in -> act.apply(F.linear(in[0], w, b)).add(in[1]), x, r);
      assertEquals(1, g.opCount(), g.toString());
      assertTrue(g.toString().contains("activation=" + names.get(i)), g.toString());
      Graph noResidual = fuseAndCheck(in -> act.apply(F.linear(in[0], w, b)), x);
      assertEquals(1, noResidual.opCount(), noResidual.toString());
      // the residual on the left of the add, and a linear without bias
      Graph left = fuseAndCheck(in -> in[1].add(act.apply(F.linear(in[0], w, null))), x, r);
      assertEquals(1, left.opCount(), left.toString());
    }
    assertTrue(fuseAndCheck(in -> F.leakyRelu(F.linear(in[0], w, b), 0.1), x).toString().contains("param=0.1"));
  }

  @Test
  void aResidualAloneAndLeadingDimsFuse() {
    Generator gen = new Generator(12);
    Tensor x = Tensor.randn(gen, 2, 5, 16);
    Tensor w = Tensor.randn(gen, 16, 16);
    Tensor b = Tensor.randn(gen, 16);
    Graph g = fuseAndCheck(in -> in[0].add(F.linear(in[0], w, b)), x);
    assertEquals(1, g.opCount(), g.toString());
    assertTrue(g.toString().contains("activation=none"), g.toString());
  }

  @Test
  void aValueReadElsewhereIsNotFusedAway() {
    Generator gen = new Generator(13);
    Tensor x = Tensor.randn(gen, 4, 6);
    Tensor w = Tensor.randn(gen, 6, 6);
    Tensor b = Tensor.randn(gen, 6);
    // the linear is read twice: nothing fuses
    Graph twice = fuseAndCheck(in -> { Tensor y = F.linear(in[0], w, b); return y.relu().add(y); }, x);
    assertEquals(0, count(twice, "linear_epilogue"), twice.toString());
    // the activation is read twice: linear and relu fuse, the adds stay
    Graph act = fuseAndCheck(in -> { Tensor y = F.linear(in[0], w, b).relu(); return y.add(in[0]).add(y); }, x);
    assertEquals(1, count(act, "linear_epilogue"), act.toString());
    assertEquals(2, count(act, "add"), act.toString());
    // the linear is the output: it stays
    Graph out = fuseAndCheck(in -> F.linear(in[0], w, b), x);
    assertEquals(1, count(out, "linear"), out.toString());
    // an add of another shape (broadcast) is not a residual
    Tensor row = Tensor.randn(gen, 6);
    Graph bcast = fuseAndCheck(in -> F.linear(in[0], w, b).tanh().add(row), x);
    assertEquals(1, count(bcast, "add"), bcast.toString());
    assertTrue(bcast.toString().contains("activation=tanh"), bcast.toString());
  }

  @Test
  void f64AndSmallShapesFuseBitwise() {
    Generator gen = new Generator(14);
    Tensor x = Tensor.randn(gen, 3, 5).to(dev.ember.tensor.DType.F64);
    Tensor w = Tensor.randn(gen, 7, 5).to(dev.ember.tensor.DType.F64);
    Tensor r = Tensor.randn(gen, 3, 7).to(dev.ember.tensor.DType.F64);
    Graph g = fuseAndCheck(in -> F.silu(F.linear(in[0], w, null)).add(in[1]), x, r);
    assertEquals(1, g.opCount(), g.toString());
  }

  /** Random stacks of linears, activations and residual adds: the fused graph has the traced graph's bits. */
  @Test
  void randomLinearStacksKeepTheirValues() {
    Generator gen = new Generator(16);
    java.util.Random r = new java.util.Random(16);
    List<UnaryOperator<Tensor>> acts = List.of(Tensor::relu, t -> F.gelu(t), t -> F.gelu(t, true), F::silu,
        Tensor::tanh, Tensor::sigmoid, t -> F.leakyRelu(t, 0.2), t -> t, Tensor::exp);
    int fusedTotal = 0;
    for (int seed = 0; seed < 40; seed++) {
      int width = 1 + r.nextInt(40);
      int layers = 1 + r.nextInt(4);
      List<Tensor> ws = new ArrayList<>();
      List<Tensor> bs = new ArrayList<>();
      int[] act = new int[layers];
      boolean[] residual = new boolean[layers];
      for (int l = 0; l < layers; l++) {
        ws.add(Tensor.randn(gen, width, width).mul(0.3));
        bs.add(r.nextBoolean() ? Tensor.randn(gen, width) : null);
        act[l] = r.nextInt(acts.size());
        residual[l] = r.nextBoolean();
      }
      java.util.function.Function<Tensor[], Tensor> fn = in -> {
        Tensor h = in[0];
        for (int l = 0; l < layers; l++) {
          Tensor y = acts.get(act[l]).apply(F.linear(h, ws.get(l), bs.get(l)));
          h = residual[l] ? y.add(h) : y;
        }
        return h;
      };
      Tensor x = r.nextBoolean() ? Tensor.randn(gen, 1 + r.nextInt(70), width)
          : Tensor.randn(gen, 1 + r.nextInt(3), 1 + r.nextInt(9), width);
      Graph g = fuseAndCheck(fn, x);
      fusedTotal += (int) count(g, "linear_epilogue");
    }
    assertTrue(fusedTotal > 40, "fused " + fusedTotal);
  }

  /**
   * Gradients of the parameters through the compiled layer: eager's bits. The input's gradient is the one the graph
   * gives without the fusion: common-subexpression elimination merges the three transposes that read x (query, key,
   * value), so x's contributions are summed in another order than eager's walk sums them, fused or not (a last-bit
   * difference from eager, at most); the fusion leaves those bits as they are.
   */
  @Test
  void transformerGradientsMatchEagerBitwise() {
    for (boolean normFirst : new boolean[] {false, true}) {
      for (String act : List.of("relu", "gelu")) {
        Generator gen = new Generator(15);
        Module layer = new TransformerEncoderLayer(16, 4, 32, 0.0, act, 1e-5, true, normFirst, true, gen);
        Tensor x = Tensor.randn(gen, 2, 5, 16).requiresGrad(true);
        layer.call(x).square().sum().backward();
        List<Tensor> eager = new ArrayList<>();
        for (Tensor p : layer.parameters()) eager.add(p.grad().clone());
        Tensor unfusedX = null;
        for (boolean fuse : new boolean[] {false, true}) {
          layer.zeroGrad(true);
          x.setGrad(null);
          CompiledModule c = fuse ? Compiler.compile(layer)
              : Compiler.compile(layer, Pass.defaults().stream().filter(p -> !(p instanceof EpilogueFusion)).toList());
          c.call(x); // the trace
          Tensor y = c.call(x);
          assertEquals(fuse, c.graph().contains("linear_epilogue("), c.graph());
          y.square().sum().backward();
          for (int i = 0; i < eager.size(); i++) assertBitwise(eager.get(i), layer.parameters().get(i).grad());
          if (fuse) assertBitwise(unfusedX, x.grad());
          else unfusedX = x.grad().clone();
        }
      }
    }
  }

  @Test
  void aConvolutionOfSeveralChannelsTakesItsReluIntoItsEpilogueBitwise() {
    Generator gen = new Generator(14);
    Tensor x = Tensor.randn(gen, 3, 1, 12, 12);
    Tensor w1 = Tensor.randn(gen, 6, 1, 5, 5);
    Tensor b1 = Tensor.randn(gen, 6);
    Tensor w2 = Tensor.randn(gen, 8, 6, 3, 3);
    Tensor b2 = Tensor.randn(gen, 8);
    Tensor w3 = Tensor.randn(gen, 4, 4, 3, 3);
    int[] one = {1, 1};
    // one input channel: kept as conv2d then relu; six: fused; "same" padding, two groups, no bias: fused
    Graph g = fuseAndCheck(in -> {
      Tensor h = F.conv2d(in[0], w1, b1, one, new int[] {2, 2}, one, 1).relu();
      h = F.conv2d(h, w2, b2, new int[] {2, 2}, new int[] {1, 1}, one, 1).relu();
      return F.conv2d(h, w3, null, one, "same", one, 2).relu();
    }, x);
    assertEquals(1, count(g, "relu"), g.toString());
    assertEquals(3, count(g, "conv2d"), g.toString());
    assertEquals(2, g.nodes().stream().filter(n -> "relu".equals(n.attr("activation"))).count(), g.toString());
    // with the tape on the fused node runs conv2d then relu as two ops: eager's gradients
    Tensor xg = x.detach().requiresGrad(true);
    Tensor wg = w2.detach().requiresGrad(true);
    java.util.function.Function<Tensor[], Tensor> fn = in -> F.conv2d(in[0], in[1], b2, one, one, one, 1).relu();
    Tensor h1 = Tensor.randn(gen, 2, 6, 7, 7);
    Graph two = fuseAndCheck(fn, h1, w2);
    assertEquals(1, two.opCount(), two.toString());
    Tensor hg = h1.detach().requiresGrad(true);
    fn.apply(new Tensor[] {hg, wg}).sum().backward();
    Tensor hc = h1.detach().requiresGrad(true);
    Tensor wc = w2.detach().requiresGrad(true);
    two.run(hc, wc).sum().backward();
    assertBitwise(hg.grad(), hc.grad());
    assertBitwise(wg.grad(), wc.grad());
    // read twice: not fused
    Graph twice = fuseAndCheck(in -> { Tensor y = F.conv2d(in[0], w2, b2); return y.relu().add(y); }, h1);
    assertEquals(0, twice.nodes().stream().filter(n -> n.attr("activation") != null).count(), twice.toString());
  }
}
