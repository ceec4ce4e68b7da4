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
}
