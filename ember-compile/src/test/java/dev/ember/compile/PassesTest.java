package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Each pass on a small graph made for it: what it removes, and that the values stay the same. */
class PassesTest {
  private static long count(Graph g, String op) {
    return g.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP && n.op().equals(op)).count();
  }

  @Test
  void deadCodeEliminationKeepsWhatTheOutputReadsAndTheInputs() {
    GraphNode x = GraphNode.input(0, new int[] {2, 3}, DType.F32);
    GraphNode y = GraphNode.input(1, new int[] {2, 3}, DType.F32);
    GraphNode relu = GraphNode.op("relu", List.of(x), java.util.Map.of(), new int[] {2, 3}, DType.F32, in -> in[0].relu());
    GraphNode exp = GraphNode.op("exp", List.of(x), java.util.Map.of(), new int[] {2, 3}, DType.F32, in -> in[0].exp());
    GraphNode unused = GraphNode.op("neg", List.of(exp), java.util.Map.of(), new int[] {2, 3}, DType.F32, in -> in[0].neg());
    Graph g = new Graph(List.of(x, y, relu, exp, unused), List.of(x, y), relu);
    Graph d = new DeadCodeElimination().run(g);
    assertEquals(3, g.opCount());
    assertEquals(1, d.opCount());
    assertEquals(2, d.inputs().size());
    assertEquals(5, g.nodes().size(), "the pass leaves its argument as it is");
    Tensor a = Tensor.randn(2, 3);
    Tensor b = Tensor.randn(2, 3);
    assertBitwise(g.run(a, b), d.run(a, b));
  }

  @Test
  void commonSubexpressionsAreComputedOnce() {
    Graph g = Compiler.trace(in -> in[0].relu().add(in[0].relu()).mul(in[0].relu().exp()), Tensor.randn(3, 4));
    assertEquals(3, count(g, "relu"));
    Graph c = new CommonSubexpressionElimination().run(g);
    assertEquals(1, count(c, "relu"), c.toString());
    assertEquals(g.opCount() - 2, c.opCount());
    Tensor x = Tensor.randn(3, 4);
    assertBitwise(g.run(x), c.run(x));
  }

  @Test
  void differentAttributesOrRandomOpsAreNotMerged() {
    Generator gen = new Generator(9);
    Graph g = Compiler.trace(in -> in[0].sum(0, true).add(in[0].sum(1, true))
        .add(Dropouts.dropout(in[0], 0.5, true, false, gen)).add(Dropouts.dropout(in[0], 0.5, true, false, gen)),
        Tensor.randn(3, 3));
    Graph c = new CommonSubexpressionElimination().run(g);
    assertEquals(2, count(c, "sum"));
    assertEquals(2, count(c, "dropout"));
  }

  @Test
  void constantsAreFolded() {
    Graph g = Compiler.trace(in -> in[0].add(Tensor.ones(4).mul(Tensor.full(3, 4)).exp()), Tensor.randn(2, 4));
    assertEquals(3, g.opCount(), g.toString());
    Graph f = new ConstantFolding().run(g);
    assertEquals(1, f.opCount(), f.toString());
    assertEquals(1, count(f, "add"));
    Tensor x = Tensor.randn(2, 4);
    assertBitwise(g.run(x), f.run(x));
  }

  @Test
  void parametersAndRandomOpsAreNotFolded() {
    Tensor w = Tensor.randn(4).requiresGrad(true);
    Graph g = Compiler.trace(in -> in[0].add(w.exp()), Tensor.randn(2, 4));
    assertTrue(g.toString().contains("parameter(param0)"), g.toString());
    assertEquals(g.opCount(), new ConstantFolding().run(g).opCount(), "w requires grad: a parameter, which training changes");
    Generator gen = new Generator(1);
    Graph d = Compiler.trace(in -> in[0].add(Dropouts.dropout(Tensor.ones(4), 0.5, true, false, gen)),
        Tensor.randn(2, 4));
    assertEquals(1, count(new ConstantFolding().run(d), "dropout"));
  }

  @Test
  void identitiesAndInversePairsAreSimplified() {
    Graph g = Compiler.trace(in -> in[0].mul(1).add(0).div(1).sub(0).reshape(12).reshape(4, 3).reshape(3, 4)
        .transpose(0, 1).transpose(0, 1).relu().permute(1, 0).permute(1, 0).expand(3, 4), Tensor.randn(3, 4));
    Graph s = new AlgebraicSimplification().run(g);
    assertEquals(1, s.opCount(), s.toString());
    assertEquals(1, count(s, "relu"));
    Tensor x = Tensor.randn(3, 4);
    assertBitwise(g.run(x), s.run(x));
  }

  @Test
  void dropoutOutsideTrainingIsRemoved() {
    Generator gen = new Generator(3);
    Graph g = Compiler.trace(in -> Dropouts.dropout(Dropouts.dropout(in[0], 0.5, false, false, gen).relu(), 0.0,
        true, false, gen).add(Dropouts.dropout(in[0], 0.5, true, false, gen)), Tensor.randn(3, 4));
    Graph s = new AlgebraicSimplification().run(g);
    assertEquals(1, count(s, "dropout"), s.toString());
    assertTrue(s.toString().contains("dropout(%x0, p=0.5, training=true, inplace=false)"), s.toString());
  }

  @Test
  void reshapeChainsBecomeOneReshapeAndPermutesCompose() {
    Graph g = Compiler.trace(in -> in[0].reshape(6, 4).reshape(2, 12).exp().permute(1, 0).permute(1, 0).t(),
        Tensor.randn(2, 3, 4));
    Graph s = new AlgebraicSimplification().run(g);
    assertEquals(1, count(s, "reshape"), s.toString());
    assertEquals(1, count(s, "permute"), s.toString());
    assertTrue(s.toString().contains("reshape(%x0, shape=[2, 12])"), s.toString());
    Tensor x = Tensor.randn(2, 3, 4);
    assertBitwise(g.run(x), s.run(x));
  }

  @Test
  void aReshapeOfACopyingReshapeStaysAViewOfItsCopy() {
    // attention's output: permuted, reshaped to [B, T, E] (a copy) for the projection and to [B*T, E] from that
    Graph g = Compiler.trace(in -> {
      Tensor a = in[0].permute(0, 2, 1, 3).reshape(2, 3, 8);
      return a.exp().add(a.reshape(6, 8).sum(0, false));
    }, Tensor.randn(2, 4, 3, 2));
    Graph s = new AlgebraicSimplification().run(g);
    assertEquals(2, count(s, "reshape"), s.toString());
    assertTrue(s.toString().contains("reshape(%reshape_0, shape=[6, 8])"), s.toString());
    Tensor x = Tensor.randn(2, 4, 3, 2);
    assertBitwise(g.run(x), s.run(x));
  }

  @Test
  void aBroadcastingIdentityIsKept() {
    // x * ones(3, 4) with x [4]: the result is [3, 4], not x, so the mul stays
    Graph g = Compiler.trace(in -> in[0].mul(Tensor.ones(3, 4)), Tensor.randn(4));
    Graph s = new AlgebraicSimplification().run(g);
    assertEquals(1, s.opCount());
    Tensor x = Tensor.randn(4);
    assertBitwise(g.run(x), s.run(x));
  }

  @Test
  void passesReturnNewGraphs() {
    Graph g = Compiler.trace(in -> in[0].relu(), Tensor.randn(2));
    for (Pass p : Pass.defaults()) {
      Graph r = p.run(g);
      assertNotSame(g, r);
      assertFalse(p.name().isEmpty());
    }
  }
}
