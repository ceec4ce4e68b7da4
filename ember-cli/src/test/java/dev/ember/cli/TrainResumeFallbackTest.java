package dev.ember.cli;

import dev.ember.data.FashionLike;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import dev.ember.tensor.Tensor;
import dev.ember.train.Checkpoint;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ember train --resume} with a corrupt newest checkpoint, and {@code --max-bad-steps}. */
class TrainResumeFallbackTest {
  @TempDir static Path data;

  /** 300 training and 100 test images in Fashion-MNIST's IDX layout: each class a bright square in its own place. */
  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(2);
    FashionLike.write(data, "train", 300, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
  }

  /** Exit code, stdout, stderr. */
  private static String[] run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    return new String[] {Integer.toString(code), out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8)};
  }

  @Test
  void aTruncatedNewestCheckpointIsNamedAndTheRunResumesFromTheOneBefore(@TempDir Path tmp) throws IOException {
    Path full = tmp.resolve("full");
    String[] r = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "2", "--batch-size", "32",
        "--checkpoint-every", "4", "--out", full.toString(), "--quiet");
    assertEquals("0", r[0], r[2]);
    Path part = tmp.resolve("part");
    r = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--checkpoint-every", "4", "--out", part.toString(), "--quiet");
    assertEquals("0", r[0], r[2]);
    Path ckpts = part.resolve("checkpoints");
    Path newest = ckpts.resolve("step-00000010.ckpt");  // 10 batches of 32 in an epoch: steps 4, 8 and the epoch's 10
    Path before = ckpts.resolve("step-00000008.ckpt");
    byte[] bytes = Files.readAllBytes(newest);
    int cut = bytes.length - 1000;
    Files.write(newest, Arrays.copyOf(bytes, cut));

    r = run("train", "--resume", part.toString(), "--epochs", "2", "--data", data.toString(), "--quiet");
    assertEquals("0", r[0], r[2]);
    assertEquals(String.format(Locale.ROOT, "ember train: %s is corrupt (truncated at %,d of %,d bytes); resuming from %s%n",
        newest, cut, bytes.length, before), r[2]);
    assertTrue(r[1].startsWith("ember train: resuming from " + before + "\n"), r[1]);
    assertArrayEquals(Files.readAllBytes(full.resolve("model.safetensors")), Files.readAllBytes(part.resolve("model.safetensors")),
        "the run resumed from step 8 ends where the uninterrupted run did");

    // none verifies: one line naming each file and its problem
    try (var files = Files.list(ckpts)) {
      for (Path f : files.toList()) Files.write(f, new byte[3]);
    }
    r = run("train", "--resume", part.toString(), "--epochs", "3", "--data", data.toString(), "--quiet");
    assertEquals("1", r[0]);
    assertTrue(r[2].matches("ember train: checkpoint \\Q" + ckpts + "\\E: none of its 3 checkpoints verifies: step-00000020.ckpt"
        + " \\(truncated at 3 bytes, [^;]*\\); step-00000016.ckpt \\([^;]*\\); step-00000012.ckpt \\([^;]*\\)\n"), r[2]);
  }

  /**
   * A learning rate far too high makes the loss overflow: by default the run skips those steps,
   * stops after 3 in a row naming the step and a parameter, and no checkpoint holds a NaN.
   */
  @Test
  void aDivergingRunStopsAfterThreeNonFiniteStepsWithFiniteCheckpoints(@TempDir Path tmp) throws IOException {
    Path dir = tmp.resolve("diverged");
    String[] r = run("train", "--model", "mlp", "--optimizer", "sgd", "--lr", "1e30", "--batch-size", "30", "--epochs", "2",
        "--checkpoint-every", "1", "--data", data.toString(), "--out", dir.toString(), "--quiet");
    assertEquals("1", r[0], r[1] + r[2]);
    assertTrue(r[2].matches("(?s)ember train: Trainer: 3 consecutive non-finite steps \\(the last at epoch \\d+, batch \\d+, after step \\d+: "
        + "loss=[^,]+, first non-finite gradient in [\\w.]+\\); stopping\\. The last good checkpoint is .*step-\\d+\\.ckpt\n"), r[2]);
    try (var files = Files.list(dir.resolve("checkpoints"))) {
      List<Path> ckpts = files.filter(f -> f.getFileName().toString().endsWith(".ckpt")).toList();
      assertTrue(!ckpts.isEmpty(), "the steps before the overflow were checkpointed");
      for (Path f : ckpts) {
        for (var e : ((Map<?, ?>) Checkpoint.read(f).get("model")).entrySet()) {
          for (double v : ((Tensor) e.getValue()).toDoubleArray()) assertTrue(Double.isFinite(v), f + ": " + e.getKey() + " holds " + v);
        }
      }
    }
  }

  @Test
  void maxBadStepsTakesACount() {
    String[] r = run("train", "--max-bad-steps", "-1");
    assertEquals("2", r[0]);
    assertEquals("ember train: --max-bad-steps must be >= 0, got -1\n", r[2]);
  }
}
