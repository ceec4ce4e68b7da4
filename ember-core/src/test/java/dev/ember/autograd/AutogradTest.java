package dev.ember.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;

class AutogradTest {

  private static Tensor leaf(double... v) {
    return Tensor.of(v).requiresGrad(true);
  }

  private static void assertValues(double[] expected, Tensor t, double tol) {
    double[] got = t.toDoubleArray();
    assertEquals(expected.length, got.length, "numel");
    for (int i = 0; i < got.length; i++) assertEquals(expected[i], got[i], tol, "element " + i);
  }

  @Test
  void gradientsAccumulateAcrossBackwardCalls() {
    Tensor x = leaf(1, 2, 3);
    x.mul(x).sum().backward();
    assertValues(new double[] {2, 4, 6}, x.grad(), 0);
    x.mul(x).sum().backward();
    assertValues(new double[] {4, 8, 12}, x.grad(), 0);
    assertEquals(DType.F64, x.grad().dtype());
    x.grad().zero_();
    x.mul(3).sum().backward();
    assertValues(new double[] {3, 3, 3}, x.grad(), 0);
  }

  @Test
  void backwardOnNonScalarNeedsAnUpstreamGradient() {
    Tensor x = Tensor.ones(2, 3).requiresGrad(true);
    Tensor y = x.mul(2);
    TensorArgumentException ex = assertThrows(TensorArgumentException.class, y::backward);
    assertEquals("backward: grad can be implicitly created only for scalar outputs (numel 6): x=[2, 3];"
        + " hint: pass the upstream gradient: backward(grad)", ex.getMessage());
    y.backward(Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3));
    assertArrayEquals(new float[] {2, 4, 6, 8, 10, 12}, x.grad().toFloatArray());
    TensorArgumentException shape = assertThrows(TensorArgumentException.class,
        () -> x.mul(2).backward(Tensor.ones(3, 2)));
    assertEquals("backward: gradient shape differs from the tensor's: tensor=[2, 3], grad=[3, 2]", shape.getMessage());
  }

  @Test
  void oneElementTensorsCanBackwardImplicitly() {
    Tensor x = leaf(2);
    x.mul(x).mul(x).backward(); // shape [1]
    assertValues(new double[] {12}, x.grad(), 1e-12);
  }

  @Test
  void backwardWithoutGradFails() {
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> Tensor.ones(2).sum().backward());
    assertTrue(ex.getMessage().startsWith("backward: tensor [] does not require grad"), ex.getMessage());
  }

  @Test
  void retainGraph() {
    Tensor x = leaf(1, 2);
    Tensor y = x.exp().sum();
    y.backward();
    IllegalStateException ex = assertThrows(IllegalStateException.class, y::backward);
    assertTrue(ex.getMessage().contains("second time"), ex.getMessage());
    assertTrue(ex.getMessage().startsWith("sum: "), ex.getMessage());

    Tensor z = leaf(1, 2);
    Tensor w = z.exp().sum();
    w.backward(Tensor.scalar(1, DType.F64), true);
    w.backward(Tensor.scalar(1, DType.F64), true);
    assertValues(new double[] {2 * Math.exp(1), 2 * Math.exp(2)}, z.grad(), 1e-12);
    w.backward(Tensor.scalar(1, DType.F64), false); // the last one may free the graph
    assertValues(new double[] {3 * Math.exp(1), 3 * Math.exp(2)}, z.grad(), 1e-12);
    assertThrows(IllegalStateException.class, w::backward);
  }

  @Test
  void backwardFreesTheActivationsOfTheGraphItRan() throws InterruptedException {
    Tensor x = leaf(1, 2, 3);
    Tensor hidden = x.exp();
    java.lang.ref.WeakReference<Tensor> ref = new java.lang.ref.WeakReference<>(hidden);
    Tensor loss = hidden.mul(hidden).sum();
    hidden = null;
    loss.backward();
    // the caller still holds the loss, as a training loop's last-step variable does
    for (int i = 0; i < 50 && ref.get() != null; i++) {
      System.gc();
      Thread.sleep(10);
    }
    assertNull(ref.get(), "the loss kept an activation of the graph its backward freed");
    assertValues(new double[] {2 * Math.exp(2), 2 * Math.exp(4), 2 * Math.exp(6)}, x.grad(), 1e-9);
    assertThrows(IllegalStateException.class, loss::backward);

    // a node freed by one backward still stops another root's backward that reaches it
    Tensor z = leaf(1, 2);
    Tensor shared = z.exp();
    shared.sum().backward();
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> shared.mul(2).sum().backward());
    assertTrue(ex.getMessage().startsWith("exp: ") && ex.getMessage().contains("second time"), ex.getMessage());
  }

  @Test
  void gradOffScopes() {
    Tensor x = leaf(1, 2);
    assertTrue(Grad.enabled());
    try (Grad outer = Grad.off()) {
      assertFalse(Grad.enabled());
      Tensor y = x.mul(2);
      assertFalse(y.requiresGrad());
      assertNull(y.gradFn());
      try (Grad inner = Grad.off()) {
        assertFalse(Grad.enabled());
      }
      assertFalse(Grad.enabled(), "closing a nested off() keeps the outer scope off");
      try (Grad on = Grad.on()) {
        assertTrue(Grad.enabled());
        Tensor z = x.mul(2);
        assertTrue(z.requiresGrad());
        assertEquals("mul", z.gradFn().name());
      }
      assertFalse(Grad.enabled());
      outer.close();
      outer.close(); // idempotent
      assertTrue(Grad.enabled());
    }
    assertTrue(Grad.enabled());
    assertTrue(x.mul(2).requiresGrad());
  }

  @Test
  void gradSwitchIsPerThread() throws InterruptedException {
    AtomicBoolean other = new AtomicBoolean();
    try (Grad ignored = Grad.off()) {
      Thread t = new Thread(() -> other.set(Grad.enabled()));
      t.start();
      t.join();
    }
    assertTrue(other.get());
  }

  @Test
  void detachCutsTheGraphAndSharesStorage() {
    Tensor x = leaf(1, 2, 3);
    Tensor y = x.mul(2);
    Tensor d = y.detach();
    assertFalse(d.requiresGrad());
    assertNull(d.gradFn());
    assertTrue(d.isLeaf());
    assertSame(y.storage(), d.storage());
    assertArrayEquals(y.shape(), d.shape());
    y.mul(d).sum().backward(); // d is a constant: d/dx (2x * d) = 2 d
    assertValues(new double[] {4, 8, 12}, x.grad(), 0);
    try (Grad ignored = Grad.off()) {
      d.fill_(0);
    }
    assertEquals(0.0, y.getDouble(1));
  }

  @Test
  void requiresGradPropagation() {
    Tensor a = Tensor.ones(3);
    Tensor b = Tensor.ones(3);
    Tensor x = Tensor.ones(3).requiresGrad(true);
    assertFalse(a.add(b).requiresGrad());
    assertTrue(a.add(x).requiresGrad());
    assertTrue(x.add(a).requiresGrad());
    assertFalse(a.add(x).isLeaf());
    assertTrue(x.isLeaf());
    assertTrue(x.exp().sum().requiresGrad());
    assertFalse(x.gt(0).requiresGrad(), "comparisons are not differentiable");
    assertFalse(x.argmax(0, false).requiresGrad());

    TensorArgumentException ex = assertThrows(TensorArgumentException.class, () -> Tensor.arange(3).requiresGrad(true));
    assertEquals("requiresGrad: only floating-point tensors can require gradients, got int64: x=[3]", ex.getMessage());
    IllegalStateException off = assertThrows(IllegalStateException.class, () -> x.mul(2).requiresGrad(false));
    assertTrue(off.getMessage().contains("hint: use detach()"), off.getMessage());
    assertFalse(x.requiresGrad(false).requiresGrad());
  }

  @Test
  void hooksSeeAndCanReplaceTheGradient() {
    Tensor x = leaf(1, 2);
    List<double[]> seen = new ArrayList<>();
    x.registerHook(g -> {
      seen.add(g.toDoubleArray());
      return null; // keep
    });
    x.mul(Tensor.of(new double[] {3, 4})).sum().backward();
    assertEquals(1, seen.size());
    assertArrayEquals(new double[] {3, 4}, seen.get(0));
    assertValues(new double[] {3, 4}, x.grad(), 0);

    Tensor y = leaf(1, 2);
    y.registerHook(g -> g.mul(2));
    y.mul(5).sum().backward();
    assertValues(new double[] {10, 10}, y.grad(), 0);

    // a hook on an intermediate tensor changes what flows further back, and runs once for the summed gradient
    Tensor z = leaf(1, 2);
    Tensor h = z.mul(2);
    int[] calls = {0};
    h.registerHook(g -> {
      calls[0]++;
      return g.mul(10);
    });
    h.add(h).sum().backward(); // two paths into h: one call with gradient 2
    assertEquals(1, calls[0]);
    assertValues(new double[] {40, 40}, z.grad(), 0);
    assertNull(h.grad(), "non-leaves do not keep .grad");

    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> Tensor.ones(2).registerHook(g -> g));
    assertTrue(ex.getMessage().contains("does not require grad"), ex.getMessage());
  }

  @Test
  void aLeafsHooksRunOnceOnTheSumOfAPasssContributions() {
    // x = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True); x.register_hook(lambda g: g + 1)
    // x.mul(2).add(x.mul(3)).sum().backward()  -> x.grad = [6, 6], the hook called once with [5, 5]
    // the same backward again                  -> x.grad = [12, 12], the hook called once more with [5, 5]
    Tensor x = leaf(1, 2);
    List<double[]> seen = new ArrayList<>();
    x.registerHook(g -> {
      seen.add(g.toDoubleArray());
      return g.add(1);
    });
    x.mul(2).add(x.mul(3)).sum().backward();
    assertEquals(1, seen.size());
    assertArrayEquals(new double[] {5, 5}, seen.get(0));
    assertValues(new double[] {6, 6}, x.grad(), 0);
    x.mul(2).add(x.mul(3)).sum().backward(); // accumulates the hooked total of the second pass
    assertEquals(2, seen.size());
    assertArrayEquals(new double[] {5, 5}, seen.get(1));
    assertValues(new double[] {12, 12}, x.grad(), 0);

    // y = torch.tensor([1., 2.], dtype=torch.float64, requires_grad=True); y.register_hook(lambda g: g * 2)
    // (y * y).sum().backward()  -> y.grad = [4, 8]: both operands' contributions, then the hook, then a post hook once
    Tensor y = leaf(1, 2);
    int[] calls = {0, 0};
    y.registerHook(g -> {
      calls[0]++;
      return g.mul(2);
    });
    y.registerPostAccumulateGradHook(t -> calls[1]++);
    y.mul(y).sum().backward();
    assertValues(new double[] {4, 8}, y.grad(), 0);
    assertArrayEquals(new int[] {1, 1}, calls);

    // reached at three depths: the hook waits for the last contribution
    // z = torch.tensor([0.5, -1.], dtype=torch.float64, requires_grad=True); z.register_hook(lambda g: g * 2)
    // z.exp().mul(z).add(z).sum().backward()  -> z.grad = 2 * (e^z + z e^z + 1) = [6.946163812100385, 2.0]
    Tensor z = leaf(0.5, -1);
    int[] zCalls = {0};
    z.registerHook(g -> {
      zCalls[0]++;
      return g.mul(2);
    });
    z.exp().mul(z).add(z).sum().backward();
    assertEquals(1, zCalls[0]);
    assertValues(new double[] {6.946163812100385, 2.0}, z.grad(), 1e-15);
  }

  @Test
  void postAccumulateHooksSeeTheLeafsAccumulatedGradient() {
    Tensor x = leaf(1, 2);
    List<double[]> seen = new ArrayList<>();
    x.registerPostAccumulateGradHook(t -> seen.add(t.grad().toDoubleArray()));
    x.mul(Tensor.of(new double[] {3, 4})).sum().backward();
    x.mul(Tensor.of(new double[] {1, 1})).sum().backward(); // accumulates: the hook sees the running sum
    assertEquals(2, seen.size());
    assertArrayEquals(new double[] {3, 4}, seen.get(0));
    assertArrayEquals(new double[] {4, 5}, seen.get(1));

    seen.clear();
    x.setGrad(null);
    x.mul(2).add(x.mul(3)).sum().backward(); // two contributions in one pass: one call after each
    assertEquals(2, seen.size());
    assertArrayEquals(new double[] {5, 5}, seen.get(1));

    seen.clear();
    x.backward(Tensor.of(new double[] {1, 1})); // the root is the leaf itself
    assertArrayEquals(new double[] {6, 6}, seen.get(0));

    // a hook may replace the gradient; backward's own tensors are left alone
    Tensor w = leaf(1, 2);
    w.registerPostAccumulateGradHook(t -> t.setGrad(t.grad().mul(0.5)));
    w.add(w.mul(1)).sum().backward(); // add hands the same ones to w and to mul: they must stay ones
    assertValues(new double[] {0.75, 0.75}, w.grad(), 0); // (1 * 0.5 + 1) * 0.5
    IllegalStateException ex = assertThrows(IllegalStateException.class,
        () -> Tensor.ones(2).registerPostAccumulateGradHook(t -> {}));
    assertTrue(ex.getMessage().contains("is not a leaf that requires grad"), ex.getMessage());
    assertThrows(IllegalStateException.class, () -> x.mul(2).registerPostAccumulateGradHook(t -> {}));
  }

  @Test
  void broadcastingBackwardReducesToInputShapes() {
    Tensor a = Tensor.ones(3, 1).requiresGrad(true);
    Tensor b = Tensor.ones(4).requiresGrad(true);
    Tensor c = a.add(b);
    assertArrayEquals(new int[] {3, 4}, c.shape());
    c.sum().backward();
    assertArrayEquals(new int[] {3, 1}, a.grad().shape());
    assertArrayEquals(new int[] {4}, b.grad().shape());
    assertArrayEquals(new float[] {4, 4, 4}, a.grad().toFloatArray());
    assertArrayEquals(new float[] {3, 3, 3, 3}, b.grad().toFloatArray());

    Tensor s = Tensor.scalar(2).requiresGrad(true);
    Tensor m = Tensor.of(new float[] {1, 2, 3, 4}, 2, 2).requiresGrad(true);
    m.mul(s).sum().backward();
    assertEquals(0, s.grad().dim());
    assertEquals(10.0, s.grad().item());
    assertArrayEquals(new float[] {2, 2, 2, 2}, m.grad().toFloatArray());
  }

  @Test
  void diamondGraphSumsBothPaths() {
    Tensor x = leaf(0.5, -1);
    x.mul(2).add(x.mul(3)).sum().backward();
    assertValues(new double[] {5, 5}, x.grad(), 0);

    Tensor y = leaf(0.5, -1);
    y.mul(y).sum().backward();
    assertValues(new double[] {1, -2}, y.grad(), 0);

    Tensor z = leaf(0.3, 1.2);
    Tensor a = z.mul(2);
    a.exp().add(a.sin()).sum().backward();
    double[] zv = {0.3, 1.2};
    assertValues(new double[] {2 * (Math.exp(0.6) + Math.cos(0.6)), 2 * (Math.exp(2.4) + Math.cos(2.4))}, z.grad(), 1e-12);
    assertEquals(0.3, zv[0]);
  }

  @Test
  void aNodeReachedAtSeveralDepthsRunsOnceWithEveryPathsGradientSummed() {
    // a feeds b, c and e; b feeds c and d: the walk must hold a's and b's gradients until all their consumers ran
    Tensor x = leaf(1, 2);
    Tensor a = x.mul(2);
    List<double[]> seenByHook = new ArrayList<>();
    a.registerHook(g -> {
      seenByHook.add(g.toDoubleArray());
      return null;
    });
    Tensor b = a.mul(3);
    Tensor c = a.add(b);
    Tensor e = c.mul(b).add(a); // 12 a^2 + a = 48 x^2 + 2 x
    e.sum().backward();
    assertEquals(1, seenByHook.size(), "a's hook runs once, on the sum");
    assertArrayEquals(new double[] {49, 97}, seenByHook.get(0)); // 24 a + 1
    assertValues(new double[] {98, 194}, x.grad(), 0); // 96 x + 2
  }

  @Test
  void modifyingASavedOutputFailsBackward() {
    Tensor x = leaf(0, 1, 2);
    Tensor y = x.exp();
    Tensor loss = y.sum();
    try (Grad ignored = Grad.off()) {
      y.add_(1);
    }
    IllegalStateException ex = assertThrows(IllegalStateException.class, loss::backward);
    assertEquals("exp: its output [3] was modified in place (last by add_) after the forward (version 1, expected 0), so its"
        + " gradient would be wrong; hint: use an out-of-place op or clone() before modifying", ex.getMessage());
  }

  @Test
  void modifyingASavedInputFailsBackward() {
    Tensor x = leaf(1, 2, 3);
    Tensor w = leaf(4, 5, 6);
    Tensor loss = x.mul(w).sum();
    try (Grad ignored = Grad.off()) {
      x.mul_(2);
    }
    IllegalStateException ex = assertThrows(IllegalStateException.class, loss::backward);
    assertTrue(ex.getMessage().startsWith("mul: input 0 [3] was modified in place"), ex.getMessage());

    Tensor s = leaf(0.1, 0.2);
    Tensor sl = s.sin().sum(); // sin's backward reads its input
    try (Grad ignored = Grad.off()) {
      s.fill_(0);
    }
    IllegalStateException sin = assertThrows(IllegalStateException.class, sl::backward);
    assertTrue(sin.getMessage().contains("sin") && sin.getMessage().contains("modified"), sin.getMessage());
  }

  @Test
  void modifyingTensorsABackwardDoesNotReadIsFine() {
    Tensor x = leaf(1, 2, 3);
    Tensor loss = x.add(1).sum(); // add's backward reads nothing
    try (Grad ignored = Grad.off()) {
      x.add_(10);
    }
    assertDoesNotThrow(() -> loss.backward());
    assertValues(new double[] {1, 1, 1}, x.grad(), 0);

    // exp's backward reads only its output, as PyTorch: changing the input is fine
    Tensor e = leaf(0, 1);
    Tensor le = e.exp().sum();
    try (Grad ignored = Grad.off()) {
      e.add_(5);
    }
    assertDoesNotThrow(() -> le.backward());
    assertValues(new double[] {1, Math.E}, e.grad(), 1e-12);

    // multiplying by a constant does not need the tensor itself
    Tensor m = leaf(1, 2);
    Tensor lm = m.mul(3).sum();
    try (Grad ignored = Grad.off()) {
      m.mul_(7);
    }
    assertDoesNotThrow(() -> lm.backward());
    assertValues(new double[] {3, 3}, m.grad(), 0);

    // a modified intermediate that nothing reads: y = x * 2 is not saved by sum
    Tensor p = leaf(1, 2);
    Tensor y = p.mul(2);
    Tensor lp = y.sum();
    try (Grad ignored = Grad.off()) {
      y.fill_(0);
    }
    assertDoesNotThrow(() -> lp.backward());
    assertValues(new double[] {2, 2}, p.grad(), 0);
  }

  @Test
  void inPlaceOnALeafThatRequiresGradWhileRecordingFails() {
    Tensor x = leaf(1, 2, 3);
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> x.add_(1));
    assertEquals("add_: a leaf Variable that requires grad is being used in an in-place operation (tensor [3]);"
        + " hint: modify it under Grad.off(), or use the out-of-place op", ex.getMessage());
    assertTrue(assertThrows(IllegalStateException.class, () -> x.fill_(0)).getMessage().contains("Grad.off"));
    assertTrue(assertThrows(IllegalStateException.class, () -> x.copy_(Tensor.zeros(DType.F64, 3))).getMessage()
        .startsWith("copy_: "));
    assertValues(new double[] {1, 2, 3}, x, 0); // nothing was written
    int v = x.version();
    try (Grad ignored = Grad.off()) {
      x.sub_(Tensor.ones(DType.F64, 3));
    }
    assertEquals(v + 1, x.version());
    assertValues(new double[] {0, 1, 2}, x, 0);
  }

  @Test
  void sgdStepUnderGradOffLeavesParametersAsLeaves() {
    Tensor w = leaf(1, -1);
    Tensor loss = w.mul(w).sum();
    loss.backward();
    try (Grad ignored = Grad.off()) {
      w.sub_(w.grad().mul(0.25));
    }
    assertTrue(w.isLeaf());
    assertTrue(w.requiresGrad());
    assertValues(new double[] {0.5, -0.5}, w, 0);
    assertNotNull(w.grad());
  }

  // ---------------------------------------------------------------- gradient adoption without a copy

  @Test
  void oneGradientGivenToTwoLeavesIsNotSharedBetweenThem() {
    Tensor a = leaf(1, 2, 3);
    Tensor b = leaf(4, 5, 6);
    // mul's backward makes a fresh tensor; add hands that same tensor to both operands
    a.add(b).mul(Tensor.of(new double[] {2.0, 3.0, 4.0})).sum().backward();
    assertValues(new double[] {2, 3, 4}, a.grad(), 0);
    assertValues(new double[] {2, 3, 4}, b.grad(), 0);
    assertFalse(a.grad().storage() == b.grad().storage(), "the two leaves must not share one gradient buffer");
    a.grad().mul_(10);
    assertValues(new double[] {2, 3, 4}, b.grad(), 0);
  }

  @Test
  void aLeafReachedTwiceSumsBothPathsEvenWhenItsFirstGradientIsStillPendingElsewhere() {
    // d/dw = c (through add, whose gradient tensor also goes to v's mul node) + 3 (second path); d/dv = 2c.
    // Both summation orders, so that w's second contribution arrives before v's node has read the shared tensor.
    for (boolean swap : new boolean[] {false, true}) {
      Tensor w = leaf(1, 2, 3);
      Tensor v = leaf(0.5, -1, 2);
      Tensor c = Tensor.of(new double[] {2.0, 3.0, 4.0});
      Tensor viaAdd = w.add(v.mul(2.0)).mul(c).sum();
      Tensor direct = w.mul(3.0).sum();
      (swap ? direct.add(viaAdd) : viaAdd.add(direct)).backward();
      assertValues(new double[] {5, 6, 7}, w.grad(), 0);
      assertValues(new double[] {4, 6, 8}, v.grad(), 0);
      // a later pass accumulates into the adopted gradient
      w.mul(c).sum().backward();
      assertValues(new double[] {7, 9, 11}, w.grad(), 0);
    }
  }

  @Test
  void aGradientAHookSawIsCopiedNotAdopted() {
    Tensor w = leaf(1, 2, 3);
    Tensor y = w.add(0.0); // add's backward hands y's gradient to w unchanged
    List<Tensor> seen = new ArrayList<>();
    y.registerHook(g -> {
      seen.add(g);
      return null;
    });
    y.mul(Tensor.of(new double[] {2.0, 2.0, 2.0})).sum().backward();
    assertValues(new double[] {2, 2, 2}, w.grad(), 0);
    w.grad().mul_(5);
    assertValues(new double[] {2, 2, 2}, seen.get(0), 0);
  }

  @Test
  void backwardOnALeafCopiesTheCallersGradient() {
    Tensor w = leaf(1, 2, 3);
    Tensor g = Tensor.of(new double[] {1.0, 1.0, 1.0});
    w.backward(g);
    assertFalse(w.grad() == g || w.grad().storage() == g.storage(), "the leaf must own its gradient");
    w.grad().mul_(3);
    assertValues(new double[] {1, 1, 1}, g, 0);
  }

  @Test
  void theCallersUpstreamGradientIsNeverAdopted() {
    Tensor w = leaf(1, 2, 3);
    Tensor g = Tensor.of(new double[] {1.0, 1.0, 1.0});
    w.add(1.0).backward(g); // add's backward passes g through unchanged
    w.grad().mul_(3);
    assertValues(new double[] {1, 1, 1}, g, 0);
    assertValues(new double[] {3, 3, 3}, w.grad(), 0);
  }
}
