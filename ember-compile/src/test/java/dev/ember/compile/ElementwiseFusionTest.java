package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The elementwise fusion pass: which groups it makes (and which it must not), the program it prints, values and
 * gradients bitwise before and after on random graphs, and a compiled module whose kernel count drops.
 */
class ElementwiseFusionTest {
  private static long count(Graph g, String op) {
    return g.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP && n.op().equals(op)).count();
  }

  private static Graph fuse(Graph g) {
    return new ElementwiseFusion().run(g);
  }

  @Test
  void aChainBecomesOneNodeThatPrintsItsProgram() {
    Graph g = Compiler.trace(in -> in[0].add(in[1]).relu(), Tensor.randn(3, 5), Tensor.randn(3, 5));
    Graph f = fuse(g);
    assertEquals(2, g.opCount());
    assertEquals(1, f.opCount(), f.toString());
    assertTrue(f.toString().contains("fused_elementwise(%x0, %x1, program=relu(add(x0, x1)))"), f.toString());
    Tensor x = Tensor.randn(3, 5);
    Tensor y = Tensor.randn(3, 5);
    assertBitwise(g.run(x, y), f.run(x, y));
  }

  @Test
  void biasColumnsAndScalarsAreInputsOfTheProgram() {
    Tensor bias = Tensor.randn(7);
    Tensor col = Tensor.randn(4, 1);
    Graph g = Compiler.trace(in -> in[0].mul(0.5).add(bias).sub(col).tanh().mul(in[0]).sigmoid(), Tensor.randn(4, 7));
    Graph f = fuse(g);
    assertEquals(1, f.opCount(), f.toString());
    assertTrue(f.toString().contains("program=sigmoid(mul(tanh(sub(add(mul(x0, 0.5), x1), x2)), x0))"),
        f.toString());
    Tensor x = Tensor.randn(4, 7);
    assertBitwise(g.run(x), f.run(x));
  }

  @Test
  void aValueReadOutsideTheGroupStaysItsOwnNode() {
    // a is read by the sum: it is the group's input, not a member; b = relu(a) * s is fused
    Graph g = Compiler.trace(in -> {
      Tensor a = in[0].add(in[1]);
      Tensor s = a.sum(1, true);
      return a.relu().mul(s).exp();
    }, Tensor.randn(3, 6), Tensor.randn(3, 6));
    Graph f = fuse(g);
    assertEquals(1, count(f, "add"), f.toString());
    assertEquals(1, count(f, "sum"), f.toString());
    assertEquals(1, count(f, "fused_elementwise"), f.toString());
    assertTrue(f.toString().contains("program=exp(mul(relu(x0), x1))"), f.toString());
    Tensor x = Tensor.randn(3, 6);
    Tensor y = Tensor.randn(3, 6);
    assertBitwise(g.run(x, y), f.run(x, y));
  }

  @Test
  void randomOpsAndSingleOpsAreNotFused() {
    Generator gen = new Generator(3);
    Graph g = Compiler.trace(in -> Dropouts.dropout(in[0].add(in[1]), 0.5, true, false, gen).relu(),
        Tensor.randn(3, 6), Tensor.randn(3, 6));
    Graph f = fuse(g);
    assertEquals(g.opCount(), f.opCount(), f.toString());
    assertEquals(0, count(f, "fused_elementwise"), f.toString());
    assertEquals(1, count(f, "dropout"), f.toString());
  }

  @Test
  void otherShapesAndDtypesBreakTheChain() {
    // x [3, 1] + y [1, 6] broadcasts both ways: no operand of the output's shape, so the add is not fused
    Graph g = Compiler.trace(in -> in[0].add(in[1]).relu().neg(), Tensor.randn(3, 1), Tensor.randn(1, 6));
    Graph f = fuse(g);
    assertEquals(1, count(f, "add"), f.toString());
    assertTrue(f.toString().contains("program=neg(relu(x0))"), f.toString());
    Tensor x = Tensor.randn(3, 1);
    Tensor y = Tensor.randn(1, 6);
    assertBitwise(g.run(x, y), f.run(x, y));
  }

  /** A random chain-heavy program over x [R, C], y [R, C], bias [C] and col [R, 1]. */
  static Tensor program(long seed, Tensor x, Tensor y, Tensor bias, Tensor col) {
    Random r = new Random(seed);
    List<Tensor> pool = new ArrayList<>(List.of(x, y));
    int steps = 3 + r.nextInt(12);
    for (int s = 0; s < steps; s++) {
      Tensor a = pool.get(r.nextInt(pool.size()));
      Tensor b = pool.get(r.nextInt(pool.size()));
      Tensor v = switch (r.nextInt(16)) {
        case 0 -> a.relu();
        case 1 -> a.tanh();
        case 2 -> a.sigmoid();
        case 3 -> a.add(b);
        case 4 -> a.mul(b);
        case 5 -> a.sub(b).mul(0.5);
        case 6 -> a.div(b.abs().add(1));
        case 7 -> a.add(bias);
        case 8 -> col.mul(a);
        case 9 -> a.exp().neg();
        case 10 -> a.maximum(b);
        case 11 -> a.sum(1, true).add(b); // a reduction breaks a chain
        case 12 -> a.matmul(b.t()).matmul(b).mul(0.01); // so does a matmul
        case 13 -> dev.ember.nn.functional.Activations.gelu(a);
        case 14 -> a.square().add(1).sqrt();
        default -> a.minimum(b).mul(2);
      };
      pool.add(v);
    }
    return pool.get(pool.size() - 1).add(pool.get(r.nextInt(pool.size())));
  }

  @Test
  void randomGraphsKeepTheirValuesAndGradientsBitwise() {
    Generator gen = new Generator(42);
    int fused = 0;
    int rows = 13;
    int cols = 37;
    for (long seed = 0; seed < 80; seed++) {
      long sd = seed;
      Graph g = Compiler.trace(in -> program(sd, in[0], in[1], in[2], in[3]), Tensor.randn(gen, rows, cols),
          Tensor.randn(gen, rows, cols), Tensor.randn(gen, cols), Tensor.randn(gen, rows, 1));
      Graph f = g;
      for (Pass p : Pass.defaults()) f = p.run(f);
      Tensor[] in = {Tensor.randn(gen, rows, cols), Tensor.randn(gen, rows, cols), Tensor.randn(gen, cols),
          Tensor.randn(gen, rows, 1)};
      Tensor eager;
      try (Grad off = Grad.off()) {
        eager = program(seed, in[0], in[1], in[2], in[3]);
      }
      assertBitwise(eager, f.run(in));
      assertTrue(f.opCount() <= g.opCount());
      if (count(f, "fused_elementwise") > 0) fused++;
      // gradients: through the fused nodes' recomputation and through the eager ops
      Tensor gOut = Tensor.randn(gen, rows, cols);
      Tensor[] a = new Tensor[4];
      Tensor[] b = new Tensor[4];
      for (int i = 0; i < 4; i++) {
        a[i] = in[i].detach().requiresGrad(true);
        b[i] = in[i].detach().requiresGrad(true);
      }
      f.run(a).backward(gOut);
      program(seed, b[0], b[1], b[2], b[3]).backward(gOut);
      for (int i = 0; i < 4; i++) {
        if (b[i].grad() == null) continue;
        assertClose(b[i].grad(), a[i].grad(), "seed " + seed + " grad " + i + "\n" + f);
      }
    }
    assertTrue(fused > 50, "fused in " + fused + " of 80 graphs");
  }

  /**
   * Gradients agree to rounding: a tensor read both inside and outside a group gets the group's contributions summed
   * first (see the pass), which may move the last bits when it gets three or more.
   */
  private static void assertClose(Tensor expected, Tensor actual, String what) {
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    for (int i = 0; i < e.length; i++) {
      double tol = 1e-5 * Math.max(1, Math.abs(e[i]));
      if (!(Math.abs(e[i] - a[i]) <= tol) && !(Float.isNaN(e[i]) && Float.isNaN(a[i]))) {
        throw new AssertionError(what + ": element " + i + " " + e[i] + " vs " + a[i]);
      }
    }
  }

  /** A block with an elementwise tail after its linear: x + gelu(W x) * sigmoid(x) * 0.5, then relu. */
  static final class GatedResidual extends Module {
    private final Linear lin;

    GatedResidual(int n) {
      lin = registerModule("lin", new Linear(n, n, true, new Generator(5)));
    }

    @Override
    public Tensor forward(Tensor x) {
      Tensor h = dev.ember.nn.functional.Activations.gelu(lin.call(x));
      return x.add(h.mul(x.sigmoid()).mul(0.5)).relu();
    }
  }

  @Test
  void aCompiledModuleRunsFewerKernelsWithEagersOutputsAndGradients() {
    GatedResidual m = new GatedResidual(24);
    Tensor x = Tensor.randn(new Generator(6), 8, 24);
    CompiledModule c = Compiler.compile(m);
    Tensor first = c.call(x.detach().requiresGrad(true)); // traced (eager)
    assertTrue(c.graph().contains("fused_elementwise"), c.graph());
    assertTrue(c.explain().contains("7 ops traced, 2 after passes"), c.explain());
    Tensor xc = x.detach().requiresGrad(true);
    Tensor xe = x.detach().requiresGrad(true);
    Tensor gOut = Tensor.randn(new Generator(7), 8, 24);
    Tensor yc = c.call(xc);
    m.zeroGrad();
    yc.backward(gOut);
    Tensor gw = m.lin.weight().grad().detach().clone();
    Tensor gb = m.lin.bias().grad().detach().clone();
    m.zeroGrad();
    Tensor ye = m.call(xe);
    ye.backward(gOut);
    assertBitwise(first.detach(), ye.detach());
    assertBitwise(ye.detach(), yc.detach());
    assertBitwise(xe.grad(), xc.grad());
    assertBitwise(m.lin.weight().grad(), gw);
    assertBitwise(m.lin.bias().grad(), gb);
  }
}
