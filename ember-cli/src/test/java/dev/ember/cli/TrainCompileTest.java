package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ember train --compile}: the same weights and accuracy as the eager run, and a refusal with bf16. */
class TrainCompileTest {
  @TempDir static Path data;
  @TempDir Path tmp;

  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(1);
    FashionLike.write(data, "train", 200, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
  }

  private record Result(int code, String out, String err) {}

  private static Result train(Path out, String... extra) {
    String[] base = {"train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--optimizer", "sgd", "--out", out.toString(), "--quiet"};
    String[] args = java.util.Arrays.copyOf(base, base.length + extra.length);
    System.arraycopy(extra, 0, args, base.length, extra.length);
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(o, true, StandardCharsets.UTF_8), new PrintStream(e, true, StandardCharsets.UTF_8));
    return new Result(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
  }

  @Test
  void aCompiledRunEndsWithTheEagerRunsWeights() throws IOException {
    Result eager = train(tmp.resolve("eager"));
    Result compiled = train(tmp.resolve("compiled"), "--compile");
    assertEquals(0, eager.code(), eager.out() + eager.err());
    assertEquals(0, compiled.code(), compiled.out() + compiled.err());
    assertTrue(compiled.out().lines().findFirst().orElseThrow().contains(", compiled -> "), compiled.out());
    String last = eager.out().strip().lines().reduce((a, b) -> b).orElseThrow();
    assertTrue(last.startsWith("test_accuracy="), eager.out());
    assertEquals(last, compiled.out().strip().lines().reduce((a, b) -> b).orElseThrow());
    assertArrayEquals(Files.readAllBytes(tmp.resolve("eager/model.safetensors")),
        Files.readAllBytes(tmp.resolve("compiled/model.safetensors")));
  }

  @Test
  void compileRefusesAnotherPrecision() {
    Result r = train(tmp.resolve("bf16"), "--compile", "--precision", "bf16");
    assertEquals(2, r.code(), r.out() + r.err());
    // one line, before the run starts: no start line, no run folder
    assertEquals("ember train: --compile compiles float32 steps: it cannot be used with --precision bf16",
        r.err().strip());
    assertEquals("", r.out().strip());
    assertFalse(java.nio.file.Files.exists(tmp.resolve("bf16")));
  }
}
