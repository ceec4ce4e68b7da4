package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import dev.ember.nn.io.SafeTensors;
import dev.ember.tensor.Tensor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ember train --nproc N}: worker processes on this machine, their faults and restarts, and bad values. */
class TrainNprocTest {
  @TempDir static Path data;

  /** 320 training and 64 test images in Fashion-MNIST's IDX layout. */
  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(3);
    FashionLike.write(data, "train", 320, rnd);
    FashionLike.write(data, "t10k", 64, rnd);
  }

  record Result(int code, String out, String err) {}

  /** {@code ember ARGS} in this JVM. */
  static Result call(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
  }

  /** {@code ember ARGS} in a JVM of its own (as ./ember starts it) with {@code env} added. */
  static Result launch(Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().putAll(env);
    Path out = Files.createTempFile("nproc", ".out");
    Path err = Files.createTempFile("nproc", ".err");
    Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
    if (!p.waitFor(120, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the launcher did not end: " + Files.readString(err));
    }
    return new Result(p.exitValue(), Files.readString(out), Files.readString(err).replace(
        "WARNING: Using incubator modules: jdk.incubator.vector\n", ""));
  }

  static String[] train(Path dir, String... more) {
    List<String> a = new ArrayList<>(List.of("train", "--data", data.toString(), "--model", "mlp", "--optimizer", "sgd",
        "--lr", "0.05", "--batch-size", "32", "--epochs", "1", "--out", dir.toString(), "--quiet"));
    a.addAll(List.of(more));
    return a.toArray(String[]::new);
  }

  static Map<String, Tensor> weights(Path dir) throws IOException {
    return SafeTensors.load(dir.resolve("model.safetensors"));
  }

  @Test
  void twoWorkersAtHalfTheBatchTrainAsOneProcess(@TempDir Path tmp) throws IOException {
    Result one = call(train(tmp.resolve("one")));
    assertEquals(0, one.code(), one.err());
    Result two = call(train(tmp.resolve("two"), "--nproc", "2"));
    assertEquals(0, two.code(), two.out() + two.err());
    assertTrue(two.out().matches("(?s).*, 2 processes \\(batch 16 each\\) x \\d+ threads? -> .*"), two.out());
    assertTrue(two.out().contains("test_accuracy="), two.out());
    assertEquals("", two.err());
    Map<String, Tensor> a = weights(tmp.resolve("one"));
    Map<String, Tensor> b = weights(tmp.resolve("two"));
    assertEquals(a.keySet(), b.keySet());
    double num = 0;
    double den = 0;
    for (String k : a.keySet()) {
      double[] x = a.get(k).toDoubleArray();
      double[] y = b.get(k).toDoubleArray();
      for (int i = 0; i < x.length; i++) {
        num = Math.max(num, Math.abs(x[i] - y[i]));
        den = Math.max(den, Math.abs(x[i]));
      }
    }
    assertTrue(num / den < 1e-6, "relative difference " + num / den);
    List<String> csv1 = Files.readAllLines(tmp.resolve("one/metrics.csv"));
    List<String> csv2 = Files.readAllLines(tmp.resolve("two/metrics.csv"));
    assertEquals(csv1.size(), csv2.size(), "rank 0 logs every epoch");
    assertTrue(Files.exists(tmp.resolve("two/checkpoints/step-00000010.ckpt")), "rank 0 checkpoints each epoch");
  }

  @Test
  void aKilledWorkerIsNamedAndTheGroupRestartsFromTheNewestCheckpointToTheUninterruptedWeights(@TempDir Path tmp)
      throws Exception {
    Result whole = call(train(tmp.resolve("whole"), "--nproc", "2", "--checkpoint-every", "3"));
    assertEquals(0, whole.code(), whole.err());
    Map<String, String> kill = Map.of(TrainCommand.FAULT_ENV, "1:5");
    Path dir = tmp.resolve("killed");
    Result r = launch(kill, train(dir, "--nproc", "2", "--checkpoint-every", "3", "--max-restarts", "1"));
    assertEquals(0, r.code(), r.out() + r.err());
    assertTrue(r.err().matches("(?s).*ember train: worker rank 1 \\(pid \\d+\\) was killed by signal 9 \\(SIGKILL\\)\n.*"), r.err());
    assertTrue(r.err().contains("rank 1 died"), "rank 0 names the dead rank: " + r.err());
    assertTrue(r.err().contains("ember train: restarting the 2 workers (restart 1 of 1) from "
        + dir.resolve("checkpoints/step-00000003.ckpt") + "\n"), r.err());
    assertTrue(r.out().contains("ember train: resuming from " + dir.resolve("checkpoints/step-00000003.ckpt")), r.out());
    assertArrayEquals(Files.readAllBytes(tmp.resolve("whole/model.safetensors")), Files.readAllBytes(dir.resolve("model.safetensors")),
        "the restarted run ends with the uninterrupted run's weights");
  }

  @Test
  void withoutRestartsAKilledWorkerEndsTheRunSayingHowToContinue(@TempDir Path tmp) throws Exception {
    Map<String, String> kill = Map.of(TrainCommand.FAULT_ENV, "1:5");
    Path noRestart = tmp.resolve("norestart");
    Result r = launch(kill, train(noRestart, "--nproc", "2", "--checkpoint-every", "3"));
    assertEquals(1, r.code(), r.out() + r.err());
    assertTrue(r.err().contains("ember train: the group of 2 workers failed; continue with ./ember train --resume " + noRestart
        + " --nproc 2 --data " + data + "\n"), r.err());
    assertTrue(r.err().contains("ember train: worker rank 1 (pid "), r.err());
    assertTrue(Files.exists(noRestart.resolve("checkpoints/step-00000003.ckpt")), "the checkpoint to continue from stays");
  }

  @Test
  void aSignalToTheLauncherStopsEveryWorkerAtOneStepWithRankZerosCheckpointAndItsLastWords(@TempDir Path tmp)
      throws Exception {
    Path dir = tmp.resolve("stopped");
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
    List<String> args = new ArrayList<>(List.of(train(dir, "--nproc", "2")));
    args.set(args.indexOf("--epochs") + 1, "1000");
    cmd.addAll(args);
    Path err = tmp.resolve("err.txt");
    Process p = new ProcessBuilder(cmd).redirectOutput(tmp.resolve("out.txt").toFile()).redirectError(err.toFile()).start();
    try {
      Path first = dir.resolve("checkpoints/step-00000010.ckpt");
      for (int i = 0; i < 1200 && !Files.exists(first); i++) Thread.sleep(100);
      assertTrue(Files.exists(first), "the run reached its first epoch's end: " + Files.readString(err));
      p.toHandle().destroy(); // SIGTERM to the launcher alone, as `kill PID` sends it
      assertTrue(p.waitFor(90, TimeUnit.SECONDS), "the launcher ended");
    } finally {
      p.destroyForcibly();
    }
    String e = Files.readString(err);
    assertEquals(143, p.exitValue(), e);
    assertTrue(e.matches("(?s).*ember train: interrupted at epoch \\d+ step \\d+; continue with ./ember train --resume "
        + java.util.regex.Pattern.quote(dir.toString()) + " --nproc 2 --data .*"), "rank 0's last words come through: " + e);
    assertTrue(!e.contains("failed"), "an interruption is not a failure: " + e);
    String step = e.replaceAll("(?s).*interrupted at epoch \\d+ step (\\d+);.*", "$1");
    assertTrue(Files.exists(dir.resolve(String.format("checkpoints/step-%08d.ckpt", Integer.parseInt(step)))), e);
  }

  @Test
  void badNprocAndMaxRestartsAreOneLineErrors(@TempDir Path tmp) throws IOException {
    for (String[] c : new String[][] {
        {"0", "ember train: --nproc must be in 1..64, got 0"},
        {"-2", "ember train: --nproc must be in 1..64, got -2"},
        {"65", "ember train: --nproc must be in 1..64, got 65"},
        {"two", "ember train: --nproc must be an integer in 1..64, got 'two'"}}) {
      Result r = call("train", "--nproc", c[0]);
      assertEquals(2, r.code());
      assertEquals(c[1] + "\n", r.err());
    }
    Result r = call("train", "--max-restarts", "-1");
    assertEquals(2, r.code());
    assertEquals("ember train: --max-restarts must be in 0..1000, got -1\n", r.err());
    r = call("train", "--nproc", "3", "--batch-size", "100");
    assertEquals(2, r.code());
    assertEquals("ember train: --batch-size 100 does not divide among --nproc 3 workers (the batch size is the global one:"
        + " each worker trains on batch-size / nproc)\n", r.err());
    // what rank 0 would refuse, the launcher refuses before starting workers
    Path held = Files.createDirectories(tmp.resolve("held"));
    Files.writeString(held.resolve("run.properties"), "model=mlp\n");
    r = call("train", "--nproc", "2", "--out", held.toString(), "--data", data.toString());
    assertEquals(2, r.code());
    assertTrue(r.err().startsWith("ember train: " + held + " already holds a run ("), r.err());
    r = call("train", "--nproc", "2", "--out", tmp.resolve("new").toString(), "--data", tmp.resolve("nothing").toString());
    assertEquals(2, r.code());
    assertTrue(r.err().startsWith("ember train: --data " + tmp.resolve("nothing") + ": "), r.err());
    assertEquals(1, r.err().lines().count(), r.err());
  }
}
