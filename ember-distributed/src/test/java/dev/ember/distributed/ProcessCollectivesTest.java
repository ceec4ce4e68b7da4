package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * Ranks in separate JVMs (started with {@link ProcessBuilder} on the test class path): this JVM is rank 0,
 * the others run {@link CollectiveWorker}. Checks the collectives against the reference and that a rank
 * killed with SIGKILL is named by every survivor, well within the timeout.
 */
class ProcessCollectivesTest {
  static final int[] SIZES = {1, 5, 16383, 16385, 65537, 300_001};
  private final List<Worker> workers = new ArrayList<>();

  /** A child JVM and its output lines, read on a daemon thread. */
  record Worker(Process process, List<String> lines, CountDownLatch ready) {
    String output() {
      return String.join("\n", lines);
    }
  }

  Worker spawn(String... args) throws Exception {
    return spawn(java.util.Map.of(), args);
  }

  Worker spawn(java.util.Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "-Xmx256m", "-XX:+UseSerialGC", "-cp",
        System.getProperty("java.class.path"), CollectiveWorker.class.getName()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
    pb.environment().putAll(env);
    Process p = pb.start();
    List<String> lines = new CopyOnWriteArrayList<>();
    CountDownLatch ready = new CountDownLatch(1);
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          lines.add(line);
          if (line.equals("READY")) ready.countDown();
        }
      } catch (java.io.IOException ignored) {
        // the process ended
      }
    });
    reader.setDaemon(true);
    reader.start();
    Worker w = new Worker(p, lines, ready);
    workers.add(w);
    return w;
  }

  @AfterEach
  void killWorkers() {
    for (Worker w : workers) w.process().destroyForcibly();
  }

  @ParameterizedTest
  @ValueSource(ints = {2, 3, 4})
  void collectivesAcrossProcessesMatchTheReference(int world) throws Exception {
    int port = ProcessGroupTest.freePort();
    for (int r = 1; r < world; r++) spawn("script", "" + r, "" + world, "" + port, "60000");
    try (ProcessGroup g = ProcessGroup.connect(0, world, new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(60))) {
      assertNull(CollectiveScript.run(g, SIZES));
    }
    for (Worker w : workers) {
      assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "worker did not exit: " + w.output());
      assertEquals(0, w.process().exitValue(), w.output());
    }
  }

  @Test
  void ddpAcrossTwoProcessesGivesTheThreadedRunsBits() throws Exception {
    int port = ProcessGroupTest.freePort();
    Worker one = spawn("ddp", "1", "2", "" + port, "60000");
    String mine;
    try (ProcessGroup g = ProcessGroup.connect(0, 2, new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(60))) {
      mine = DistributedDataParallelTest.digest(DistributedDataParallelTest.trainRank(g, DistributedDataParallelTest.mlp(0),
          DistributedDataParallel.DEFAULT_BUCKET_BYTES, DistributedDataParallelTest.PLAIN, DistributedDataParallelTest.FEATURES));
    }
    assertTrue(one.process().waitFor(60, TimeUnit.SECONDS), "worker did not exit: " + one.output());
    assertEquals(0, one.process().exitValue(), one.output());
    assertTrue(one.lines().contains("PARAMS " + mine), "rank 1's weights differ from rank 0's: " + one.output());
    var threads = DistributedDataParallelTest.ddp(DistributedDataParallelTest.twoReplicas(),
        DistributedDataParallel.DEFAULT_BUCKET_BYTES, DistributedDataParallelTest.PLAIN);
    assertEquals(DistributedDataParallelTest.digest(threads.get(0)), mine, "processes against threads");
  }

  @Test
  void aKilledRankIsNamedByEverySurvivorWithinTheTimeout() throws Exception {
    int world = 4;
    int dead = 2;
    int port = ProcessGroupTest.freePort();
    Worker one = spawn("expectDead", "1", "4", "" + port, "30000", "" + dead);
    Worker victim = spawn("idle", "" + dead, "4", "" + port, "30000");
    Worker three = spawn("expectDead", "3", "4", "" + port, "30000", "" + dead);
    try (ProcessGroup g = ProcessGroup.connect(0, world, new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(30))) {
      for (Worker w : List.of(one, victim, three)) assertTrue(w.ready().await(60, TimeUnit.SECONDS), w.output());
      Thread killer = new Thread(() -> {
        try {
          Thread.sleep(500); // the survivors are inside the allreduce by then
        } catch (InterruptedException e) {
          return;
        }
        victim.process().destroyForcibly(); // SIGKILL: no goodbye, sockets reset by the kernel
      });
      killer.start();
      long t0 = System.nanoTime();
      PeerLostException e = assertThrows(PeerLostException.class, () -> g.allReduce(new float[1 << 20], AllReduceOp.SUM));
      long ms = (System.nanoTime() - t0) / 1_000_000;
      assertEquals(dead, e.peerRank(), e.getMessage());
      assertTrue(ms < 10_000, "took " + ms + " ms, the timeout is 30 s");
      assertEquals("allreduce", e.operation());
      assertTrue(e.getMessage().startsWith("allreduce: rank 0: rank 2 died"), e.getMessage());
    }
    for (Worker w : List.of(one, three)) {
      assertTrue(w.process().waitFor(30, TimeUnit.SECONDS), "survivor did not exit: " + w.output());
      assertEquals(0, w.process().exitValue(), w.output());
      assertTrue(w.output().contains("LOST 2"), w.output());
    }
  }

  @Test
  void aKilledRankZeroIsNamedByTheOthers() throws Exception {
    int port = ProcessGroupTest.freePort();
    Worker master = spawn("idle", "0", "3", "" + port, "30000");
    Worker one = spawn("expectDead", "1", "3", "" + port, "30000", "0");
    try (ProcessGroup g = ProcessGroup.connect(2, 3, new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(30))) {
      for (Worker w : List.of(master, one)) assertTrue(w.ready().await(60, TimeUnit.SECONDS), w.output());
      Thread killer = new Thread(() -> {
        try {
          Thread.sleep(500);
        } catch (InterruptedException e) {
          return;
        }
        master.process().destroyForcibly();
      });
      killer.start();
      long t0 = System.nanoTime();
      PeerLostException e = assertThrows(PeerLostException.class, () -> g.allReduce(new float[1 << 20], AllReduceOp.SUM));
      assertEquals(0, e.peerRank(), e.getMessage());
      assertTrue(System.nanoTime() - t0 < 10_000_000_000L, "the timeout is 30 s");
    }
    assertTrue(one.process().waitFor(30, TimeUnit.SECONDS), "survivor did not exit: " + one.output());
    assertEquals(0, one.process().exitValue(), one.output());
    assertTrue(one.output().contains("LOST 0"), one.output());
  }

  @Test
  void workersStartedWithTorchrunVariablesJoin() throws Exception {
    int port = ProcessGroupTest.freePort();
    for (int r = 1; r < 3; r++) {
      spawn(java.util.Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port, "RANK", "" + r, "WORLD_SIZE", "3",
          ProcessGroup.TIMEOUT_ENV, "60"), "env", "-1", "-1", "-1", "-1", "3,20000");
    }
    try (ProcessGroup g = ProcessGroup.fromEnv(java.util.Map.of("MASTER_ADDR", "127.0.0.1", "MASTER_PORT", "" + port,
        "RANK", "0", "WORLD_SIZE", "3", ProcessGroup.TIMEOUT_ENV, "60"))) {
      assertNull(CollectiveScript.run(g, new int[] {3, 20_000}));
    }
    for (Worker w : workers) {
      assertTrue(w.process().waitFor(60, TimeUnit.SECONDS), "worker did not exit: " + w.output());
      assertEquals(0, w.process().exitValue(), w.output());
    }
  }

  @Test
  void aRankThatExitsRightAfterItsLastCollectiveDoesNotFailTheOthersThere() throws Exception {
    int port = ProcessGroupTest.freePort();
    Worker one = spawn("exitEarly", "1", "2", "" + port, "30000");
    try (ProcessGroup g = ProcessGroup.connect(0, 2, new InetSocketAddress("127.0.0.1", port), Duration.ofSeconds(30))) {
      float[] x = CollectiveScript.floats(40, 0, 300_001);
      g.allReduce(x, AllReduceOp.SUM);
      assertArrayEquals(CollectiveScript.reference(40, 300_001, 2, false), x);
      assertTrue(one.process().waitFor(30, TimeUnit.SECONDS), one.output());
      long t0 = System.nanoTime();
      PeerLostException e = assertThrows(PeerLostException.class, g::barrier); // but a later collective fails at once
      assertEquals(1, e.peerRank(), e.getMessage());
      assertTrue(System.nanoTime() - t0 < 5_000_000_000L);
    }
  }
}
