package dev.ember.compile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Random graphs of elementwise, matmul, reduction and movement ops (with identities, inverse pairs, repeated and
 * constant-only subexpressions planted for the passes to find): each pass, and all of them in a row, leaves the
 * values the graph computes on new inputs the same, bitwise (no pass changes a reduction order), zeros of either
 * sign being equal (x + 0 keeps x's -0.0).
 */
class PassPropertyTest {
  private static final int N = 4;

  /** The random program of {@code seed}: choices depend on the seed only, never on values. */
  static Tensor program(long seed, Tensor x, Tensor y) {
    Random r = new Random(seed);
    List<Tensor> pool = new ArrayList<>(List.of(x, y));
    int steps = 4 + r.nextInt(16);
    for (int s = 0; s < steps; s++) {
      Tensor a = pool.get(r.nextInt(pool.size()));
      Tensor b = pool.get(r.nextInt(pool.size()));
      Tensor v = switch (r.nextInt(16)) {
        case 0 -> a.relu();
        case 1 -> a.tanh();
        case 2 -> a.neg();
        case 3 -> a.add(b);
        case 4 -> a.mul(b);
        case 5 -> a.sub(b).mul(0.5);
        case 6 -> a.matmul(b);
        case 7 -> a.sum(r.nextInt(2), true).add(b); // a reduction, broadcast back
        case 8 -> a.mean(r.nextInt(2), true).mul(b);
        case 9 -> a.reshape(N * N).reshape(N, N).add(b);
        case 10 -> a.transpose(0, 1).transpose(0, 1).mul(b);
        case 11 -> a.t().matmul(b);
        case 12 -> a.mul(1).add(0).div(1).sub(0);
        case 13 -> a.add(Tensor.ones(N, N).mul(Tensor.full(0.25, N, N)).exp()); // constant-only subexpression
        case 14 -> a.tanh().add(a.tanh()); // a repeated subexpression
        default -> a.softmax(1).add(b.relu());
      };
      pool.add(v);
    }
    Tensor out = pool.get(pool.size() - 1);
    return out.add(pool.get(r.nextInt(pool.size()))); // keep a second value alive
  }

  private static void assertSameValues(Tensor expected, Tensor actual, String what) {
    assertArrayEquals(expected.shape(), actual.shape(), what);
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    for (int i = 0; i < e.length; i++) {
      boolean same = Float.floatToRawIntBits(e[i]) == Float.floatToRawIntBits(a[i])
          || (e[i] == 0 && a[i] == 0) || (Float.isNaN(e[i]) && Float.isNaN(a[i]));
      assertTrue(same, what + ": element " + i + " " + e[i] + " vs " + a[i]);
    }
  }

  @Test
  void everyPassKeepsTheValuesOfRandomGraphs() {
    Generator gen = new Generator(42);
    int simplified = 0;
    for (long seed = 0; seed < 150; seed++) {
      long sd = seed;
      Graph g = Compiler.trace(in -> program(sd, in[0], in[1]), Tensor.randn(gen, N, N), Tensor.randn(gen, N, N));
      Tensor x = Tensor.randn(gen, N, N);
      Tensor y = Tensor.randn(gen, N, N);
      Tensor eager = program(seed, x, y);
      assertSameValues(eager, g.run(x, y), "seed " + seed + " traced graph\n" + g);
      Graph all = g;
      for (Pass p : Pass.defaults()) {
        assertSameValues(eager, p.run(g).run(x, y), "seed " + seed + " " + p.name() + "\n" + g);
        all = p.run(all);
        assertSameValues(eager, all.run(x, y), "seed " + seed + " up to " + p.name() + "\n" + g);
      }
      assertTrue(all.opCount() <= g.opCount());
      if (all.opCount() < g.opCount()) simplified++;
    }
    assertTrue(simplified > 100, "the planted redundancy was found in " + simplified + " graphs");
  }

  @Test
  void theProgramsAreDeterministic() {
    Tensor x = Tensor.randn(N, N);
    Tensor y = Tensor.randn(N, N);
    assertEquals(program(7, x, y).toFloatArray().length, N * N);
    assertArrayEquals(program(7, x, y).toFloatArray(), program(7, x, y).toFloatArray());
  }
}
