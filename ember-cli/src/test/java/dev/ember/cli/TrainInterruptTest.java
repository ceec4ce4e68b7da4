package dev.ember.cli;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ctrl-C in a real {@code ember train} process: SIGINT in epoch 1 with no {@code --checkpoint-every}
 * still leaves a checkpoint, the weights and the report, says where it stopped and how to go on,
 * and {@code --resume} then ends with bitwise the weights of a run that was never interrupted.
 * The processes run the test JVM's java on its classpath (no build needed).
 */
class TrainInterruptTest {
  @TempDir Path tmp;

  /** 1200 training images at batch 8: 150 steps per epoch, long enough for the signal to land in epoch 1. */
  private static final int TRAIN = 1200;

  private List<String> command(String... args) {
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--add-modules", "jdk.incubator.vector", "-cp", System.getProperty("java.class.path"), "dev.ember.cli.Main"));
    cmd.addAll(List.of(args));
    return cmd;
  }

  private String[] train(Path data, Path out) {
    return new String[] {"train", "--data", data.toString(), "--model", "mlp", "--epochs", "2", "--batch-size", "8",
        "--threads", "2", "--out", out.toString(), "--quiet"};
  }

  /** Runs to the end; returns stdout, failing on a non-zero exit status. */
  private String runToEnd(String... args) throws Exception {
    Path err = tmp.resolve("err-" + System.nanoTime());
    Process p = new ProcessBuilder(command(args)).redirectError(err.toFile()).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "still running");
    assertEquals(0, p.exitValue(), out + Files.readString(err));
    return out;
  }

  @Test
  void ctrlCInEpochOneLeavesAResumableRunThatEndsBitwiseAsAnUninterruptedOne() throws Exception {
    Path data = Files.createDirectories(tmp.resolve("data"));
    Random rnd = new Random(3);
    FashionLike.write(data, "train", TRAIN, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
    Path full = tmp.resolve("full"), cut = tmp.resolve("cut");
    runToEnd(train(data, full));

    Path err = tmp.resolve("cut.err");
    Process p = new ProcessBuilder(command(train(data, cut))).redirectError(err.toFile()).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    List<String> lines = new ArrayList<>();
    for (String line; (line = out.readLine()) != null; ) {
      lines.add(line);
      if (line.startsWith("ember train: mlp on Fashion-MNIST")) break; // training starts now
    }
    boolean term = sigintIgnored();
    assertEquals(0, new ProcessBuilder("kill", term ? "-TERM" : "-INT", Long.toString(p.pid())).start().waitFor());
    for (String line; (line = out.readLine()) != null; ) lines.add(line);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the interrupted run did not end");
    String errText = Files.readString(err);
    assertEquals(term ? 143 : 130, p.exitValue(), "128 + the signal; stdout: " + lines + "\nstderr: " + errText);

    Matcher m = Pattern.compile("ember train: interrupted at epoch (\\d+) step (\\d+); continue with \\./ember train --resume "
        + Pattern.quote(cut.toString()) + " --data " + Pattern.quote(data.toString()) + "\n").matcher(errText);
    assertTrue(m.find(), errText);
    long step = Long.parseLong(m.group(2));
    assertEquals("1", m.group(1), "the signal came right after the start line: " + errText);
    assertTrue(step >= 1 && step < TRAIN / 8, "a step inside epoch 1: " + step);
    assertEquals(List.of(checkpoint(step)), names(cut.resolve("checkpoints")), "a checkpoint at the interruption");
    for (String f : List.of("model.safetensors", "report.html", "metrics.csv", "profile.json", "run.properties")) {
      assertTrue(Files.exists(cut.resolve(f)), f + " missing after the interruption");
    }
    assertTrue(Files.notExists(cut.resolve(RunFolder.LOCK)), "the folder's lock is given back before the JVM ends");

    String resumed = runToEnd("train", "--resume", cut.toString(), "--data", data.toString(), "--quiet");
    assertTrue(resumed.startsWith("ember train: resuming from " + cut.resolve("checkpoints").resolve(checkpoint(step))), resumed);
    assertArrayEquals(Files.readAllBytes(full.resolve("model.safetensors")), Files.readAllBytes(cut.resolve("model.safetensors")),
        "the resumed run's weights differ from the uninterrupted run's");
    assertEquals(List.of(checkpoint(TRAIN / 8), checkpoint(2 * TRAIN / 8)), names(cut.resolve("checkpoints")),
        "the interruption's checkpoint goes once newer ones exist");
  }

  /**
   * Whether this JVM, and so the process it starts, ignores SIGINT: a shell without job control starts
   * background commands so, and the JVM then leaves Ctrl-C alone. The test sends SIGTERM then, which
   * takes the same path (the JVM's shutdown hooks).
   */
  private static boolean sigintIgnored() {
    sun.misc.Signal sigint = new sun.misc.Signal("INT");
    sun.misc.SignalHandler old = sun.misc.Signal.handle(sigint, sig -> {}); // an ignored SIGINT stays ignored and answers SIG_IGN
    if (old == sun.misc.SignalHandler.SIG_IGN) return true;
    sun.misc.Signal.handle(sigint, old);
    return false;
  }

  private static String checkpoint(long step) {
    return dev.ember.train.callbacks.ModelCheckpoint.fileName(step);
  }

  private static List<String> names(Path dir) throws IOException {
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(f -> f.getFileName().toString()).sorted().toList();
    }
  }
}
