package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a checkpointing training process (SIGKILL) at random moments, many times over: after each
 * kill every checkpoint in the folder must load and verify, and the run resumed again and again
 * must end with bitwise the parameters and losses of the uninterrupted run.
 *
 * <p>Kills are timed against the child's observed progress, not the wall clock, so that a loaded
 * machine (a slow JVM start, a first checkpoint after seconds) moves the kills along instead of
 * landing them all before the first checkpoint: most attempts wait until the child has written two
 * new checkpoints, take the time between them as its checkpoint period under the current load, and
 * kill after a random delay of up to two periods (in a step, in a write, in the rename or pruning);
 * of every four attempts, one instead kills as soon as it sees a checkpoint's temporary file (inside a
 * write) and one kills during start-up or the resume's load. Three attempts in four make progress, so
 * the kills land at many different steps whatever the load.
 */
class CrashResumeTest {
  private static final int MAX_KILLS = 12;
  /** Time for all the kills together; one wait for a checkpoint may take at most {@link #PROGRESS_WAIT_S}. */
  private static final long KILL_PHASE_S = 240;
  private static final long PROGRESS_WAIT_S = 60;

  @Test
  void killedAgainAndAgainResumesToTheUninterruptedResult(@TempDir Path tmp) throws Exception {
    long t0 = System.nanoTime();
    Path ref = tmp.resolve("ref");
    CrashRun.run(ref);
    long t1 = System.nanoTime();
    Map<String, Tensor> expected = SafeTensors.load(ref.resolve("final.safetensors"));

    Path dir = tmp.resolve("killed");
    Path ckpts = dir.resolve("checkpoints");
    Files.createDirectories(dir);
    Random rnd = new Random(42);
    int kills = 0;
    int midWrite = 0;
    List<Long> resumedFrom = new ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(KILL_PHASE_S);
    for (int attempt = 0; attempt < 40 && kills < MAX_KILLS && System.nanoTime() < deadline; attempt++) {
      Path log = tmp.resolve("child-" + attempt + ".err");
      long before = latestStep(ckpts);
      Set<String> staleTemps = temporaryFiles(ckpts);              // left by earlier kills
      Process p = start(dir, log);
      if (attempt % 4 == 3) {
        p.waitFor(rnd.nextInt(400), TimeUnit.MILLISECONDS);       // start-up, or loading the newest checkpoint
      } else if (attempt % 4 == 1) {
        if (awaitCheckpointAfter(p, ckpts, before, log) >= 0) {
          awaitWriteInProgress(p, ckpts, staleTemps);              // inside a write: between create and rename
        }
      } else {
        long first = awaitCheckpointAfter(p, ckpts, before, log);
        long firstAt = System.nanoTime();
        long second = first < 0 ? -1 : awaitCheckpointAfter(p, ckpts, first, log);
        if (second >= 0) {
          long periodNanos = Math.max(System.nanoTime() - firstAt, TimeUnit.MILLISECONDS.toNanos(1));
          p.waitFor((long) (rnd.nextDouble() * 2 * periodNanos), TimeUnit.NANOSECONDS);
        }
      }
      if (!p.isAlive()) {                                          // the run got to its end first
        assertEquals(0, p.exitValue(), "the run failed: " + Files.readString(log));
        break;
      }
      if (!staleTemps.containsAll(temporaryFiles(ckpts))) midWrite++;
      p.destroyForcibly();                                         // SIGKILL on Linux
      p.waitFor();
      kills++;
      for (Path f : checkpoints(dir)) {
        Checkpoint.read(f);                                        // throws if a committed checkpoint is incomplete or corrupt
      }
      ModelCheckpoint.latest(ckpts).ifPresent(f -> resumedFrom.add(stepOf(f)));
    }
    long t2 = System.nanoTime();
    System.out.printf("CrashResumeTest: %d kills (%d with a checkpoint being written) in %.1f s, newest checkpoint"
        + " after each: %s; uninterrupted run %.1f s%n", kills, midWrite, (t2 - t1) / 1e9, resumedFrom, (t1 - t0) / 1e9);
    assertTrue(kills >= 5, "only " + kills + " kills happened before the run finished or "
        + KILL_PHASE_S + " s passed; newest checkpoint after each: " + resumedFrom);
    assertTrue(resumedFrom.stream().distinct().count() >= 6, "kills should land at different steps: " + resumedFrom);
    if (!Files.exists(dir.resolve("final.safetensors"))) {
      Path log = tmp.resolve("child-final.err");
      Process p = start(dir, log);
      assertTrue(p.waitFor(180, TimeUnit.SECONDS), "the resumed run did not finish in 180 s");
      assertEquals(0, p.exitValue(), Files.readString(log));
      System.out.printf("CrashResumeTest: the last resume ran %.1f s%n", (System.nanoTime() - t2) / 1e9);
    }
    Map<String, Tensor> actual = SafeTensors.load(dir.resolve("final.safetensors"));
    assertEquals(expected.keySet(), actual.keySet());
    for (String k : expected.keySet()) {
      assertArrayEquals(expected.get(k).toDoubleArray(), actual.get(k).toDoubleArray(), 0.0, k);
    }
  }

  /**
   * Waits until the child has committed a checkpoint newer than step {@code after} and returns its
   * step, or -1 when the child exits first; fails when neither happens within {@link #PROGRESS_WAIT_S}.
   */
  private static long awaitCheckpointAfter(Process p, Path ckpts, long after, Path log) throws Exception {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(PROGRESS_WAIT_S);
    while (System.nanoTime() < until) {
      long step = latestStep(ckpts);
      if (step > after) return step;
      if (p.waitFor(5, TimeUnit.MILLISECONDS)) return -1;
    }
    p.destroyForcibly();
    throw new AssertionError("the child wrote no checkpoint after step " + after + " in " + PROGRESS_WAIT_S
        + " s; its stderr: " + Files.readString(log));
  }

  /** Spins until a temporary file not in {@code stale} appears (a checkpoint write in progress), or 10 s pass. */
  private static void awaitWriteInProgress(Process p, Path ckpts, Set<String> stale) throws IOException {
    long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < until && p.isAlive()) {
      if (!stale.containsAll(temporaryFiles(ckpts))) return;
      Thread.onSpinWait();
    }
  }

  /** The newest committed checkpoint's step, or -1 when there is none. */
  private static long latestStep(Path ckpts) throws IOException {
    return ModelCheckpoint.latest(ckpts).map(CrashResumeTest::stepOf).orElse(-1L);
  }

  /** Names of the temporary files of unfinished writes in the folder. */
  private static Set<String> temporaryFiles(Path ckpts) throws IOException {
    if (!Files.isDirectory(ckpts)) return Set.of();
    try (Stream<Path> s = Files.list(ckpts)) {
      return s.map(f -> f.getFileName().toString()).filter(n -> n.endsWith(".tmp")).collect(Collectors.toSet());
    }
  }

  private static long stepOf(Path f) {
    String n = f.getFileName().toString();
    return Long.parseLong(n.substring(5, n.length() - 5));
  }

  private static List<Path> checkpoints(Path dir) throws Exception {
    Path c = dir.resolve("checkpoints");
    if (!Files.isDirectory(c)) return List.of();
    try (Stream<Path> s = Files.list(c)) {
      return s.filter(p -> p.getFileName().toString().endsWith(".ckpt")).toList();
    }
  }

  private static Process start(Path dir, Path stderr) throws Exception {
    String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    return new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), CrashRun.class.getName(), dir.toString())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .redirectError(stderr.toFile())
        .start();
  }
}
