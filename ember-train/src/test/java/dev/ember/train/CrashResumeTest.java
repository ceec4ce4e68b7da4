package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.ModelCheckpoint;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a checkpointing training process (SIGKILL) at random moments, many times over: after each
 * kill every checkpoint in the folder must load and verify, and the run resumed again and again
 * must end with bitwise the parameters and losses of the uninterrupted run.
 */
class CrashResumeTest {
  @Test
  void killedAgainAndAgainResumesToTheUninterruptedResult(@TempDir Path tmp) throws Exception {
    Path ref = tmp.resolve("ref");
    CrashRun.run(ref);
    Map<String, Tensor> expected = SafeTensors.load(ref.resolve("final.safetensors"));

    Path dir = tmp.resolve("killed");
    Files.createDirectories(dir);
    Random rnd = new Random(42);
    int kills = 0;
    List<Long> resumedFrom = new ArrayList<>();
    for (int attempt = 0; attempt < 40 && kills < 12; attempt++) {
      Process p = start(dir);
      // the JVM needs ~0.3-0.6 s to start; kill anywhere from start-up to deep in training
      boolean finished = p.waitFor(200 + rnd.nextInt(1200), TimeUnit.MILLISECONDS);
      if (finished) {
        assertEquals(0, p.exitValue(), "the run failed: " + new String(p.getErrorStream().readAllBytes()));
        break;
      }
      p.destroyForcibly();                               // SIGKILL on Linux
      p.waitFor();
      kills++;
      for (Path f : checkpoints(dir)) {
        Checkpoint.read(f);                              // throws if a committed checkpoint is incomplete or corrupt
      }
      ModelCheckpoint.latest(dir.resolve("checkpoints")).ifPresent(f -> resumedFrom.add(stepOf(f)));
    }
    assertTrue(kills >= 5, "only " + kills + " kills happened before the run finished");
    assertTrue(resumedFrom.stream().distinct().count() >= 3, "kills should land at different steps: " + resumedFrom);
    if (!Files.exists(dir.resolve("final.safetensors"))) {
      Process p = start(dir);
      assertTrue(p.waitFor(120, TimeUnit.SECONDS));
      assertEquals(0, p.exitValue(), new String(p.getErrorStream().readAllBytes()));
    }
    Map<String, Tensor> actual = SafeTensors.load(dir.resolve("final.safetensors"));
    assertEquals(expected.keySet(), actual.keySet());
    for (String k : expected.keySet()) {
      assertArrayEquals(expected.get(k).toDoubleArray(), actual.get(k).toDoubleArray(), 0.0, k);
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

  private static Process start(Path dir) throws Exception {
    String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    return new ProcessBuilder(java, "--add-modules", "jdk.incubator.vector", "-Xmx256m", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), CrashRun.class.getName(), dir.toString())
        .redirectOutput(ProcessBuilder.Redirect.DISCARD)
        .start();
  }
}
