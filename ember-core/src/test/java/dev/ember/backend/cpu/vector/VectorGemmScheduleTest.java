package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class VectorGemmScheduleTest {
  @Test
  void eachThreadsShareHoldsItsMultipliesThenItsPacks() {
    // tasks 0-3 multiply row chunks, 4-7 pack parts of the next B block
    assertArrayEquals(new int[] {0, 1, 4, 5, 2, 3, 6, 7}, VectorGemm.interleave(4, 4, 2));
    assertArrayEquals(new int[] {0, 1, 4, 2, 3, 5}, VectorGemm.interleave(4, 2, 2));
    assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5}, VectorGemm.interleave(4, 2, 1));
  }

  @Test
  void bPartsOnOneThreadPacksEveryPartOnceFromItsOwnShareOn() {
    VectorGemm.BParts parts = new VectorGemm.BParts(8);
    java.util.List<Integer> packed = new java.util.ArrayList<>();
    // the second K block's four parts (base 4), this task's share starting at part 2
    parts.ready(4, 4, 2, packed::add);
    assertEquals(java.util.List.of(2, 3, 0, 1), packed);
    parts.ready(4, 4, 0, packed::add);
    assertEquals(4, packed.size(), "packed parts are not packed again");
    parts.ready(0, 4, 3, packed::add);
    assertEquals(java.util.List.of(2, 3, 0, 1, 3, 0, 1, 2), packed, "the first block's parts are its own");
  }

  @Test
  void bPartsUnderContentionPackEachPartOnceAndReturnOnlyWhenAllArePacked() throws Exception {
    int count = 16;
    for (int trial = 0; trial < 20; trial++) {
      VectorGemm.BParts parts = new VectorGemm.BParts(count);
      java.util.concurrent.atomic.AtomicIntegerArray times = new java.util.concurrent.atomic.AtomicIntegerArray(count);
      java.util.concurrent.atomic.AtomicBoolean early = new java.util.concurrent.atomic.AtomicBoolean();
      java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
      Thread[] threads = new Thread[4];
      for (int t = 0; t < threads.length; t++) {
        int first = t * count / threads.length;
        threads[t] = new Thread(() -> {
          try {
            go.await();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
          parts.ready(0, count, first, g -> {
            times.incrementAndGet(g);
            for (long until = System.nanoTime() + 20_000; System.nanoTime() < until; ) Thread.onSpinWait();
          });
          for (int g = 0; g < count; g++) if (times.get(g) == 0) early.set(true);
        });
        threads[t].start();
      }
      go.countDown();
      for (Thread t : threads) t.join();
      for (int g = 0; g < count; g++) assertEquals(1, times.get(g), "part " + g + ", trial " + trial);
      assertEquals(false, early.get(), "a task returned before every part was packed");
    }
  }

  @Test
  void aPartThatFailsToPackFailsTheTasksWaitingForIt() throws Exception {
    VectorGemm.BParts parts = new VectorGemm.BParts(2);
    java.util.concurrent.CountDownLatch claimed = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch fail = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicReference<Throwable> packer = new java.util.concurrent.atomic.AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        parts.ready(0, 2, 1, g -> {
          if (g != 1) return;
          claimed.countDown();
          try {
            fail.await();
          } catch (InterruptedException e) {
            throw new IllegalStateException(e);
          }
          throw new IllegalArgumentException("boom");
        });
      } catch (Throwable e) {
        packer.set(e);
      }
    });
    t.start();
    claimed.await();
    java.util.concurrent.atomic.AtomicReference<Throwable> waiter = new java.util.concurrent.atomic.AtomicReference<>();
    Thread w = new Thread(() -> {
      try {
        parts.ready(0, 2, 0, g -> {});
      } catch (Throwable e) {
        waiter.set(e);
      }
    });
    w.start();
    Thread.sleep(20);
    fail.countDown();
    t.join();
    w.join();
    assertEquals(IllegalArgumentException.class, packer.get().getClass(), "the packer's own failure");
    assertEquals(IllegalStateException.class, waiter.get().getClass());
    org.junit.jupiter.api.Assertions.assertTrue(waiter.get().getMessage().contains("part 1"), waiter.get().getMessage());
  }

  @Test
  void theOrderIsAPermutationOfTheTasks() {
    for (int tm = 1; tm <= 9; tm++) {
      for (int packs = 0; packs <= tm; packs++) {
        for (int threads = 1; threads <= 5; threads++) {
          int[] order = VectorGemm.interleave(tm, packs, threads).clone();
          Arrays.sort(order);
          for (int t = 0; t < order.length; t++) {
            assertEquals(t, order[t], "tm " + tm + ", packs " + packs + ", threads " + threads);
          }
        }
      }
    }
  }

  @Test
  void aWeightGradientSplitsItsRowsAsTheOptimizerSplitsTheWeight() {
    org.junit.jupiter.api.Assumptions.assumeTrue(VectorGemm.MR == 12, "the 12-row kernel's thresholds");
    // dW = g^T x of the MNIST MLP's 784 -> 128 layer at batch 32: rows, as the update's halves
    assertEquals(true, VectorGemm.splitsRows(true, 128, 784, 128L * 784 * 32));
    // the same shape as a plain product, and a weight gradient too short to split by rows: columns
    assertEquals(false, VectorGemm.splitsRows(false, 128, 784, 128L * 784 * 32));
    assertEquals(false, VectorGemm.splitsRows(true, 64, 784, 64L * 784 * 32));
    // products large enough to share one packed B keep the shape rule
    assertEquals(false, VectorGemm.splitsRows(true, 512, 1024, 512L * 1024 * 128));
    assertEquals(true, VectorGemm.splitsRows(false, 784, 128, 784L * 128 * 32));
  }

  @Test
  void theBBlockIsAsWideAsTheL2HoldsFromTwoMebibytes() {
    org.junit.jupiter.api.Assumptions.assumeTrue(VectorGemm.MR == 12, "the 12-row kernel's blocking");
    assertEquals(4096, VectorGemm.nc(0), "unknown L2");
    assertEquals(4096, VectorGemm.nc(1L << 20), "Zen 4's 1 MiB");
    assertEquals(1024, VectorGemm.nc(2L << 20), "the Xeon's 2 MiB: 512 x 1024 floats");
    assertEquals(2048, VectorGemm.nc(4L << 20));
    assertEquals(4096, VectorGemm.nc(64L << 20), "never wider than before");
    assertEquals(1024 + 512, VectorGemm.nc(3L << 20), "whole panels");
    assertEquals(VectorGemm.nc(VectorGemm.l2Bytes()), VectorGemm.NC);
  }

  @Test
  void sysfsCacheSizesParse() {
    assertEquals(2L << 20, VectorGemm.cacheSize("2048K\n"));
    assertEquals(1L << 20, VectorGemm.cacheSize("1M"));
    assertEquals(512, VectorGemm.cacheSize("512"));
    assertEquals(0, VectorGemm.cacheSize("lots"));
    assertEquals(0, VectorGemm.cacheSize(""));
  }

  @Test
  void sgemmRowsBlocksStayInsideEachThreadsRowsAndKeepSgemmsBits() {
    // {m, k, n} with op(A) = A^T (a weight gradient g^T x): the MNIST MLP's 128 x 784 at batch 32 (small: each
    // thread packs B), 130 rows (chunks of 68 and 62), one too large to pack B twice (B shared), one too small to
    // split
    int[][] shapes = {{128, 32, 784}, {130, 32, 2048}, {301, 64, 1030}, {10, 32, 128}};
    int old = dev.ember.backend.cpu.Parallel.threads();
    try {
      for (int[] s : shapes) {
        int m = s[0];
        int k = s[1];
        int n = s[2];
        java.util.Random r = new java.util.Random(m * 31L + n);
        float[] a = new float[k * m];
        float[] b = new float[k * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
        for (int i = 0; i < b.length; i++) b[i] = (float) r.nextGaussian();
        float[] whole = new float[m * n];
        VectorGemm.sgemm(true, false, m, n, k, 1f, a, 0, m, b, 0, n, 0f, whole, 0, n);
        for (int threads = 1; threads <= 2; threads++) {
          dev.ember.backend.cpu.Parallel.setThreads(threads);
          float[] seen = new float[m * n];
          int[] times = new int[m];
          java.util.List<int[]> blocks = java.util.Collections.synchronizedList(new java.util.ArrayList<>());
          String what = m + "x" + n + "x" + k + " on " + threads + " thread(s)";
          assertEquals(true, VectorGemm.sgemmRows(true, false, m, n, k, a, 0, m, b, 0, n, (r0, r1, c, off) -> {
            blocks.add(new int[] {r0, r1});
            for (int i = r0; i < r1; i++) {
              times[i]++;
              System.arraycopy(c, off + (i - r0) * n, seen, i * n, n);
            }
          }), what);
          for (int i = 0; i < m; i++) assertEquals(1, times[i], what + ": row " + i);
          assertArrayEquals(whole, seen, what + ": sgemm's bits");
          boolean split = threads == 2 && (long) m * n * k >= 1L << 18;
          int half = split ? (m / 2 + 3) / 4 * 4 : m; // sgemm's row chunk: half the rows, a multiple of 4
          for (int[] blk : blocks) {
            assertEquals(blk[0] / half, (blk[1] - 1) / half, what + ": block " + Arrays.toString(blk)
                + " crosses the threads' chunks of " + half + " rows");
          }
        }
      }
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(old);
    }
  }

  @Test
  void aLongWeightGradientPacksAllItsKBlocksOnceAndKeepsOneThreadsBits() {
    org.junit.jupiter.api.Assumptions.assumeTrue(VectorGemm.MR == 12, "the 12-row kernel's blocking");
    // {m, k, n}, op(A) = A^T: three K blocks of 367 (the transformer's 256 x 2048 x 256 has four), C rows split
    // into chunks that are not whole tiles, an edge panel of B; the second is a C block too large for allBlocks
    int[][] shapes = {{161, 1100, 130}, {300, 1100, 290}};
    int old = dev.ember.backend.cpu.Parallel.threads();
    try {
      for (int[] s : shapes) {
        int m = s[0];
        int k = s[1];
        int n = s[2];
        assertEquals(m * n <= 1 << 16, VectorGemm.weightGradAllBlocks(true, m, k, n), m + "x" + k + "x" + n);
        assertEquals(false, VectorGemm.weightGradAllBlocks(false, m, k, n), "op(A) = A: never");
        java.util.Random r = new java.util.Random(m * 7L + k);
        float[] a = new float[k * m];
        float[] b = new float[k * n];
        for (int i = 0; i < a.length; i++) a[i] = (float) r.nextGaussian();
        for (int i = 0; i < b.length; i++) b[i] = (float) r.nextGaussian();
        float[] c1 = null;
        for (int threads = 1; threads <= 3; threads++) {
          dev.ember.backend.cpu.Parallel.setThreads(threads);
          float[] c = new float[m * n];
          java.util.Arrays.fill(c, 0.5f);
          for (int rep = 0; rep < 2; rep++) { // the second call reuses the packed blocks' buffers
            VectorGemm.sgemm(true, false, m, n, k, 1.5f, a, 0, m, b, 0, n, 0.25f, c, 0, n);
          }
          if (c1 == null) {
            c1 = c;
            for (int i = 0; i < m; i += 37) {
              for (int j = 0; j < n; j += 29) {
                double want = 0.5;
                for (int rep = 0; rep < 2; rep++) {
                  double sum = 0;
                  for (int p = 0; p < k; p++) sum += (double) a[p * m + i] * b[p * n + j];
                  want = 1.5 * sum + 0.25 * want;
                }
                assertEquals(want, c[i * n + j], 1e-3 * Math.sqrt(k), "C[" + i + ", " + j + "]");
              }
            }
          } else {
            assertArrayEquals(c1, c, m + "x" + k + "x" + n + ": " + threads + " threads against one");
          }
        }
      }
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(old);
    }
  }
}
