package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ForwardHookTest {
  /** Records "before name" / "after name [shape]" for every hooked module of {@code root}. */
  private static List<String> traceAll(Module root, List<HookHandle> handles) {
    List<String> log = new ArrayList<>();
    Map<Module, String> names = new IdentityHashMap<>();
    root.namedModules().forEach((n, m) -> names.put(m, n.isEmpty() ? "<root>" : n));
    for (Module m : root.modules()) {
      handles.add(m.registerForwardHook(new ForwardHook() {
        @Override
        public void beforeForward(Module module, List<Tensor> inputs) {
          log.add("before " + names.get(module) + " " + java.util.Arrays.toString(inputs.get(0).shape()));
        }

        @Override
        public void afterForward(Module module, List<Tensor> inputs, Tensor output) {
          log.add("after " + names.get(module) + " " + java.util.Arrays.toString(output.shape()));
        }
      }));
    }
    return log;
  }

  @Test
  void hooksFireAroundEveryCallOfAContainerAndItsChildren() {
    Generator g = new Generator(3);
    Sequential net = new Sequential(new Linear(4, 3, true, g), new ReLU(), new Sequential(new Linear(3, 2, true, g)));
    List<HookHandle> handles = new ArrayList<>();
    List<String> log = traceAll(net, handles);
    Tensor x = Tensor.randn(g, 5, 4);
    Tensor out = net.call(x);
    assertEquals(List.of("before <root> [5, 4]", "before 0 [5, 4]", "after 0 [5, 3]", "before 1 [5, 3]", "after 1 [5, 3]",
        "before 2 [5, 3]", "before 2.0 [5, 3]", "after 2.0 [5, 2]", "after 2 [5, 2]", "after <root> [5, 2]"), log);
    // hooks observe: the result is forward's
    assertArrayEquals(net.forward(x).toFloatArray(), out.toFloatArray());
  }

  @Test
  void directForwardRunsNoHooksOfThatModuleButContainersCallTheirChildren() {
    Generator g = new Generator(4);
    Sequential net = new Sequential(new Linear(2, 2, true, g), new Tanh());
    List<HookHandle> handles = new ArrayList<>();
    List<String> log = traceAll(net, handles);
    net.forward(Tensor.randn(g, 1, 2));
    assertEquals(List.of("before 0 [1, 2]", "after 0 [1, 2]", "before 1 [1, 2]", "after 1 [1, 2]"), log);
  }

  @Test
  void removedHooksStopFiringAndHandlesAreIdempotent() {
    Linear lin = new Linear(2, 2);
    int[] calls = new int[1];
    HookHandle h = lin.registerForwardHook((m, in, out) -> calls[0]++);
    assertEquals(1, lin.forwardHookCount());
    lin.call(Tensor.ones(1, 2));
    h.remove();
    h.remove();
    assertTrue(h.isRemoved());
    assertEquals(0, lin.forwardHookCount());
    lin.call(Tensor.ones(1, 2));
    assertEquals(1, calls[0]);
    try (HookHandle ignored = lin.registerForwardHook((m, in, out) -> calls[0] += 10)) {
      lin.call(Tensor.ones(1, 2));
    }
    lin.call(Tensor.ones(1, 2));
    assertEquals(11, calls[0]);
  }

  @Test
  void aHookMayRemoveItselfDuringTheCallAndLaterHooksStillRun() {
    ReLU relu = new ReLU();
    List<String> log = new ArrayList<>();
    HookHandle[] self = new HookHandle[1];
    self[0] = relu.registerForwardHook((m, in, out) -> {
      log.add("once");
      self[0].remove();
    });
    relu.registerForwardHook((m, in, out) -> log.add("always"));
    relu.call(Tensor.ones(2));
    relu.call(Tensor.ones(2));
    assertEquals(List.of("once", "always", "always"), log);
  }

  @Test
  void hooksSeeTheInputsAndTheOutputOfTheCall() {
    Linear lin = new Linear(3, 2);
    Tensor x = Tensor.ones(4, 3);
    Tensor[] seen = new Tensor[2];
    lin.registerForwardHook((m, in, out) -> {
      assertSame(lin, m);
      seen[0] = in.get(0);
      seen[1] = out;
    });
    Tensor y = lin.call(x);
    assertSame(x, seen[0]);
    assertSame(y, seen[1]);
  }

  @Test
  void attentionLayersAreCalledWithTheirTensorInputs() {
    Generator g = new Generator(5);
    TransformerEncoder enc = new TransformerEncoder(
        new TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5, true, false, true, g), 2);
    List<HookHandle> handles = new ArrayList<>();
    List<String> log = traceAll(enc, handles);
    enc.call(Tensor.randn(g, 3, 5, 8));
    assertTrue(log.contains("before layers.0 [3, 5, 8]"), log.toString());
    assertTrue(log.contains("after layers.1.self_attn [3, 5, 8]"), log.toString());
    // batch first: the attention stays in [N, L, E] through its output projection
    assertTrue(log.contains("after layers.1.self_attn.out_proj [3, 5, 8]"), log.toString());
    assertTrue(log.contains("after layers.0.linear1 [3, 5, 16]"), log.toString());
    assertEquals("after <root> [3, 5, 8]", log.get(log.size() - 1));
    // the ModuleList holding the layers has no forward and is never called
    assertTrue(log.stream().noneMatch(s -> s.startsWith("before layers [")), log.toString());
    for (HookHandle h : handles) h.remove();
    for (Module m : enc.modules()) assertEquals(0, m.forwardHookCount());
  }

  @Test
  void decoderCrossAttentionSeesTheMemory() {
    Generator g = new Generator(6);
    TransformerDecoderLayer layer = new TransformerDecoderLayer(8, 2, 16, 0.0, "relu", 1e-5, true, false, true, g);
    List<List<int[]>> shapes = new ArrayList<>();
    TransformerDecoder dec = new TransformerDecoder(layer, 1);
    dec.layer(0).child("multihead_attn")
        .registerForwardHook((m, in, out) -> shapes.add(in.stream().map(Tensor::shape).toList()));
    dec.forward(Tensor.randn(g, 2, 3, 8), Tensor.randn(g, 2, 7, 8));
    assertEquals(1, shapes.size());
    assertArrayEquals(new int[] {2, 3, 8}, shapes.get(0).get(0));
    assertArrayEquals(new int[] {2, 7, 8}, shapes.get(0).get(1));
  }

  @Test
  void residualCallsBodyAndShortcut() {
    Residual r = new Residual(new Linear(2, 2), new Identity());
    List<String> log = new ArrayList<>();
    r.child("body").registerForwardHook((m, in, out) -> log.add("body"));
    r.child("shortcut").registerForwardHook((m, in, out) -> log.add("shortcut"));
    r.call(Tensor.ones(1, 2));
    assertEquals(List.of("body", "shortcut"), log);
  }

  @Test
  void aThrowingHookAbortsTheCallAndNullHooksAreRejected() {
    ReLU relu = new ReLU();
    relu.registerForwardHook((m, in, out) -> {
      throw new IllegalStateException("stop");
    });
    assertEquals("stop", assertThrows(IllegalStateException.class, () -> relu.call(Tensor.ones(1))).getMessage());
    assertEquals("ReLU.registerForwardHook: hook is null",
        assertThrows(IllegalArgumentException.class, () -> relu.registerForwardHook(null)).getMessage());
  }

  @Test
  void hooksRegisteredAndRemovedOnAnotherThreadNeverBreakACall() throws Exception {
    // a test-set tap registers its hook from the loader's thread while the training thread calls the model: the
    // list was an ArrayList read with toArray, so a call met a null hook or a dropped list (NPEs in TrainDeviceTest)
    Linear l = new Linear(4, 2, true, new Generator(3));
    Tensor x = Tensor.ones(1, 4);
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    Thread churn = new Thread(() -> {
      while (!stop.get()) {
        HookHandle h = l.registerForwardHook((m, in, out) -> { });
        HookHandle g = l.registerForwardHook((m, in, out) -> { });
        h.remove();
        g.remove();
      }
    });
    churn.start();
    try {
      for (int i = 0; i < 20_000; i++) l.call(x);
    } finally {
      stop.set(true);
      churn.join();
    }
    assertEquals(0, l.forwardHookCount());
  }
}
