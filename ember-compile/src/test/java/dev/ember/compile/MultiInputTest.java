package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.MultiheadAttention;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Modules whose forward takes several tensors: one graph per signature of all of them, each input guarded. */
class MultiInputTest {
  @Test
  void crossAttentionIsOneGraphOfThreeInputsAndRetracesWhenOneChanges() {
    Generator gen = new Generator(41);
    MultiheadAttention mha = new MultiheadAttention(8, 2, 0.0, true, true, gen);
    mha.eval();
    CompiledModule c = Compiler.compile(mha, in -> mha.forward(in[0], in[1], in[2], null, null, false, false).output());
    for (int call = 0; call < 3; call++) {
      Tensor q = Tensor.randn(gen, 2, 3, 8);
      Tensor k = Tensor.randn(gen, 2, 5, 8);
      Tensor v = Tensor.randn(gen, 2, 5, 8);
      Tensor eager;
      try (Grad off = Grad.off()) {
        eager = mha.forward(q, k, v, null, null, false, false).output();
      }
      assertBitwise(eager, c.call(q, k, v));
    }
    assertEquals(1, c.signatures(), c.explain());
    assertTrue(c.breaks().isEmpty(), c.explain());
    String g = c.graph();
    assertTrue(g.contains("%x0 : f32[2, 3, 8] = input(0)") && g.contains("%x1 : f32[2, 5, 8] = input(1)")
        && g.contains("%x2 : f32[2, 5, 8] = input(2)"), g);
    assertTrue(c.explain().contains("f32[2, 3, 8], f32[2, 5, 8], f32[2, 5, 8] eval: 1 graph"), c.explain());

    Tensor q = Tensor.randn(gen, 2, 3, 8);
    Tensor k = Tensor.randn(gen, 2, 7, 8); // another key length: a new signature
    Tensor v = Tensor.randn(gen, 2, 7, 8);
    assertBitwise(mha.forward(q, k, v, null, null, false, false).output().detach(), c.call(q, k, v));
    assertBitwise(mha.forward(q, k, v, null, null, false, false).output().detach(), c.call(q, k, v));
    assertEquals(2, c.signatures(), c.explain());
    c.call(q, k.to(DType.F64).to(DType.F32), v); // same shapes and dtypes: the cached graph
    assertEquals(2, c.signatures(), c.explain());
  }

  @Test
  void aMaskIsAnInputOfTheGraphNotAConstant() {
    Generator gen = new Generator(42);
    TransformerEncoderLayer layer = new TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5, true, false, true, gen);
    layer.eval();
    CompiledModule c = Compiler.compile(layer, in -> layer.forward(in[0], in[1], null, false));
    Tensor x = Tensor.randn(gen, 2, 4, 8);
    for (int call = 0; call < 3; call++) {
      Tensor mask = Tensor.randn(gen, 4, 4); // an additive float mask that differs on every call
      Tensor eager;
      try (Grad off = Grad.off()) {
        eager = layer.forward(x, mask, null, false);
      }
      assertBitwise(eager, c.call(x, mask));
    }
    assertEquals(1, c.signatures(), c.explain());
    assertTrue(c.graph().contains("%x1 : f32[4, 4] = input(1)"), c.graph());
  }

  @Test
  void gradientsFlowToEveryInputAndParameterAsInEager() {
    Generator gen = new Generator(43);
    Linear lin = new Linear(4, 3, true, gen);
    CompiledModule c = Compiler.compile(lin, in -> lin.forward(in[0]).mul(lin.forward(in[1])).add(in[2]));
    Tensor a = Tensor.randn(gen, 5, 4);
    Tensor b = Tensor.randn(gen, 5, 4);
    Tensor r = Tensor.randn(gen, 5, 3);
    c.call(a, b, r); // the trace
    List<Tensor> xs = List.of(a.detach().requiresGrad(true), b.detach().requiresGrad(true), r.detach().requiresGrad(true));
    lin.forward(xs.get(0)).mul(lin.forward(xs.get(1))).add(xs.get(2)).square().sum().backward();
    List<Tensor> eagerGrads = List.of(xs.get(0).grad(), xs.get(1).grad(), xs.get(2).grad(), lin.weight().grad().clone(),
        lin.bias().grad().clone());
    lin.zeroGrad(true);
    List<Tensor> ys = List.of(a.detach().requiresGrad(true), b.detach().requiresGrad(true), r.detach().requiresGrad(true));
    c.call(ys.get(0), ys.get(1), ys.get(2)).square().sum().backward();
    List<Tensor> graphGrads = List.of(ys.get(0).grad(), ys.get(1).grad(), ys.get(2).grad(), lin.weight().grad(),
        lin.bias().grad());
    for (int i = 0; i < eagerGrads.size(); i++) assertBitwise(eagerGrads.get(i), graphGrads.get(i));
  }

  /** A module of several inputs, how to apply it, and how to make its inputs (fresh ones per call). */
  private record Case(dev.ember.nn.Module module, java.util.function.Function<Tensor[], Tensor> forward,
      java.util.function.Supplier<Tensor[]> inputs) {}

  @Test
  void layersAndLossesOfSeveralInputsAreOneGraphThatMatchesEagerOnNewInputs() {
    Generator gen = new Generator(44);
    dev.ember.nn.Bilinear bilinear = new dev.ember.nn.Bilinear(3, 4, 5, true, gen);
    dev.ember.nn.TransformerDecoderLayer decoder = new dev.ember.nn.TransformerDecoderLayer(8, 2, 16, 0.0, "gelu", 1e-5,
        true, true, true, gen);
    dev.ember.nn.Transformer transformer = new dev.ember.nn.Transformer(8, 2, 1, 1, 16, 0.0, "relu", 1e-5, true, false,
        true, gen);
    dev.ember.nn.loss.CrossEntropyLoss ce = new dev.ember.nn.loss.CrossEntropyLoss();
    dev.ember.nn.loss.TripletMarginLoss triplet = new dev.ember.nn.loss.TripletMarginLoss();
    List<Case> cases = List.of(
        new Case(bilinear, in -> bilinear.forward(in[0], in[1]),
            () -> new Tensor[] {Tensor.randn(gen, 2, 3), Tensor.randn(gen, 2, 4)}),
        new Case(decoder, in -> decoder.forward(in[0], in[1]),
            () -> new Tensor[] {Tensor.randn(gen, 2, 3, 8), Tensor.randn(gen, 2, 5, 8)}),
        new Case(transformer, in -> transformer.forward(in[0], in[1]),
            () -> new Tensor[] {Tensor.randn(gen, 2, 5, 8), Tensor.randn(gen, 2, 3, 8)}),
        new Case(ce, in -> ce.forward(in[0], in[1]),
            () -> new Tensor[] {Tensor.randn(gen, 4, 6), Tensor.randint(gen, 0, 6, 4)}),
        new Case(triplet, in -> triplet.forward(in[0], in[1], in[2]),
            () -> new Tensor[] {Tensor.randn(gen, 4, 6), Tensor.randn(gen, 4, 6), Tensor.randn(gen, 4, 6)}));
    for (boolean training : new boolean[] {false, true}) {
      for (Case k : cases) {
        k.module().train(training);
        CompiledModule c = Compiler.compile(k.module(), k.forward());
        for (int call = 0; call < 3; call++) {
          Tensor[] in = k.inputs().get();
          Tensor eager;
          try (Grad off = Grad.off()) {
            eager = k.forward().apply(in);
          }
          assertBitwise(eager, c.call(in));
        }
        String what = k.module().name() + (training ? " (train)" : " (eval)");
        assertTrue(c.breaks().isEmpty(), what + ": " + c.explain());
        assertEquals(1, c.signatures(), what + ": " + c.explain());
      }
    }
  }

  @Test
  void aSingleInputCompileRefusesSeveralAndAMultiInputOneHasNoSymbolicBatch() {
    CompiledModule single = Compiler.compile(new Linear(3, 2));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> single.call(Tensor.randn(2, 3), Tensor.randn(2, 3)));
    assertTrue(e.getMessage().contains("compiled for one input, got 2"), e.getMessage());
    Linear lin = new Linear(3, 2);
    CompiledModule multi = Compiler.compile(lin, in -> lin.forward(in[0]).add(lin.forward(in[1])));
    assertThrows(IllegalStateException.class, () -> multi.dynamicBatch(0));
  }
}
