package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.List;
import org.junit.jupiter.api.Test;

/** GraphExecutor's runAll, which runs a training step's joint graph: every output, as Graph.runAll. */
class GraphExecutorTest {
  @Test
  void runAllGivesEveryOutputAsGraphRunAllAndTimesEachOp() {
    Tensor a = Tensor.randn(3, 4);
    Tensor b = Tensor.randn(3, 4);
    Graph one = Compiler.trace(in -> in[0].add(in[1]).relu().mul(2.0).exp(), a, b);
    List<GraphNode> ops = one.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP).toList();
    // outputs read early (the add, dying into the relu otherwise) and late, one of them twice
    Graph g = new Graph(one.nodes(), one.inputs(), List.of(ops.get(3), ops.get(0), ops.get(1), ops.get(0)));
    GraphExecutor exec = new GraphExecutor(g);
    long[] nanos = new long[g.nodes().size()];
    for (int i = 0; i < 2; i++) { // the second call reuses the first's arrays
      Tensor[] want = g.runAll(a, b);
      Tensor[] got = exec.runAll(i == 0 ? null : nanos, a, b);
      assertEquals(want.length, got.length);
      for (int k = 0; k < want.length; k++) assertBitwise(want[k], got[k]);
    }
    for (GraphNode n : ops) assertTrue(nanos[n.slot] > 0, n.name());
    assertThrows(IllegalStateException.class, () -> exec.run(a, b));
    assertThrows(TensorArgumentException.class, () -> exec.runAll(null, a));
    assertThrows(TensorArgumentException.class, () -> exec.runAll(null, a, Tensor.randn(4, 3)));
  }

  /** Runs {@code body} with the CPU backend on {@code threads} threads, restoring the count after. */
  private static void withThreads(int threads, Runnable body) {
    int before = dev.ember.backend.cpu.Parallel.threads();
    dev.ember.backend.cpu.Parallel.setThreads(threads);
    try {
      body.run();
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(before);
    }
  }

  /** Two independent chains of small ops and a big one after them: the loss-and-gradients shape of a step's tail. */
  private static Graph branches(Tensor a, Tensor b, Tensor big) {
    Graph one = Compiler.trace(in -> {
      Tensor u = in[0].exp().mul(2.0);
      Tensor v = in[1].tanh().sum(0, true);
      return u.add(in[2].sum()).add(v); // the chains meet after the big step
    }, a, b, big);
    List<GraphNode> ops = one.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP).toList();
    return new Graph(one.nodes(), one.inputs(), List.of(ops.getLast(), ops.get(1), ops.get(3)));
  }

  @Test
  void independentSmallStepsRunSideBySideWithTheBitsOfOneThread() {
    Tensor a = Tensor.randn(6, 5);
    Tensor b = Tensor.randn(6, 5);
    Tensor big = Tensor.randn(300, 300); // 90,000 elements: its sum is no small step
    Graph g = branches(a, b, big);
    GraphExecutor exec = new GraphExecutor(g);
    List<int[]> segments = exec.segments();
    assertEquals(1, segments.size(), "one segment");
    int[] seg = segments.get(0);
    assertEquals(4, seg[1] - seg[0], java.util.Arrays.toString(seg)); // exp, mul | tanh, sum
    assertTrue(exec.onMainLane(seg[0]) != exec.onMainLane(seg[0] + 2), "one chain a side chain");
    Tensor[] want = g.runAll(a, b, big);
    for (int threads = 1; threads <= 2; threads++) {
      withThreads(threads, () -> {
        for (int i = 0; i < 50; i++) { // either thread may take either branch
          Tensor[] got;
          try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
            got = exec.runAll(null, a, b, big);
          }
          for (int k = 0; k < want.length; k++) assertBitwise(want[k], got[k]);
        }
      });
    }
  }

  @Test
  void aChainOrARandomOpIsNoSegment() {
    Tensor a = Tensor.randn(6, 5);
    assertTrue(new GraphExecutor(Compiler.trace(in -> in[0].exp().mul(2.0).tanh().relu(), a)).segments().isEmpty());
    Graph dropout = Compiler.trace(in -> dev.ember.nn.functional.F.dropout(in[0], 0.5, true, dev.ember.tensor.Generator.global()).add(in[1].exp())
        .add(in[1].tanh()), a, Tensor.randn(6, 5));
    for (int[] seg : new GraphExecutor(dropout).segments()) {
      for (int s = seg[0]; s < seg[1]; s++) assertTrue(!opAt(dropout, s).op().startsWith("dropout"), "dropout in a segment");
    }
  }

  private static GraphNode opAt(Graph g, int step) {
    return g.nodes().stream().filter(n -> n.kind() == GraphNode.Kind.OP).toList().get(step);
  }

  @Test
  void stepsOnTheOtherThreadRunWithGradOffAndAFailureReachesTheCaller() {
    Tensor a = Tensor.randn(6, 5);
    Tensor b = Tensor.randn(6, 5);
    java.util.Set<Boolean> gradSeen = java.util.concurrent.ConcurrentHashMap.newKeySet();
    boolean[] fail = new boolean[1];
    GraphNode x = GraphNode.input(0, new int[] {6, 5}, dev.ember.tensor.DType.F32);
    GraphNode y = GraphNode.input(1, new int[] {6, 5}, dev.ember.tensor.DType.F32);
    GraphNode w = GraphNode.parameter("w", Tensor.randn(6, 5).requiresGrad(true));
    List<GraphNode> nodes = new java.util.ArrayList<>(List.of(x, y, w));
    List<GraphNode> outs = new java.util.ArrayList<>();
    for (GraphNode in : List.of(x, y, x, y)) { // four independent steps, each reading the parameter
      GraphNode n = GraphNode.op("mul", List.of(in, w), java.util.Map.of(), new int[] {6, 5},
          dev.ember.tensor.DType.F32, t -> {
            gradSeen.add(dev.ember.autograd.Grad.enabled());
            if (fail[0]) throw new IllegalStateException("step failed");
            return t[0].mul(t[1]);
          });
      nodes.add(n);
      outs.add(n);
    }
    GraphExecutor exec = new GraphExecutor(new Graph(nodes, List.of(x, y), outs));
    assertEquals(1, exec.segments().size());
    withThreads(2, () -> {
      try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
        for (int i = 0; i < 20; i++) {
          for (Tensor t : exec.runAll(null, a, b)) assertTrue(!t.requiresGrad(), "recorded on the tape");
        }
        fail[0] = true;
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> exec.runAll(null, a, b));
        assertEquals("step failed", e.getMessage());
      }
    });
    assertEquals(java.util.Set.of(false), gradSeen);
  }
}
