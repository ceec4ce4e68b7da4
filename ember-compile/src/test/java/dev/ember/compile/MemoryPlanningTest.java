package dev.ember.compile;

import static dev.ember.compile.CompilerTest.assertBitwise;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

class MemoryPlanningTest {
  private static final com.sun.management.ThreadMXBean THREADS =
      (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

  /** Bytes this thread allocates per call of c on x, after warm-up (the least of a few rounds: JIT noise). */
  /**
   * The fewest bytes one call allocated on this thread, over rounds of 50 calls after a warm-up, stopping early once
   * a round is at or under {@code enough}. Until C2 has compiled the Vector API kernels they box their vectors on
   * the heap (megabytes a call): on a loaded host that takes many rounds, hence up to 40 for a planned module.
   */
  private static long bytesPerCall(Module c, Tensor x, long enough) {
    for (int i = 0; i < 600; i++) c.call(x); // past the first calls' one-time allocations (JIT, kernels' workspaces)
    long best = Long.MAX_VALUE;
    for (int round = 0; round < (enough > 0 ? 40 : 5) && best > enough; round++) {
      long t = Thread.currentThread().threadId();
      long before = THREADS.getThreadAllocatedBytes(t);
      for (int i = 0; i < 50; i++) c.call(x);
      best = Math.min(best, (THREADS.getThreadAllocatedBytes(t) - before) / 50);
    }
    return best;
  }

  /** Per-call allocation of c at batch 1 and 64 (outputs checked against eager first): {b1, b64}. */
  private static long[] measure(Module eager, CompiledModule c, long enough, int... shape) {
    long[] bytes = new long[2];
    int i = 0;
    for (int batch : new int[] {1, 64}) {
      int[] s = shape.clone();
      s[0] = batch;
      Tensor x = Tensor.randn(new Generator(batch), s);
      Tensor want = eager.call(x);
      for (int k = 0; k < 3; k++) assertBitwise(want, c.call(x)); // trace, record, served
      bytes[i++] = bytesPerCall(c, x, enough);
    }
    return bytes;
  }

  @Test
  void aPlannedInferenceCallAllocatesNoArrays() {
    Generator.manualSeed(31);
    Module mlp = Models.mlp(784, 128, 10).eval();
    Module lenet = Models.lenet5(10).eval();
    try (Grad off = Grad.off()) {
      for (Module m : new Module[] {mlp, lenet}) {
        int[] shape = m == mlp ? new int[] {1, 784} : new int[] {1, 1, 28, 28};
        CompiledModule planned = Compiler.compile(m).reuseOutput(true);
        long enough = m == mlp ? 2_048 : 40_000; // see the bounds below
        long[] reused = measure(m, planned, enough, shape);
        assertTrue(planned.explain().contains("memory: arena"), planned.explain());
        String what = m.name() + ": bytes per call at batch 1 and 64 " + reused[0] + ", " + reused[1] + "\n"
            + planned.explain();
        // at batch 64 the MLP's hidden layer alone is 32 KiB, LeNet's first conv 150 KiB: no tensor is allocated.
        // LeNet's conv kernels allocate about 30 KB a call of their own (packed weights), whatever the batch.
        assertTrue(reused[1] < (m == mlp ? 16_384 : 48_000), what);
        assertTrue(reused[1] - reused[0] < 2_048, what); // batch 64 allocates no more than batch 1
        long[] unplanned = measure(m, Compiler.compile(m).planMemory(false), 0, shape);
        assertTrue(unplanned[1] > reused[1] + 30_000, what + "; unplanned: " + unplanned[0] + ", " + unplanned[1]);
        long[] kept = measure(m, Compiler.compile(m), enough + 2_560, shape); // the output allocated for the caller: 64 x 10 floats
        assertTrue(kept[1] < reused[1] + 2_560 + 2_048, what + "; output kept: " + kept[0] + ", " + kept[1]);
      }
    }
  }

  @Test
  void theResultOutlivesTheNextCallUnlessItsBufferIsReused() {
    Generator.manualSeed(32);
    Module mlp = Models.mlp(20, 16, 4).eval();
    Tensor a = Tensor.randn(3, 20);
    Tensor b = Tensor.randn(3, 20);
    try (Grad off = Grad.off()) {
      CompiledModule c = Compiler.compile(mlp);
      for (int i = 0; i < 3; i++) c.call(a);
      Tensor ya = c.call(a);
      Tensor yb = c.call(b);
      assertBitwise(mlp.call(a), ya);
      assertBitwise(mlp.call(b), yb);

      CompiledModule r = Compiler.compile(mlp).reuseOutput(true);
      for (int i = 0; i < 3; i++) r.call(a);
      Tensor ra = r.call(a);
      assertBitwise(mlp.call(a), ra);
      Tensor kept = ra.clone();
      Tensor rb = r.call(b);
      assertBitwise(mlp.call(b), rb);
      IllegalStateException e = assertThrows(IllegalStateException.class, ra::toFloatArray);
      assertTrue(e.getMessage().contains("clone()"), e.getMessage());
      assertBitwise(mlp.call(a), kept);
      assertTrue(r.explain().contains("memory: arena"), r.explain());
      assertTrue(r.explain().contains("(the output's buffer reused)"), r.explain());
    }
  }

  @Test
  void gradOnCallsAndTransformersStayBitwise() {
    Generator gen = new Generator(33);
    Module layer = new TransformerEncoderLayer(16, 4, 32, 0.1, "gelu", 1e-5, true, false, true, gen).eval();
    CompiledModule c = Compiler.compile(layer).dynamicBatch(0);
    for (int batch : new int[] {2, 3, 2, 3, 5, 2}) {
      Tensor x = Tensor.randn(gen, batch, 5, 16);
      try (Grad off = Grad.off()) {
        assertBitwise(layer.call(x), c.call(x));
      }
      assertBitwise(layer.call(x), c.call(x)); // grad on: the tape, no plan
    }
    String explain = c.explain();
    assertTrue(explain.matches("(?s).*memory: arena [0-9.]+ KiB in \\d+ arrays for \\d+ buffers of [0-9.]+ KiB.*"),
        explain);
  }
}
