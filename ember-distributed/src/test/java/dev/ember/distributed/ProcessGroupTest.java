package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Collectives between ranks on threads of this JVM, over loopback, against the single-process reference. */
class ProcessGroupTest {
  /** Sizes around the chain/ring switch (16384 floats, 8192 doubles), the world sizes and a segment (262144 floats). */
  static final int[] SIZES = {0, 1, 2, 3, 7, 1000, 8191, 8193, 16383, 16384, 16385, 65537, 262145, 1_000_003};

  interface GroupTask<R> {
    R run(ProcessGroup g) throws Exception;
  }

  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  /** Runs {@code task} on {@code world} ranks (one thread each) and returns each rank's result or failure. */
  static List<Object> inThreads(int world, Duration timeout, GroupTask<?> task) throws Exception {
    int port = freePort();
    ExecutorService pool = Executors.newFixedThreadPool(world);
    try {
      List<Future<Object>> futures = new ArrayList<>();
      for (int r = 0; r < world; r++) {
        int rank = r;
        futures.add(pool.submit(() -> {
          try (ProcessGroup g = ProcessGroup.connect(rank, world, new InetSocketAddress("127.0.0.1", port), timeout)) {
            return task.run(g);
          } catch (Exception e) {
            return e;
          }
        }));
      }
      List<Object> out = new ArrayList<>();
      for (Future<Object> f : futures) out.add(f.get(120, TimeUnit.SECONDS));
      return out;
    } finally {
      pool.shutdownNow();
    }
  }

  @ParameterizedTest
  @ValueSource(ints = {1, 2, 3, 4})
  void collectivesMatchTheReferenceBitwiseForManySizes(int world) throws Exception {
    List<Object> results = inThreads(world, Duration.ofSeconds(60), g -> CollectiveScript.run(g, SIZES));
    for (int r = 0; r < world; r++) assertNull(results.get(r), "rank " + r + ": " + results.get(r));
  }

  @Test
  void worldSizeOneNeedsNoSockets() {
    try (ProcessGroup g = ProcessGroup.fromEnv(Map.of("RANK", "0", "WORLD_SIZE", "1"))) {
      assertEquals(0, g.rank());
      assertEquals(1, g.worldSize());
      float[] x = {1.5f, -2f};
      g.allReduce(x, AllReduceOp.MEAN);
      assertArrayEquals(new float[] {1.5f, -2f}, x);
      assertArrayEquals(new float[] {3f}, g.allGather(new float[] {3f}));
      g.broadcast(x, 0);
      g.barrier();
      assertEquals(ProcessGroup.DEFAULT_TIMEOUT, g.timeout());
    }
  }

  @Test
  void fromEnvRendezvousesAsTorchrun() throws Exception {
    int port = freePort();
    ExecutorService pool = Executors.newFixedThreadPool(3);
    try {
      List<Future<float[]>> fs = new ArrayList<>();
      for (int r = 0; r < 3; r++) {
        Map<String, String> env = Map.of("MASTER_ADDR", "localhost", "MASTER_PORT", "" + port, "RANK", "" + r,
            "WORLD_SIZE", "3", ProcessGroup.TIMEOUT_ENV, "20");
        fs.add(pool.submit(() -> {
          try (ProcessGroup g = ProcessGroup.fromEnv(env)) {
            assertEquals(Duration.ofSeconds(20), g.timeout());
            return g.allGather(new float[] {g.rank(), 10 * g.rank()});
          }
        }));
      }
      for (Future<float[]> f : fs) assertArrayEquals(new float[] {0, 0, 1, 10, 2, 20}, f.get(60, TimeUnit.SECONDS));
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void fromEnvNamesAMissingOrMalformedVariable() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> ProcessGroup.fromEnv(Map.of("RANK", "0", "WORLD_SIZE", "2", "MASTER_PORT", "1234")));
    assertTrue(e.getMessage().contains("MASTER_ADDR is not set"), e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> ProcessGroup.fromEnv(Map.of("RANK", "x", "WORLD_SIZE", "2")));
    assertTrue(e.getMessage().contains("RANK must be an integer, got 'x'"), e.getMessage());
    IllegalArgumentException a = assertThrows(IllegalArgumentException.class,
        () -> ProcessGroup.fromEnv(Map.of("RANK", "2", "WORLD_SIZE", "2", "MASTER_ADDR", "localhost", "MASTER_PORT", "1")));
    assertTrue(a.getMessage().contains("rank 2 out of range for world size 2"), a.getMessage());
  }

  @Test
  void tensorsAreReducedBroadcastAndGatheredInPlace() throws Exception {
    List<Object> results = inThreads(2, Duration.ofSeconds(30), g -> {
      float r = g.rank();
      Tensor t = Tensor.of(new float[] {r, r + 1, r + 2, r + 3, r + 4, r + 5}, 2, 3);
      assertSame(t, g.allReduce(t, AllReduceOp.SUM));
      assertArrayEquals(new float[] {1, 3, 5, 7, 9, 11}, t.toFloatArray());
      assertArrayEquals(new int[] {2, 3}, t.shape());
      Tensor d = Tensor.of(new double[] {g.rank() * 2.0, 1}, 2);
      g.allReduce(d, AllReduceOp.MEAN);
      assertEquals(DType.F64, d.dtype());
      assertArrayEquals(new double[] {1, 1}, d.toDoubleArray());
      Tensor b = Tensor.of(new float[] {r, r}, 2);
      g.broadcast(b, 1);
      assertArrayEquals(new float[] {1, 1}, b.toFloatArray());
      Tensor scalar = Tensor.scalar(r + 1);
      g.broadcast(scalar, 1);
      g.allReduce(scalar, AllReduceOp.SUM);
      assertArrayEquals(new int[0], scalar.shape());
      assertEquals(4.0, scalar.item());
      Tensor all = g.allGather(Tensor.of(new float[] {r, -r}, 1, 2));
      assertArrayEquals(new int[] {2, 1, 2}, all.shape());
      assertArrayEquals(new float[] {0, -0f, 1, -1}, all.toFloatArray());
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> g.allReduce(Tensor.of(new int[] {1}, 1), AllReduceOp.SUM));
      assertTrue(e.getMessage().startsWith("allreduce: only float32 and float64 tensors are supported, got I32"), e.getMessage());
      return null;
    });
    assertNull(results.get(0), String.valueOf(results.get(0)));
    assertNull(results.get(1), String.valueOf(results.get(1)));
  }

  @Test
  void aRankThatDoesNotCallTheCollectiveTimesOutNamingIt() throws Exception {
    List<Object> results = inThreads(3, Duration.ofMillis(800), g -> {
      if (g.rank() == 2) {
        Thread.sleep(6000); // skips the allreduce; closes after the others have given up
        return null;
      }
      long t0 = System.nanoTime();
      CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
          () -> g.allReduce(new float[100], AllReduceOp.SUM));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertTrue(ms < 4000, "took " + ms + " ms"); // never the 6 s until rank 2 leaves
      assertEquals("allreduce", e.operation());
      assertEquals(g.rank(), e.rank());
      IllegalStateException again = assertThrows(IllegalStateException.class, g::barrier);
      assertSame(e, again.getCause());
      Thread.sleep(2500); // stay until every rank has timed out, so no rank sees this one close instead
      return e;
    });
    // rank 0 waits for rank 2 (its previous rank in the chain's second half); rank 1 waits for rank 0 or 2
    CollectiveTimeoutException e0 = assertInstanceOf(CollectiveTimeoutException.class, results.get(0));
    assertTrue(e0.getMessage().contains("made no progress for 800 ms waiting for rank"), e0.getMessage());
    assertInstanceOf(CollectiveTimeoutException.class, results.get(1));
  }

  @Test
  void ranksCallingDifferentCollectivesOrSizesGetAMismatch() throws Exception {
    List<Object> results = inThreads(2, Duration.ofSeconds(10), g -> {
      try {
        if (g.rank() == 0) g.allReduce(new float[10], AllReduceOp.SUM);
        else g.allReduce(new float[11], AllReduceOp.SUM);
        return null;
      } catch (CollectiveMismatchException e) {
        return e;
      }
    });
    CollectiveMismatchException e = assertInstanceOf(CollectiveMismatchException.class, results.get(1));
    assertEquals(0, e.peerRank());
    assertTrue(e.getMessage().contains("rank 1 expected allreduce (call #1, 44 payload bytes) from rank 0 but got"
        + " allreduce (call #1, 40 payload bytes)"), e.getMessage());
    results = inThreads(2, Duration.ofSeconds(10), g -> {
      try {
        if (g.rank() == 0) g.broadcast(new float[4], 0);
        else g.allReduce(new float[4], AllReduceOp.SUM);
        return null;
      } catch (CollectiveMismatchException ex) {
        return ex;
      }
    });
    e = assertInstanceOf(CollectiveMismatchException.class, results.get(1));
    assertTrue(e.getMessage().contains("but got broadcast (call #1, 16 payload bytes)"), e.getMessage());
  }

  @Test
  void aRankThatLeavesMidCollectiveIsNamedByItsNeighbour() throws Exception {
    List<Object> results = inThreads(3, Duration.ofSeconds(20), g -> {
      if (g.rank() == 2) {
        Thread.sleep(300);
        return null; // closes its group while the others wait in an allreduce
      }
      long t0 = System.nanoTime();
      PeerLostException e = assertThrows(PeerLostException.class, () -> g.allReduce(new float[1 << 20], AllReduceOp.SUM));
      assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "a lost peer must not wait for the 20 s timeout");
      return e;
    });
    PeerLostException e0 = assertInstanceOf(PeerLostException.class, results.get(0));
    assertEquals(2, e0.peerRank());
    assertTrue(e0.getMessage().contains("rank 2 closed its connection"), e0.getMessage());
    assertInstanceOf(PeerLostException.class, results.get(1));
  }

  @Test
  void aWorldSizeDisagreementFailsTheRendezvous() throws Exception {
    int port = freePort();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      InetSocketAddress master = new InetSocketAddress("127.0.0.1", port);
      Future<ProcessGroup> r0 = pool.submit(() -> ProcessGroup.connect(0, 2, master, Duration.ofSeconds(10)));
      Future<ProcessGroup> r1 = pool.submit(() -> ProcessGroup.connect(1, 3, master, Duration.ofSeconds(10)));
      ExecutionException e = assertThrows(ExecutionException.class, () -> r0.get(30, TimeUnit.SECONDS));
      CollectiveMismatchException m = assertInstanceOf(CollectiveMismatchException.class, e.getCause());
      assertEquals("rendezvous: rank 1 says the world size is 3 but rank 0 says 2", m.getMessage());
      e = assertThrows(ExecutionException.class, () -> r1.get(30, TimeUnit.SECONDS));
      assertEquals(m.getMessage(), assertInstanceOf(CollectiveMismatchException.class, e.getCause()).getMessage());
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aMissingRankTimesOutTheRendezvous() {
    CollectiveTimeoutException e = assertThrows(CollectiveTimeoutException.class,
        () -> ProcessGroup.connect(0, 3, new InetSocketAddress("127.0.0.1", freePort()), Duration.ofMillis(300)));
    assertTrue(e.getMessage().contains("waiting for ranks [1, 2] to register"), e.getMessage());
    e = assertThrows(CollectiveTimeoutException.class,
        () -> ProcessGroup.connect(1, 2, new InetSocketAddress("127.0.0.1", freePort()), Duration.ofMillis(300)));
    assertTrue(e.getMessage().contains("hint: is rank 0 running"), e.getMessage());
  }

  @Test
  void asyncAllReducesRunInCallOrderAndMatchTheReference() throws Exception {
    int[] sizes = {5, 20_000, 3, 100_001, 16_384};
    List<Object> results = inThreads(3, Duration.ofSeconds(60), g -> {
      List<float[]> bufs = new ArrayList<>();
      List<CompletableFuture<Void>> futures = new ArrayList<>();
      for (int k = 0; k < sizes.length; k++) {
        float[] x = CollectiveScript.floats(20 + k, g.rank(), sizes[k]);
        bufs.add(x);
        futures.add(g.allReduceAsync(x, k % 2 == 0 ? AllReduceOp.SUM : AllReduceOp.MEAN));
      }
      double[] d = CollectiveScript.doubles(30, g.rank(), 9000);
      CompletableFuture<Void> fd = g.allReduceAsync(d, AllReduceOp.SUM);
      float[] sync = CollectiveScript.floats(31, g.rank(), 40_000); // queued behind the asynchronous ones
      g.allReduce(sync, AllReduceOp.SUM);
      assertArrayEquals(CollectiveScript.reference(31, 40_000, 3, false), sync);
      for (int k = 0; k < sizes.length; k++) {
        futures.get(k).get(30, TimeUnit.SECONDS);
        assertArrayEquals(CollectiveScript.reference(20 + k, sizes[k], 3, k % 2 == 1), bufs.get(k), "buffer " + k);
      }
      fd.get(30, TimeUnit.SECONDS);
      assertArrayEquals(CollectiveScript.referenceDouble(30, 9000, 3, false), d);
      g.barrier();
      return null;
    });
    for (int r = 0; r < 3; r++) assertNull(results.get(r), "rank " + r + ": " + results.get(r));
  }

  @Test
  void anAsyncFailureCompletesTheFutureExceptionally() throws Exception {
    List<Object> results = inThreads(2, Duration.ofMillis(500), g -> {
      if (g.rank() == 1) {
        Thread.sleep(2500);
        return null;
      }
      CompletableFuture<Void> f = g.allReduceAsync(new float[10], AllReduceOp.SUM);
      ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
      CollectiveTimeoutException t = assertInstanceOf(CollectiveTimeoutException.class, e.getCause());
      assertEquals(1, t.peerRank());
      IllegalStateException again = assertThrows(IllegalStateException.class, () -> g.allReduce(new float[1], AllReduceOp.SUM));
      assertSame(t, again.getCause());
      Thread.sleep(2500);
      return null;
    });
    assertNull(results.get(0), String.valueOf(results.get(0)));
  }

  @Test
  void aClosedGroupRefusesCollectives() {
    ProcessGroup g = ProcessGroup.connect(0, 1, null, Duration.ofSeconds(1));
    float[] x = {2};
    g.allReduceAsync(x, AllReduceOp.SUM).join();
    g.close();
    g.close(); // idempotent
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> g.allReduceAsync(x, AllReduceOp.SUM));
    assertTrue(e.getMessage().contains("is closed"), e.getMessage());
    assertThrows(IllegalStateException.class, g::barrier);
  }

  @Test
  void anInterruptStopsAWaitingCollective() throws Exception {
    List<Object> results = inThreads(2, Duration.ofSeconds(30), g -> {
      if (g.rank() == 1) {
        Thread.sleep(2000);
        return null;
      }
      Thread me = Thread.currentThread();
      Thread interrupter = new Thread(() -> {
        try {
          Thread.sleep(300);
        } catch (InterruptedException ignored) {
          return;
        }
        me.interrupt();
      });
      interrupter.start();
      long t0 = System.nanoTime();
      DistributedException e = assertThrows(DistributedException.class, () -> g.allReduce(new float[10], AllReduceOp.SUM));
      Thread.interrupted();
      assertTrue(e.getMessage().contains("rank 0 was interrupted"), e.getMessage());
      assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
      return null;
    });
    assertNull(results.get(0), String.valueOf(results.get(0)));
  }

  @Test
  void closingFailsTheAsyncCollectiveInFlightAtOnce() throws Exception {
    List<Object> results = inThreads(2, Duration.ofSeconds(60), g -> {
      if (g.rank() == 1) {
        Thread.sleep(8000); // never joins the allreduce
        return null;
      }
      CompletableFuture<Void> f = g.allReduceAsync(new float[1000], AllReduceOp.SUM);
      Thread.sleep(200); // f is in flight, holding the group
      long t0 = System.nanoTime();
      CompletableFuture<Void> queued = g.allReduceAsync(new float[10], AllReduceOp.SUM);
      assertTrue(System.nanoTime() - t0 < 1_000_000_000L, "queuing waited for the collective in flight");
      Thread.sleep(300);
      t0 = System.nanoTime();
      g.close();
      assertTrue(System.nanoTime() - t0 < 2_000_000_000L, "close waited for the 60 s timeout");
      ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(5, TimeUnit.SECONDS));
      assertTrue(e.getCause().getMessage().contains("rank 0 closed its process group in the middle of the collective"),
          e.getCause().getMessage());
      e = assertThrows(ExecutionException.class, () -> queued.get(5, TimeUnit.SECONDS));
      assertInstanceOf(IllegalStateException.class, e.getCause());
      return null;
    });
    assertNull(results.get(0), String.valueOf(results.get(0)));
  }
}
