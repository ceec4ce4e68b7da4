package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ParallelTest {
  private int saved;

  @BeforeEach
  void save() {
    saved = Parallel.threads();
  }

  @AfterEach
  void restore() {
    Parallel.setThreads(saved);
  }

  @Test
  void everyTaskRunsExactlyOnce() {
    for (int threads = 1; threads <= 4; threads++) {
      Parallel.setThreads(threads);
      assertEquals(threads, Parallel.threads());
      for (int tasks : new int[] {0, 1, 7, 1000}) {
        AtomicIntegerArray runs = new AtomicIntegerArray(Math.max(tasks, 1));
        Parallel.forEach(tasks, t -> runs.incrementAndGet(t));
        for (int t = 0; t < tasks; t++) {
          assertEquals(1, runs.get(t), "task " + t + " of " + tasks + " on " + threads + " threads");
        }
        if (tasks == 0) assertEquals(0, runs.get(0));
      }
    }
  }

  /**
   * Each thread starts at the front of its own contiguous range (the caller's is the first), so that
   * consecutive ops over the same tensor touch each chunk from the same core. A shared counter would
   * hand the worker task 1. Every task waits in its first task until both threads are in one.
   */
  @Test
  void eachThreadStartsAtTheFrontOfItsOwnRange() {
    Parallel.setThreads(2);
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
      for (int round = 0; round < 20; round++) {
        CountDownLatch both = new CountDownLatch(2);
        Map<Thread, Integer> first = new ConcurrentHashMap<>();
        Parallel.forEach(8, t -> {
          if (first.putIfAbsent(Thread.currentThread(), t) == null) {
            both.countDown();
            try {
              both.await();
            } catch (InterruptedException e) {
              throw new IllegalStateException(e);
            }
          }
        });
        assertEquals(2, first.size(), "threads that ran a task");
        Thread caller = Thread.currentThread();
        assertEquals(0, first.get(caller), "the caller's first task");
        int worker = first.entrySet().stream().filter(e -> e.getKey() != caller).findFirst().orElseThrow().getValue();
        assertEquals(4, worker, "the worker's first task");
      }
    });
  }

  @Test
  void runsInlineOnOneThreadAndInsideTasks() {
    Parallel.setThreads(1);
    assertTrue(Parallel.runsInline());
    Parallel.setThreads(2);
    assertFalse(Parallel.runsInline(), "the caller of a forEach on two threads");
    AtomicIntegerArray inline = new AtomicIntegerArray(8);
    Parallel.forEach(8, t -> inline.set(t, Parallel.runsInline() ? 1 : 0));
    for (int t = 0; t < 8; t++) assertEquals(1, inline.get(t), "task " + t);
    assertFalse(Parallel.runsInline(), "after the forEach returned");
  }

  @Test
  void negativeTaskCountRunsNothing() {
    Parallel.setThreads(3);
    AtomicInteger n = new AtomicInteger();
    Parallel.forEach(-5, t -> n.incrementAndGet());
    assertEquals(0, n.get());
  }

  @Test
  void exceptionsPropagateToTheCaller() {
    for (int threads = 1; threads <= 4; threads++) {
      Parallel.setThreads(threads);
      IllegalArgumentException boom = new IllegalArgumentException("boom");
      IllegalArgumentException got = assertThrows(IllegalArgumentException.class, () -> Parallel.forEach(100, t -> {
        if (t == 37) throw boom;
      }));
      assertSame(boom, got);
      AssertionError err = assertThrows(AssertionError.class, () -> Parallel.forEach(10, t -> {
        if (t == 9) throw new AssertionError("task 9");
      }));
      assertEquals("task 9", err.getMessage());
      // the pool still works afterwards
      AtomicInteger n = new AtomicInteger();
      Parallel.forEach(50, t -> n.incrementAndGet());
      assertEquals(50, n.get());
    }
  }

  @Test
  void nestedForEachDoesNotDeadlock() {
    Parallel.setThreads(4);
    assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
      AtomicIntegerArray runs = new AtomicIntegerArray(16 * 16);
      Parallel.forEach(16, i -> Parallel.forEach(16, j -> {
        runs.incrementAndGet(i * 16 + j);
        Parallel.forEach(2, k -> { }); // and one level deeper
      }));
      for (int k = 0; k < runs.length(); k++) assertEquals(1, runs.get(k), "cell " + k);
    });
  }

  @Test
  void concurrentCallersFromSeveralThreads() throws Exception {
    Parallel.setThreads(3);
    Thread[] callers = new Thread[4];
    AtomicInteger total = new AtomicInteger();
    for (int c = 0; c < callers.length; c++) {
      callers[c] = new Thread(() -> {
        for (int r = 0; r < 20; r++) Parallel.forEach(64, t -> total.incrementAndGet());
      });
      callers[c].start();
    }
    for (Thread t : callers) t.join(20_000);
    assertEquals(4 * 20 * 64, total.get());
  }

  @Test
  void setThreadsValidates() {
    IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> Parallel.setThreads(0));
    assertEquals("Parallel.setThreads: thread count must be >= 1, got 0", ex.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Parallel.setThreads(-2));
    assertEquals(saved, Parallel.threads());
  }

  @Test
  void chunksCoverTheRange() {
    assertEquals(0, Parallel.chunks(0, 8));
    assertEquals(1, Parallel.chunks(1, 8));
    assertEquals(1, Parallel.chunks(8, 8));
    assertEquals(2, Parallel.chunks(9, 8));
    assertEquals(125_000, Parallel.chunks(1_000_000, 8));
  }

  /**
   * mirroredInShare reverses each participant's contiguous share of forEach's tasks ([tasks p / parts, tasks (p + 1) /
   * parts), parts = min(threads, tasks)) in place: a permutation of the tasks that keeps every task in its share.
   */
  @Test
  void mirroredInShareReversesEachThreadsShareInPlace() {
    Parallel.setThreads(1);
    assertEquals(6, Parallel.mirroredInShare(0, 7));
    assertEquals(0, Parallel.mirroredInShare(6, 7));
    Parallel.setThreads(2);
    int[] want = {2, 1, 0, 6, 5, 4, 3}; // shares [0, 3) and [3, 7)
    for (int t = 0; t < 7; t++) assertEquals(want[t], Parallel.mirroredInShare(t, 7), "task " + t);
    for (int threads = 1; threads <= 4; threads++) {
      Parallel.setThreads(threads);
      for (int tasks : new int[] {1, 2, 3, 5, 16, 101}) {
        int parts = Math.min(threads, tasks);
        boolean[] seen = new boolean[tasks];
        for (int p = 0; p < parts; p++) {
          int lo = tasks * p / parts;
          int hi = tasks * (p + 1) / parts;
          for (int t = lo; t < hi; t++) {
            int m = Parallel.mirroredInShare(t, tasks);
            assertEquals(lo + hi - 1 - t, m, "task " + t + " of " + tasks + " on " + threads + " threads");
            assertFalse(seen[m]);
            seen[m] = true;
          }
        }
      }
    }
    assertThrows(IllegalArgumentException.class, () -> Parallel.mirroredInShare(7, 7));
  }
}

