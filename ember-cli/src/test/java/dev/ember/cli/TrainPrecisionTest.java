package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.FashionLike;
import dev.ember.train.Trainer.Precision;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code ember train --precision}: the option, run.properties and --resume, and an fp16 run's files and report. */
class TrainPrecisionTest {
  @TempDir static Path data;
  @TempDir Path tmp;

  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(1);
    FashionLike.write(data, "train", 300, rnd);
    FashionLike.write(data, "t10k", 100, rnd);
  }

  private static String error(String... args) {
    return assertThrows(IllegalArgumentException.class, () -> TrainCommand.parse(args)).getMessage();
  }

  @Test
  void theOptionTakesTheThreeNamesAndABadOneListsThem() throws IOException {
    assertEquals(Precision.F32, TrainCommand.parse(new String[] {}).precision);
    assertEquals(Precision.BF16, TrainCommand.parse(new String[] {"--precision", "bf16"}).precision);
    assertEquals(Precision.F16, TrainCommand.parse(new String[] {"--precision=fp16"}).precision);
    assertEquals(Precision.F32, TrainCommand.parse(new String[] {"--precision", "fp32"}).precision);
    assertEquals("--precision must be one of fp32, bf16, fp16, got 'fp8'", error("--precision", "fp8"));
    assertEquals("--precision must be one of fp32, bf16, fp16, got 'FP16'", error("--precision", "FP16"));
    assertEquals("option --precision needs a value (see ./ember train --help)", error("--precision"));
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(new String[] {"train", "--precision", "half-ish"}, new PrintStream(new ByteArrayOutputStream()),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    assertEquals("ember train: --precision must be one of fp32, bf16, fp16, got 'half-ish'\n", err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void resumeKeepsTheRunsPrecision() throws IOException {
    Path dir = Files.createDirectories(tmp.resolve("runs/x"));
    String base = "model=mlp\nepochs=3\nbatch_size=32\noptimizer=sgd\nlr=0.001\nscheduler=none\nseed=7\n";
    Files.writeString(dir.resolve("run.properties"), base + "precision=bf16\n");
    assertEquals(Precision.BF16, TrainCommand.parse(new String[] {"--resume", dir.toString()}).precision);
    assertEquals(Precision.BF16, TrainCommand.parse(new String[] {"--resume", dir.toString(), "--precision", "bf16"}).precision);
    assertEquals("--resume " + dir + ": the run was trained with --precision bf16, not fp16; drop --precision or start a new run",
        error("--resume", dir.toString(), "--precision", "fp16"));
    Files.writeString(dir.resolve("run.properties"), base);            // a run folder from before --precision
    assertEquals(Precision.F32, TrainCommand.parse(new String[] {"--resume", dir.toString()}).precision);
    Files.writeString(dir.resolve("run.properties"), base + "precision=fp64\n");
    String bad = error("--resume", dir.toString());
    assertTrue(bad.contains("'precision' must be one of fp32, bf16, fp16, got 'fp64'"), bad);
  }

  @Test
  void anFp16RunRecordsItsPrecisionScaleAndSkippedSteps() throws IOException {
    Path out = tmp.resolve("fp16");
    ByteArrayOutputStream o = new ByteArrayOutputStream();
    ByteArrayOutputStream e = new ByteArrayOutputStream();
    int code = Main.run(new String[] {"train", "--data", data.toString(), "--model", "mlp", "--epochs", "2", "--batch-size",
        "32", "--precision", "fp16", "--out", out.toString(), "--quiet"}, new PrintStream(o, true, StandardCharsets.UTF_8),
        new PrintStream(e, true, StandardCharsets.UTF_8));
    String stdout = o.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, stdout + e.toString(StandardCharsets.UTF_8));
    assertTrue(stdout.lines().findFirst().orElseThrow().contains(", fp16 -> "), stdout);
    Properties p = new Properties();
    try (var in = Files.newBufferedReader(out.resolve("run.properties"))) {
      p.load(in);
    }
    assertEquals("fp16", p.getProperty("precision"));
    List<String> csv = Files.readAllLines(out.resolve("metrics.csv"));
    List<String> header = List.of(csv.get(0).split(","));
    assertTrue(header.contains("loss_scale"), "the scale column: " + header);
    int col = header.indexOf("loss_scale");
    double scale = Double.parseDouble(csv.get(2).split(",", -1)[col]);
    assertTrue(scale > 0 && scale <= 65536 && Math.getExponent(scale) == Math.log(scale) / Math.log(2),
        "a power of two at most PyTorch's initial scale: " + scale);
    String report = Files.readString(out.resolve("report.html"));
    assertTrue(report.contains("<td>precision</td><td>fp16 (autocast, loss scaling: final scale " + (long) scale + ", "),
        "report names the precision and the final scale");
    assertTrue(report.contains("data-title=\"loss scale\""), "report draws the loss scale");
  }
}
