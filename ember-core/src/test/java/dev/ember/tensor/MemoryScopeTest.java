package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class MemoryScopeTest {
  @AfterEach
  void emptyPool() {
    MemoryScope.trimPool();
  }

  @Test
  void theNextScopeReusesTheArraysZeroFilled() {
    float[] first;
    try (MemoryScope s = MemoryScope.open()) {
      Tensor t = Tensor.ones(3, 5);
      first = t.storage().floats();
      assertTrue(t.storage().scope == s);
    }
    assertEquals(15 * 4, MemoryScope.pooledBytes());
    try (MemoryScope s = MemoryScope.open()) {
      Tensor z = Tensor.zeros(15);
      assertSame(first, z.storage().floats(), "same length: the pooled array");
      assertArrayEquals(new float[15], z.toFloatArray(), "reused arrays are zero-filled like fresh ones");
      assertEquals(0, MemoryScope.pooledBytes());
      Tensor other = Tensor.zeros(16);
      assertNotSame(first, other.storage().floats());
    }
  }

  @Test
  void largeReusedArraysAreZeroFilledOnEveryThreadCount() {
    int n = Storage.PARALLEL_ZERO * 3 + 37; // several of the fill's chunks and a tail
    var backend = Device.CPU.backend();
    int old = backend.threads();
    try {
      for (int threads : new int[] {1, 2, 3}) {
        backend.setThreads(threads);
        float[] first;
        try (MemoryScope s = MemoryScope.open()) {
          Tensor t = Tensor.full(-2.5, n);
          first = t.storage().floats();
        }
        try (MemoryScope s = MemoryScope.open()) {
          Tensor z = Tensor.zeros(n);
          assertSame(first, z.storage().floats(), "the pooled array");
          assertArrayEquals(new float[n], z.toFloatArray(), threads + " threads: every element zero again");
        }
        MemoryScope.trimPool();
      }
    } finally {
      backend.setThreads(old);
    }
  }

  @Test
  void uninitializedTensorsSkipTheZeroFillOnlyInsideAScope() {
    assertArrayEquals(new float[6], Tensor.uninitialized(DType.F32, 2, 3).toFloatArray(), "outside a scope: fresh");
    float[] first;
    try (MemoryScope s = MemoryScope.open()) {
      first = Tensor.full(7, DType.F32, 2, 3).storage().floats();
    }
    try (MemoryScope s = MemoryScope.open()) {
      Tensor u = Tensor.uninitialized(DType.F32, 3, 2);
      assertSame(first, u.storage().floats());
      assertEquals(7f, u.toFloatArray()[0], "the released values are left in place");
    }
  }

  /**
   * The ops that take uninitialized outputs (matmul and its backward, addmm, unary, binary, relu's
   * backward) must write every element: with the pool holding only NaN-filled arrays of each output's
   * length, a scoped step gives bitwise what an unscoped one gives.
   */
  @Test
  void opsWithUninitializedOutputsWriteEveryElement() {
    java.util.function.Supplier<float[][]> step = () -> {
      Generator g = new Generator(3);
      Tensor x = Tensor.randn(g, 5, 7).requiresGrad(true);
      Tensor w = Tensor.randn(g, 7, 6).requiresGrad(true);
      Tensor b = Tensor.randn(g, 6).requiresGrad(true);
      Tensor h = dev.ember.ops.LinalgOps.addmm(b, x, w).relu().mul(Tensor.randn(g, 5, 6)).exp();
      Tensor y = h.matmul(Tensor.randn(g, 6, 4)).sum();
      y.backward();
      return new float[][] {h.toFloatArray(), x.grad().toFloatArray(), w.grad().toFloatArray(), b.grad().toFloatArray()};
    };
    dev.ember.testing.PoolChecks.assertEveryElementWritten(step, 4, 5 * 7, 7 * 6, 6, 5 * 6, 6 * 4, 5 * 4, 4, 1);
  }

  /**
   * The same for the copies, reductions, softmax (its backward, and the transposed temporaries of a
   * softmax over a leading axis), cumsum, cat, where, clamp, casts and the index ops: every output
   * and gradient of a graph that uses them all, each of length 0 mod 4 or not.
   */
  @Test
  void copiesReductionsAndIndexOpsWriteEveryElement() {
    java.util.function.Supplier<float[][]> step = () -> {
      Generator g = new Generator(5);
      Tensor x = Tensor.randn(g, 6, 5).requiresGrad(true);
      Tensor xt = x.transpose(0, 1); // [5, 6], strided
      Tensor idx = Tensor.of(new long[] {4, 0, 2}, 3);
      Tensor parts = dev.ember.ops.MovementOps.cat(java.util.List.of(
          xt.clone(), xt.softmax(0), xt.logSoftmax(1), dev.ember.ops.ReduceOps.cumsum(xt, 1)), 0); // [20, 6]
      Tensor picked = dev.ember.ops.IndexOps.gather(x, 1, Tensor.of(new long[] {1, 0, 4, 4, 2, 3}, 6, 1))
          .add(x.indexSelect(1, idx).sum(1, true)); // [6, 1]
      Tensor mixed = dev.ember.ops.ElementwiseOps.where(x.gt(0), x.clamp(-0.5, 0.5), x.to(DType.F64).to(DType.F32));
      Tensor red = parts.sum(0, false).add(parts.mean(1, false).sum()).add(dev.ember.ops.ReduceOps.max(parts, 0, false)[0]); // [6]
      Tensor loss = red.sum().add(picked.sum()).add(mixed.mul(mixed).sum());
      loss.backward();
      return new float[][] {parts.toFloatArray(), picked.toFloatArray(), mixed.toFloatArray(), red.toFloatArray(),
          x.grad().toFloatArray()};
    };
    dev.ember.testing.PoolChecks.assertEveryElementWritten(step, 6, 30, 6, 5, 3, 18, 20, 120, 1);
  }

  @Test
  void aTensorUsedAfterItsScopeThrowsInsteadOfReadingReusedMemory() {
    Tensor t;
    Tensor view;
    try (MemoryScope s = MemoryScope.open()) {
      t = Tensor.arange(6).reshape(2, 3);
      view = t.select(0, 1);
    }
    assertTrue(t.storage().isReleased());
    IllegalStateException e = assertThrows(IllegalStateException.class, t::toFloatArray);
    assertTrue(e.getMessage().contains("released when the MemoryScope that created it closed"), e.getMessage());
    assertThrows(IllegalStateException.class, () -> view.add(1));
    assertThrows(IllegalStateException.class, () -> t.storage().getDouble(0));
    assertEquals("tensor(<released by its MemoryScope>, size=[2, 3], dtype=torch.int64)", t.toString());
  }

  @Test
  void keptTensorsMoveToTheEnclosingScopeAndEscapedOnesToTheCollector() {
    Tensor kept;
    Tensor escaped;
    Tensor keptOut;
    try (MemoryScope outer = MemoryScope.open()) {
      try (MemoryScope inner = MemoryScope.open()) {
        kept = inner.keep(Tensor.full(2.0, 4));
        escaped = MemoryScope.escape(Tensor.full(3.0, 4));
      }
      assertArrayEquals(new float[] {2, 2, 2, 2}, kept.toFloatArray(), "kept: alive until the outer scope closes");
      keptOut = outer.keep(Tensor.full(5.0, 2));
    }
    assertTrue(kept.storage().isReleased(), "the outer scope released what the inner one handed it");
    assertArrayEquals(new float[] {3, 3, 3, 3}, escaped.toFloatArray());
    assertArrayEquals(new float[] {5, 5}, keptOut.toFloatArray(), "kept by the outermost scope: left to the GC");
  }

  @Test
  void tensorsFromBeforeTheScopeOrOtherThreadsAreNotTouched() throws Exception {
    Tensor before = Tensor.ones(8);
    AtomicReference<Tensor> fromOtherThread = new AtomicReference<>();
    try (MemoryScope s = MemoryScope.open()) {
      Thread th = new Thread(() -> fromOtherThread.set(Tensor.full(7.0, 3)));
      th.start();
      th.join();
      before.add_(1);
    }
    assertArrayEquals(new float[] {2, 2, 2, 2, 2, 2, 2, 2}, before.toFloatArray());
    assertArrayEquals(new float[] {7, 7, 7}, fromOtherThread.get().toFloatArray());
    assertFalse(MemoryScope.active());
  }

  @Test
  void aParametersGradientOutlivesTheScopeOfItsBackwardPass() {
    Tensor p = Tensor.arange(3).to(DType.F32).requiresGrad(true);
    Tensor inside;
    try (MemoryScope s = MemoryScope.open()) {
      inside = Tensor.ones(3).requiresGrad(true);
      p.mul(inside).mul(2).sum().backward();
      p.mul(3).sum().backward(); // accumulates: a new buffer made in the scope
    }
    assertArrayEquals(new float[] {5, 5, 5}, p.grad().toFloatArray());
    assertTrue(inside.storage().isReleased(), "a tensor made in the scope goes, gradient and all");
  }

  @Test
  void scopesCloseInnermostFirstAndOnTheirOwnThread() throws Exception {
    MemoryScope outer = MemoryScope.open();
    MemoryScope inner = MemoryScope.open();
    IllegalStateException e = assertThrows(IllegalStateException.class, outer::close);
    assertTrue(e.getMessage().contains("inner scope is still open"), e.getMessage());
    AtomicReference<Throwable> fromOther = new AtomicReference<>();
    Thread th = new Thread(() -> {
      try {
        inner.close();
      } catch (Throwable t) {
        fromOther.set(t);
      }
    });
    th.start();
    th.join();
    assertTrue(fromOther.get() instanceof IllegalStateException, String.valueOf(fromOther.get()));
    inner.close();
    inner.close(); // idempotent
    outer.close();
    assertFalse(MemoryScope.active());
    assertThrows(IllegalStateException.class, () -> outer.keep(Tensor.ones(1)));
  }

  @Test
  void lengthsNotAskedForInTwoOutermostScopesLeaveThePool() {
    try (MemoryScope s = MemoryScope.open()) {
      Tensor.zeros(DType.F64, 100);
    }
    assertEquals(800, MemoryScope.pooledBytes());
    try (MemoryScope s = MemoryScope.open()) {
      Tensor.zeros(7);
    }
    assertEquals(800 + 28, MemoryScope.pooledBytes(), "one scope without it: kept (the last batch may be short)");
    try (MemoryScope s = MemoryScope.open()) {
      Tensor.zeros(7);
    }
    assertEquals(28, MemoryScope.pooledBytes(), "two without it: dropped");
  }
}
