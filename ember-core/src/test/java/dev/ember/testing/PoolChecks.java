package dev.ember.testing;

import dev.ember.tensor.DType;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.function.Supplier;

/** Checks for ops that take uninitialized buffers (pooled arrays that are not zero-filled). */
public final class PoolChecks {
  private PoolChecks() {}

  /**
   * Runs {@code run} outside any scope, then fills this thread's buffer pool with NaN arrays
   * ({@code copies} of each output's length and of each of {@code extraLengths}, for intermediates) and
   * runs it again inside a {@link MemoryScope}, where uninitialized buffers come from those arrays: an
   * element an op leaves unwritten shows up as NaN. Fails unless every output of the scoped run is
   * bitwise the unscoped one. The pool is per thread and outlives tests, so it is emptied before the
   * seeding (only the NaN arrays are in it) and after (nothing is left for the next test).
   */
  public static void assertEveryElementWritten(Supplier<float[][]> run, int copies, int... extraLengths) {
    float[][] plain = run.get();
    MemoryScope.trimPool();
    try (MemoryScope s = MemoryScope.open()) { // one scope: the pool keeps what the last two outermost scopes used
      for (float[] out : plain) {
        for (int i = 0; i < copies; i++) Tensor.full(Float.NaN, DType.F32, out.length);
      }
      for (int len : extraLengths) {
        for (int i = 0; i < copies; i++) Tensor.full(Float.NaN, DType.F32, len);
      }
    }
    float[][] scoped;
    try (MemoryScope s = MemoryScope.open()) {
      scoped = run.get();
    } finally {
      MemoryScope.trimPool();
    }
    for (int o = 0; o < plain.length; o++) {
      if (plain[o].length != scoped[o].length) {
        throw new AssertionError("output " + o + ": length " + scoped[o].length + " scoped, " + plain[o].length + " unscoped");
      }
      for (int i = 0; i < plain[o].length; i++) {
        if (Float.floatToIntBits(plain[o][i]) != Float.floatToIntBits(scoped[o][i])) {
          throw new AssertionError("output " + o + ", element " + i + ": " + scoped[o][i] + " scoped, " + plain[o][i]
              + " unscoped (an element left unwritten reads the pool's NaN)");
        }
      }
    }
  }
}
