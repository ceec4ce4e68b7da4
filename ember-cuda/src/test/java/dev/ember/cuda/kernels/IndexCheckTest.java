package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend.IndexRangeError;
import dev.ember.cuda.testing.DeviceCompiler;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The deferred index check without a GPU: the bookkeeping of pending checks (each failure raised once, the first
 * queued first, later ones suppressed into it, all forgotten after a read-back) and index_check.cu compiled for
 * sm_90 with every kernel the Java side launches (skipped without NVRTC or nvcc), and its kernels built with g++
 * over src/test/cuda-emu (index_check.cpp: first offender of strided int64/int32 views against a plain loop;
 * skipped without a C++20 g++).
 */
class IndexCheckTest {
  private static final long NONE = PendingIndexChecks.NONE;

  /** An error factory that records what it was asked for. */
  private static IndexRangeError named(String op, List<String> built) {
    return (position, value) -> {
      built.add(op + "@" + position + "=" + value);
      return new IllegalArgumentException(op + ": index " + value + " at " + position);
    };
  }

  @Test
  void theFirstFailedCheckIsRaisedOnceWithLaterOnesSuppressed() {
    PendingIndexChecks p = new PendingIndexChecks(8);
    List<String> built = new ArrayList<>();
    assertEquals(0, p.add(named("gather", built)));
    assertEquals(1, p.add(named("cross_entropy", built)));
    assertEquals(2, p.add(named("embedding", built)));
    assertEquals(3, p.size());
    RuntimeException e = p.drain(new long[] {NONE, NONE, 5, 12, 0, -3});
    assertEquals("cross_entropy: index 12 at 5", e.getMessage());
    assertEquals(1, e.getSuppressed().length);
    assertEquals("embedding: index -3 at 0", e.getSuppressed()[0].getMessage());
    assertEquals(List.of("cross_entropy@5=12", "embedding@0=-3"), built);
    assertEquals(0, p.size(), "cleared after the read-back");
    assertNull(p.drain(new long[0]), "raised once: nothing left to raise");
  }

  @Test
  void passingChecksRaiseNothingAndFreeTheirSlots() {
    PendingIndexChecks p = new PendingIndexChecks(2);
    List<String> built = new ArrayList<>();
    p.add(named("a", built));
    p.add(named("b", built));
    assertTrue(p.full());
    assertThrows(IllegalStateException.class, () -> p.add(named("c", built)));
    assertNull(p.drain(new long[] {NONE, 0, NONE, 0}));
    assertTrue(built.isEmpty());
    assertEquals(0, p.add(named("c", built)), "slots are reused from the first");
    RuntimeException e = p.drain(new long[] {7, 100});
    assertEquals("c: index 100 at 7", e.getMessage());
    assertEquals(0, e.getSuppressed().length);
  }

  @Test
  void aFactoryThatReachesASynchronizingPointFindsNothingPending() {
    PendingIndexChecks p = new PendingIndexChecks(4);
    int[] seen = {-1};
    RuntimeException inner = new IllegalArgumentException("x");
    p.add((position, value) -> {
      seen[0] = p.size(); // as a factory whose message reads device data (a copy, which drains again)
      return inner;
    });
    assertSame(inner, p.drain(new long[] {0, 1}));
    assertEquals(0, seen[0]);
  }

  @Test
  void tooFewWordsIsAnError() {
    PendingIndexChecks p = new PendingIndexChecks(4);
    p.add(named("a", new ArrayList<>()));
    assertThrows(IllegalArgumentException.class, () -> p.drain(new long[] {NONE}));
  }

  @Test
  void sourceCompilesWithEveryKernel() {
    DeviceCompiler.assume();
    DeviceCompiler.assertKernels("ember_index_check", CudaIndexChecks.SOURCE, CudaIndexChecks.kernelNames());
  }

  @TempDir Path tmp;

  @Test
  void kernelsFindTheFirstOffenderUnderTheEmulator() throws Exception {
    CudaEmulator.buildAndRun(tmp, "index_check.cpp", Map.of());
  }
}
