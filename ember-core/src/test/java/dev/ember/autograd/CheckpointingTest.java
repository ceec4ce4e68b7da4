package dev.ember.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class CheckpointingTest {

  /** A two-layer perceptron with dropout, its parameters, and the generator its second dropout draws from. */
  private static final class Mlp {
    final Tensor w1, b1, w2, b2, w3;
    final Generator own = new Generator(7);

    Mlp(long seed) {
      Generator g = new Generator(seed);
      w1 = Tensor.randn(g, 6, 16).mul(0.4).requiresGrad(true);
      b1 = Tensor.randn(g, 16).mul(0.1).requiresGrad(true);
      w2 = Tensor.randn(g, 16, 16).mul(0.3).requiresGrad(true);
      b2 = Tensor.randn(g, 16).mul(0.1).requiresGrad(true);
      w3 = Tensor.randn(g, 16, 3).mul(0.3).requiresGrad(true);
    }

    List<Tensor> params() {
      return List.of(w1, b1, w2, b2, w3);
    }

    /** Layer 1: linear, relu, dropout from the default generator. */
    Tensor layer1(Tensor x) {
      return dropout(x.matmul(w1).add(b1).relu(), 0.25, Generator.global());
    }

    /** Layer 2: linear, tanh, dropout from the model's own generator. */
    Tensor layer2(Tensor h) {
      return dropout(h.matmul(w2).add(b2).tanh(), 0.5, own);
    }

    Tensor loss(Tensor h) {
      return h.matmul(w3).square().mean();
    }
  }

  static Tensor dropout(Tensor x, double p, Generator gen) {
    Tensor keep = Tensor.rand(gen, x.shape()).gt(p).to(x.dtype());
    return x.mul(keep).mul(1 / (1 - p));
  }

  private static float[][] grads(List<Tensor> ts) {
    float[][] out = new float[ts.size()][];
    for (int i = 0; i < ts.size(); i++) out[i] = ts.get(i).grad().toFloatArray();
    return out;
  }

  private static void assertBitwise(float[][] expected, float[][] actual) {
    assertEquals(expected.length, actual.length);
    for (int i = 0; i < expected.length; i++) {
      assertTrue(Arrays.equals(expected[i], actual[i]), "gradient " + i + " differs");
    }
  }

  /** Runs a step of {@code m} from fixed generator states; returns the gradients, the loss, the generator states. */
  private static Object[] mlpStep(Mlp m, Tensor x, boolean checkpoint) {
    Generator.manualSeed(11);
    m.own.setState(new Generator(7).state());
    for (Tensor p : m.params()) p.setGrad(null);
    Tensor h1 = checkpoint ? Checkpointing.apply(m::layer1, x) : m.layer1(x);
    Tensor h2 = checkpoint ? Checkpointing.apply(m::layer2, h1) : m.layer2(h1);
    Tensor loss = m.loss(h2);
    long[] globalAfterForward = Generator.global().state();
    long[] ownAfterForward = m.own.state();
    loss.backward();
    assertArrayEquals(globalAfterForward, Generator.global().state(), "default generator moved by backward");
    assertArrayEquals(ownAfterForward, m.own.state(), "own generator moved by backward");
    return new Object[] {grads(m.params()), loss.item(), globalAfterForward, ownAfterForward};
  }

  @Test
  void mlpWithDropoutGradientsAreBitwiseThoseWithoutCheckpointing() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6); // data: does not require grad, only the parameters do
    Object[] plain = mlpStep(m, x, false);
    Object[] ckpt = mlpStep(m, x, true);
    assertBitwise((float[][]) plain[0], (float[][]) ckpt[0]);
    assertEquals((double) plain[1], (double) ckpt[1], 0.0);
    assertArrayEquals((long[]) plain[2], (long[]) ckpt[2], "default generator after the forward");
    assertArrayEquals((long[]) plain[3], (long[]) ckpt[3], "own generator after the forward");
  }

  @Test
  void dropoutMasksWouldDifferWithoutTheReplay() {
    // the replay matters: recomputing layer 1 from the generator as the forward left it draws another mask
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Generator.manualSeed(11);
    Tensor first = m.layer1(x);
    Tensor again = m.layer1(x);
    assertFalse(Arrays.equals(first.toFloatArray(), again.toFloatArray()));
  }

  @Test
  void savesOnlyTheInputsAndParameters() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Tensor h = Checkpointing.apply(m::layer1, x);
    assertTrue(Checkpointing.isCheckpoint(h));
    Node node = h.gradFn();
    assertEquals("checkpoint", node.name());
    assertSame(x, node.ctx.rawInput(0));
    // the edges: x takes no gradient, w1 and b1 do; nothing the segment made is reachable
    List<Tensor> edges = new ArrayList<>();
    for (Tensor e : node.edges) if (e != null) edges.add(e);
    assertEquals(2, edges.size());
    assertSame(m.w1, edges.get(0));
    assertSame(m.b1, edges.get(1));
  }

  @Test
  void gradientsReachInputsThatRequireGradAndCapturedNonLeaves() {
    Generator g = new Generator(1);
    Tensor x = Tensor.randn(g, 4, 5).requiresGrad(true);
    Tensor w = Tensor.randn(g, 5, 5).requiresGrad(true);
    float[][] expected = null;
    for (boolean ckpt : new boolean[] {false, true}) {
      x.setGrad(null);
      w.setGrad(null);
      Tensor h = x.mul(2);
      Tensor captured = x.tanh(); // a non-leaf from outside the segment, used by closure
      UnaryOperator<Tensor> seg = t -> t.matmul(w).mul(captured).sigmoid();
      Tensor y = ckpt ? Checkpointing.apply(seg, h) : seg.apply(h);
      y.add(h).sum().backward();
      float[][] got = grads(List.of(x, w));
      if (expected == null) expected = got;
      else assertBitwise(expected, got);
    }
  }

  @Test
  void severalInputsAndAnInputAlsoCapturedByClosure() {
    Generator g = new Generator(2);
    Tensor a = Tensor.randn(g, 3, 4).requiresGrad(true);
    Tensor b = Tensor.randn(g, 4, 2).requiresGrad(true);
    float[][] expected = null;
    for (boolean ckpt : new boolean[] {false, true}) {
      a.setGrad(null);
      b.setGrad(null);
      java.util.function.Function<Tensor[], Tensor> seg = xs -> xs[0].matmul(xs[1]).add(a.sum()).exp();
      Tensor y = ckpt ? Checkpointing.apply(seg, a, b) : seg.apply(new Tensor[] {a, b});
      y.sum().backward();
      float[][] got = grads(List.of(a, b));
      if (expected == null) expected = got;
      else assertBitwise(expected, got);
    }
  }

  @Test
  void float64GradCheckThroughACheckpoint() {
    Generator g = new Generator(4);
    Tensor a = Tensor.randn(g, DType.F64, 3, 4).requiresGrad(true);
    Tensor b = Tensor.randn(g, DType.F64, 4, 2).requiresGrad(true);
    Tensor p = Tensor.randn(g, DType.F64, 2).requiresGrad(true); // used by closure, as a parameter is
    GradCheck.check("checkpoint", in -> Checkpointing.apply(
        xs -> xs[0].matmul(xs[1]).tanh().mul(in.get(2)).add(xs[0].sum()), in.get(0), in.get(1)), List.of(a, b, p));
  }

  @Test
  void nestedCheckpointsGiveTheSameGradients() {
    nested(false);
  }

  @Test
  void nestedCheckpointsInsideAMemoryScopeGiveTheSameGradients() {
    try (MemoryScope step = MemoryScope.open()) {
      nested(true);
    }
  }

  private static void nested(boolean retainGraph) {
    Mlp m = new Mlp(9);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Object[] plain = mlpStep(m, x, false);
    Generator.manualSeed(11);
    m.own.setState(new Generator(7).state());
    for (Tensor p : m.params()) p.setGrad(null);
    AtomicInteger innerCalls = new AtomicInteger();
    Tensor h = Checkpointing.apply(t -> {
      Tensor h1 = Checkpointing.apply(u -> {
        innerCalls.incrementAndGet();
        return m.layer1(u);
      }, t);
      return Checkpointing.apply(m::layer2, h1);
    }, x);
    assertEquals(1, innerCalls.get());
    Tensor loss = m.loss(h);
    loss.backward(Tensor.onesLike(loss), retainGraph);
    assertEquals(3, innerCalls.get()); // the outer recomputation, then the inner one's
    assertBitwise((float[][]) plain[0], grads(m.params()));
    if (retainGraph) { // a second backward recomputes again and accumulates the same gradients once more
      float[][] once = grads(m.params());
      loss.backward(Tensor.onesLike(loss), true);
      assertEquals(5, innerCalls.get());
      float[][] twice = grads(m.params());
      for (int i = 0; i < once.length; i++) {
        for (int j = 0; j < once[i].length; j++) assertEquals(once[i][j] * 2, twice[i][j], 0f, "gradient " + i);
      }
    }
  }

  @Test
  void aSecondBackwardFailsAndRetainGraphAllowsIt() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Tensor loss = m.loss(Checkpointing.apply(m::layer1, x).matmul(m.w2));
    loss.backward();
    IllegalStateException e = assertThrows(IllegalStateException.class, loss::backward);
    assertTrue(e.getMessage().contains("second time"), e.getMessage());

    for (Tensor p : m.params()) p.setGrad(null);
    Generator.manualSeed(11);
    Tensor plainLoss = m.loss(m.layer1(x).matmul(m.w2));
    plainLoss.backward(Tensor.onesLike(plainLoss), true);
    plainLoss.backward(Tensor.onesLike(plainLoss), true);
    float[] plainTwice = m.w1.grad().toFloatArray();
    m.w1.setGrad(null);
    Generator.manualSeed(11);
    Tensor ckptLoss = m.loss(Checkpointing.apply(m::layer1, x).matmul(m.w2));
    ckptLoss.backward(Tensor.onesLike(ckptLoss), true);
    ckptLoss.backward(Tensor.onesLike(ckptLoss), true);
    assertArrayEquals(plainTwice, m.w1.grad().toFloatArray());
  }

  @Test
  void underGradOffItIsAPlainCall() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    AtomicInteger calls = new AtomicInteger();
    Tensor h;
    try (Grad ignored = Grad.off()) {
      h = Checkpointing.apply(t -> {
        calls.incrementAndGet();
        return t.matmul(m.w1);
      }, x);
    }
    assertFalse(h.requiresGrad());
    assertNull(h.gradFn());
    assertEquals(1, calls.get());
  }

  @Test
  void aSegmentThatUsesNothingRequiringGradRecordsNothing() {
    Tensor x = Tensor.randn(new Generator(5), 3, 3);
    Tensor y = Checkpointing.apply(t -> t.exp().sum(), x);
    assertFalse(y.requiresGrad());
  }

  @Test
  void anIntegerOutputIsNotRecorded() {
    Tensor w = Tensor.randn(new Generator(5), 3, 4).requiresGrad(true);
    Tensor idx = Checkpointing.apply(t -> t.matmul(w).argmax(1, false), Tensor.ones(2, 3));
    assertFalse(idx.requiresGrad());
    assertNull(idx.gradFn());
  }

  @Test
  void anInputReturnedAsItIsIsPassedThrough() {
    Tensor x = Tensor.randn(new Generator(5), 3).requiresGrad(true);
    Tensor h = x.mul(3);
    assertSame(h, Checkpointing.apply(t -> t, h));
  }

  @Test
  void inPlaceChangeOfASavedInputFailsNamingTheCheckpoint() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Tensor loss = m.loss(Checkpointing.apply(m::layer1, x).matmul(m.w2));
    x.add_(1.0);
    IllegalStateException e = assertThrows(IllegalStateException.class, loss::backward);
    assertTrue(e.getMessage().startsWith("checkpoint: input 0"), e.getMessage());
  }

  @Test
  void aFunctionThatModifiesItsInputInPlaceIsAnError() {
    Tensor w = Tensor.randn(new Generator(5), 3).requiresGrad(true);
    Tensor x = Tensor.ones(3);
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Checkpointing.apply(t -> t.add_(1.0).mul(w), x));
    int v = x.version();
    assertTrue(e.getMessage().startsWith("checkpoint: the function modified its input 0 [3] in place (version "
        + (v - 1) + " -> " + v + ")"), e.getMessage());
  }

  @Test
  void aFunctionThatComputesSomethingElseWhenRunAgainIsAnError() {
    Tensor w = Tensor.randn(new Generator(5), 3).requiresGrad(true);
    AtomicInteger calls = new AtomicInteger();
    Tensor y = Checkpointing.apply(t -> calls.incrementAndGet() == 1 ? t.mul(w) : t.mul(w).sum(), Tensor.ones(3));
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> y.sum().backward());
    assertTrue(e.getMessage().contains("recomputed output has shape []"), e.getMessage());
  }

  @Test
  void nullsAreRejected() {
    assertThrows(NullPointerException.class, () -> Checkpointing.apply(t -> t, (Tensor) null));
    assertThrows(IllegalStateException.class, () -> Checkpointing.apply(t -> null, Tensor.ones(2)));
  }

  @Test
  void autocastStateOfTheForwardIsUsedWhenRecomputing() {
    Generator g = new Generator(8);
    Tensor x = Tensor.randn(g, 4, 8);
    Tensor w = Tensor.randn(g, 8, 8).requiresGrad(true);
    float[] expected = null;
    for (boolean ckpt : new boolean[] {false, true}) {
      w.setGrad(null);
      Tensor y;
      try (Autocast ac = Autocast.enable(DType.BF16)) {
        UnaryOperator<Tensor> seg = t -> t.matmul(w).relu();
        y = ckpt ? Checkpointing.apply(seg, x) : seg.apply(x);
      }
      y.to(DType.F32).square().sum().backward();
      if (expected == null) expected = w.grad().toFloatArray();
      else assertArrayEquals(expected, w.grad().toFloatArray());
    }
  }

  @Test
  void drawLogNotesEachGeneratorOnceWithItsStateBeforeTheFirstDraw() {
    Generator a = new Generator(1);
    Generator b = new Generator(2);
    Generator unused = new Generator(3);
    long[] a0 = a.state();
    a.nextInt();
    long[] a1 = a.state();
    long[] b0 = b.state();
    Map<Generator, long[]> states;
    Map<Generator, long[]> inner;
    try (Generator.DrawLog log = Generator.logDraws()) {
      a.nextFloat();
      try (Generator.DrawLog nested = Generator.logDraws()) {
        b.fillNormal(new float[20], 0, 20, 0, 1);
        a.nextInt();
        inner = nested.statesBefore();
      }
      states = log.statesBefore();
    }
    assertEquals(List.of(a, b), List.copyOf(states.keySet()));
    assertArrayEquals(a1, states.get(a));
    assertArrayEquals(b0, states.get(b));
    assertEquals(List.of(b, a), List.copyOf(inner.keySet()));
    assertFalse(states.containsKey(unused));
    assertFalse(Arrays.equals(a0, a1));
    // closed: draws are no longer noted
    try (Generator.DrawLog log = Generator.logDraws()) {
      assertTrue(log.statesBefore().isEmpty());
    }
  }

  @Test
  void savedBytesCountsDistinctBuffersExceptParametersAndShrinksWithCheckpointing() {
    Generator g = new Generator(3);
    Tensor x = Tensor.randn(g, 8, 6); // 192 bytes
    Tensor w = Tensor.randn(g, 6, 16).requiresGrad(true); // a parameter: not counted
    UnaryOperator<Tensor> seg = t -> t.matmul(w).relu().mul(2);
    // plain: x, matmul's output (512; its view of w is w's buffer), relu's and mul's outputs (512 each), mul's
    // scalar 2 (4) and sum's output (4)
    Tensor plain = seg.apply(x).sum();
    assertEquals(192 + 3 * 512 + 4 + 4, Autograd.savedBytes(plain));
    // checkpointed: x and the segment's output, then the scalar
    Tensor ckpt = Checkpointing.apply(seg, x).sum();
    assertEquals(192 + 512 + 4, Autograd.savedBytes(ckpt));
    // views of one buffer count once: x and its two views (192), w.sum()'s output (4), mul's and add's outputs
    Tensor v = x.reshape(48).mul(w.sum()).add(x.reshape(6, 8).reshape(48));
    assertEquals(192 + 4 + 192 + 192, Autograd.savedBytes(v));
    ckpt.backward();
    assertEquals(0, Autograd.savedBytes(ckpt));
    assertEquals(0, Autograd.savedBytes(x));
  }

  @Test
  void insideAMemoryScopeTheSegmentsTemporariesAreReleasedWhenItReturns() {
    Mlp m = new Mlp(3);
    Tensor x = Tensor.randn(new Generator(5), 8, 6);
    Object[] plain = mlpStep(m, x, false);
    Tensor[] inner = new Tensor[1];
    try (MemoryScope step = MemoryScope.open()) {
      Generator.manualSeed(11);
      m.own.setState(new Generator(7).state());
      for (Tensor p : m.params()) p.setGrad(null);
      Tensor h1 = Checkpointing.apply(t -> {
        inner[0] = t.matmul(m.w1);
        return m.layer1(t);
      }, x);
      assertTrue(inner[0].storage().isReleased(), "a temporary of the segment is still held");
      assertFalse(h1.storage().isReleased());
      Tensor h2 = Checkpointing.apply(m::layer2, h1);
      m.loss(h2).backward();
      assertBitwise((float[][]) plain[0], grads(m.params()));
    }
  }

  @Test
  void insideAMemoryScopeRecomputedActivationsGoBackAsTheBackwardConsumesThem() {
    Tensor w = Tensor.randn(new Generator(6), 4, 4).requiresGrad(true);
    Tensor x = Tensor.randn(new Generator(7), 3, 4);
    Tensor[] stash = new Tensor[1];
    boolean[] releasedWhenProbed = new boolean[1];
    UnaryOperator<Tensor> seg = t -> {
      Tensor p = t.matmul(w);
      Tensor out;
      try (Grad off = Grad.off()) {
        out = p.mul(1.0);
      }
      // a probe whose backward runs after the tanh's and the mul's: by then the tanh's output is consumed
      out = Autograd.record("probe", out, (ctx, g) -> {
        releasedWhenProbed[0] = stash[0].storage().isReleased();
        return new Tensor[] {g};
      }, p);
      stash[0] = out.tanh();
      return stash[0].mul(2);
    };
    float[] expected;
    try (MemoryScope step = MemoryScope.open()) {
      seg.apply(x).sum().backward();
      assertFalse(releasedWhenProbed[0]); // a plain backward keeps activations until the step's scope closes
      expected = w.grad().toFloatArray();
      w.setGrad(null);
    }
    try (MemoryScope step = MemoryScope.open()) {
      Checkpointing.apply(seg, x).sum().backward();
      assertTrue(releasedWhenProbed[0]);
      assertArrayEquals(expected, w.grad().toFloatArray());
    }
  }
}
