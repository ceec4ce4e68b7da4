package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.tensor.DType;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** linear's weight gradient left as its factors g and x until read (LinalgOps.weightGrad). */
class DeferredWeightGradTest {
  @AfterEach
  void emptyPool() {
    MemoryScope.trimPool();
  }

  /** A leaf weight [out, in], an input [m, in], and the upstream gradient r: the loss is sum(linear(x, w) * r). */
  private record Case(Tensor w, Tensor x, Tensor r) {
    /** A case whose weight an optimizer consumes in blocks (as SGD with momentum declares when it takes it). */
    static Case of(long seed, DType dtype, int m, int in, int out) {
      Generator g = new Generator(seed);
      Tensor w = Tensor.randn(g, dtype, out, in).requiresGrad(true);
      Deferred.consumeInBlocks(w, true);
      return new Case(w, Tensor.randn(g, dtype, m, in), Tensor.randn(g, dtype, m, out));
    }

    void backward() {
      LinalgOps.linear(x, w, null).mul(r).sum().backward();
    }

    /** The eager gradient: the product the backward computed before deferral, r^T x. */
    float[] eager() {
      try (Grad ignored = Grad.off()) {
        return Views.transpose(r, 0, 1).matmul(x).toFloatArray();
      }
    }
  }

  @Test
  void aLargeWeightGradientIsDeferredAndReadsAsTheEagerProduct() {
    Case c = Case.of(1, DType.F32, 8, 1024, 1024); // factors 8 x (1024 + 1024) against 1024 x 1024: deferred
    c.backward();
    Tensor grad = c.w.grad();
    assertNotNull(grad.storage().deferred(), "not computed by the backward");
    assertArrayEquals(c.eager(), grad.toFloatArray(), "the same GEMM: the same bits");
    assertNull(grad.storage().deferred(), "computed once, on the first read");
  }

  @Test
  void smallLayersFloat64UnpermittedAndNonLeafWeightsAreComputedAtOnce() {
    Case wide = Case.of(2, DType.F32, 300, 1024, 1024); // factors 300 x 2048 against 1024 x 1024: not smaller
    wide.backward();
    assertNull(wide.w.grad().storage().deferred());
    assertArrayEquals(wide.eager(), wide.w.grad().toFloatArray());

    Case small = Case.of(2, DType.F32, 8, 48, 64); // under a million elements: the copies would cost more
    small.backward();
    assertNull(small.w.grad().storage().deferred());

    Case f64 = Case.of(3, DType.F64, 8, 1024, 1024);
    f64.backward();
    assertNull(f64.w.grad().storage().deferred(), "float64 (gradient checks) stays eager");

    Case unpermitted = Case.of(11, DType.F32, 8, 1024, 1024);
    Deferred.consumeInBlocks(unpermitted.w, false); // no optimizer takes it in blocks: it would compute it whole
    unpermitted.backward();
    assertNull(unpermitted.w.grad().storage().deferred());
    assertArrayEquals(unpermitted.eager(), unpermitted.w.grad().toFloatArray());

    Generator g = new Generator(4);
    Tensor leaf = Tensor.randn(g, 1024, 1024).requiresGrad(true);
    Deferred.consumeInBlocks(leaf, true);
    Tensor w = leaf.mul(2); // a weight computed from a parameter: its gradient flows on at once
    LinalgOps.linear(Tensor.randn(g, 8, 1024), w, null).sum().backward();
    assertNull(leaf.grad().storage().deferred());
  }

  @Test
  void theGradientKeepsTheInputAsItWasDuringTheBackward() {
    Case c = Case.of(5, DType.F32, 8, 1024, 1024);
    float[] expected = c.eager();
    c.backward();
    c.x.fill_(3f); // the input batch reused for the next step before anyone read the gradient
    c.r.fill_(-1f);
    assertArrayEquals(expected, c.w.grad().toFloatArray());
  }

  @Test
  void computeBlocksCoversTheValueOnceWithTheEagerBitsAndLeavesItDeferred() {
    // {batch, in, out}: whole tiles; edge rows (1040 % 12, 1027 % 12) and an edge column panel (1030 % 32);
    // more rows than AVX2's K block (300); more than AVX-512's (600): the whole product, handed over.
    for (int[] s : new int[][] {{8, 1024, 1040}, {32, 1030, 1027}, {300, 1300, 1300}, {600, 2400, 2400}}) {
      Case c = Case.of(6, DType.F32, s[0], s[1], s[2]);
      c.backward();
      Deferred d = c.w.grad().storage().deferred();
      assertNotNull(d);
      int n = s[1] * s[2];
      float[] seen = new float[n];
      int[] times = new int[n];
      d.computeBlocks((lo, hi, values, off) -> {
        for (int i = lo; i < hi; i++) {
          seen[i] = values[off + i - lo];
          times[i]++;
        }
      });
      float[] value = c.eager();
      for (int i = 0; i < n; i++) {
        assertEquals(1, times[i], "element " + i + " handed over once");
        assertEquals(Float.floatToIntBits(value[i]), Float.floatToIntBits(seen[i]), "batch " + s[0] + ", element " + i);
      }
      assertNotNull(c.w.grad().storage().deferred(), "computeBlocks leaves the gradient itself deferred");
      assertArrayEquals(value, c.w.grad().toFloatArray());
    }
  }

  /** A deferred value of six elements that fails the test if it is ever computed. */
  private static Storage neverComputed(boolean[] released) {
    return Storage.deferred(6, new Deferred() {
      @Override
      public void computeInto(float[] dst, int off) {
        throw new AssertionError("computed");
      }

      @Override
      public void computeBlocks(Blocks blocks) {
        throw new AssertionError("computed");
      }

      @Override
      public void release() {
        released[0] = true;
      }
    });
  }

  @Test
  void fillingAllOfADeferredBufferSkipsItsValueAndFillingPartOfItComputesIt() {
    boolean[] released = {false};
    Storage st = neverComputed(released);
    Tensor whole = new Tensor(st, new int[] {2, 3}, new int[] {3, 1}, 0);
    whole.zero_(); // as zeroGrad(false) does to a gradient
    assertNull(st.deferred());
    assertTrue(released[0], "the inputs went back");
    assertArrayEquals(new float[6], whole.toFloatArray());

    Case c = Case.of(13, DType.F32, 8, 1024, 1024);
    c.backward();
    Tensor grad = c.w.grad();
    assertNotNull(grad.storage().deferred());
    grad.narrow(0, 0, 1).fill_(7f); // one row overwritten: the rest must be the value
    float[] expected = c.eager();
    java.util.Arrays.fill(expected, 0, 1024, 7f);
    assertArrayEquals(expected, grad.toFloatArray());
  }

  @Test
  void aSecondBackwardAddsToADeferredGradient() {
    Case c = Case.of(8, DType.F32, 8, 1024, 1024);
    c.backward();
    c.backward();
    float[] once = c.eager();
    float[] twice = new float[once.length];
    for (int i = 0; i < once.length; i++) twice[i] = once[i] + once[i];
    assertArrayEquals(twice, c.w.grad().toFloatArray());
  }

  @Test
  void insideAScopeTheGradientOutlivesItAndZeroGradGivesTheFactorsBack() {
    Case c = Case.of(9, DType.F32, 8, 1024, 1024);
    try (MemoryScope step = MemoryScope.open()) {
      c.backward();
    }
    assertNotNull(c.w.grad().storage().deferred(), "a parameter's gradient survives the step's scope, unread");
    assertArrayEquals(c.eager(), c.w.grad().toFloatArray());

    Case d = Case.of(10, DType.F32, 8, 1024, 1024);
    try (MemoryScope step = MemoryScope.open()) {
      d.backward();
    }
    MemoryScope.trimPool();
    Tensor grad = d.w.grad();
    try (MemoryScope next = MemoryScope.open()) {
      MemoryScope.recycle(grad); // what zeroGrad does with a dropped gradient
      assertEquals((8 * 1024 + 8 * 1024) * 4, MemoryScope.pooledBytes(), "the copies of g and x are back in the pool");
    }
    assertTrue(grad.storage().isReleased());
    assertThrows(IllegalStateException.class, grad::toFloatArray);
  }
}
