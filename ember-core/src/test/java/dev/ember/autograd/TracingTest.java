package dev.ember.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class TracingTest {
  /** Records what the ops report. */
  static final class Recorder implements Tracing.Tracer {
    final List<String> ops = new ArrayList<>();
    final List<Tracing.Replay> replays = new ArrayList<>();
    final List<Object[]> attrs = new ArrayList<>();

    @Override
    public void op(String name, Tensor out, Tensor[] inputs, Object[] a, Tracing.Replay replay) {
      ops.add(name);
      replays.add(replay);
      attrs.add(a);
    }

    @Override
    public void unsupported(String name, String reason) {
      ops.add("!" + name);
    }
  }

  private static int[] bits(Tensor t) {
    float[] v = t.toFloatArray();
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) b[i] = Float.floatToRawIntBits(v[i]);
    return b;
  }

  @Test
  void anInstalledTracerSeesTheOpsAndTheirReplaysRecomputeThem() {
    Tensor x = Tensor.randn(3, 4);
    Tensor y = Tensor.randn(3, 4);
    Recorder r = new Recorder();
    Tensor out;
    try (Tracing.Scope s = Tracing.install(r)) {
      assertTrue(Tracing.active());
      out = x.relu().add(y).sum(1, true);
      Tensor o = out;
      assertThrows(RuntimeException.class, o::item); // reported, then fails: 3 elements
    }
    assertFalse(Tracing.active());
    assertEquals(List.of("relu", "add", "sum", "!item"), r.ops);
    assertEquals("dims", r.attrs.get(2)[0]);
    assertArrayEquals(new int[] {1}, (int[]) r.attrs.get(2)[1]);
    assertEquals(true, r.attrs.get(2)[3]);
    Tensor relu = r.replays.get(0).run(new Tensor[] {y});
    assertArrayEquals(bits(y.relu()), bits(relu));
    Tensor sum = r.replays.get(2).run(new Tensor[] {y});
    assertArrayEquals(bits(y.sum(1, true)), bits(sum));
    x.relu(); // after close: nothing more reported
    assertEquals(4, r.ops.size());
  }

  @Test
  void scopesNestAndRestoreTheTracerBefore() {
    Recorder outer = new Recorder();
    Recorder inner = new Recorder();
    Tensor x = Tensor.randn(2);
    try (Tracing.Scope a = Tracing.install(outer)) {
      x.neg();
      try (Tracing.Scope b = Tracing.install(inner)) {
        x.exp();
      }
      try (Tracing.Scope c = Tracing.install(null)) {
        assertFalse(Tracing.active());
        x.exp();
      }
      x.abs();
    }
    assertEquals(List.of("neg", "abs"), outer.ops);
    assertEquals(List.of("exp"), inner.ops);
  }

  /** capturesBackward() is the installed tracer's answer (false without one, or suspended, or by default). */
  @Test
  void capturesBackwardAsksTheTracerOfThisThread() {
    Recorder forwardOnly = new Recorder();
    Tracing.Tracer training = new Tracing.Tracer() {
      @Override
      public void op(String name, Tensor out, Tensor[] inputs, Object[] attrs, Tracing.Replay replay) {}

      @Override
      public void unsupported(String name, String reason) {}

      @Override
      public boolean capturesBackward() {
        return true;
      }
    };
    assertFalse(Tracing.capturesBackward());
    try (Tracing.Scope a = Tracing.install(forwardOnly)) {
      assertFalse(Tracing.capturesBackward());
      try (Tracing.Scope b = Tracing.install(training)) {
        assertTrue(Tracing.capturesBackward());
        try (Tracing.Scope c = Tracing.suspend()) {
          assertFalse(Tracing.capturesBackward());
        }
        assertTrue(Tracing.capturesBackward());
      }
      assertFalse(Tracing.capturesBackward());
    }
    assertFalse(Tracing.capturesBackward());
  }
}
