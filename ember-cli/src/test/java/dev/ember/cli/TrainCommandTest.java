package dev.ember.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ember train} end to end on a small generated data set in Fashion-MNIST's IDX layout
 * (each class a brighter square in its own place, plus noise), so the test needs neither the
 * real data nor a network.
 */
class TrainCommandTest {
  @TempDir static Path data;

  @BeforeAll
  static void writeData() throws IOException {
    Random rnd = new Random(1);
    write(data, "train", 600, rnd);
    write(data, "t10k", 200, rnd);
  }

  private static void write(Path dir, String prefix, int n, Random rnd) throws IOException {
    byte[] images = new byte[n * 784];
    byte[] labels = new byte[n];
    for (int i = 0; i < n; i++) {
      int c = rnd.nextInt(10);
      labels[i] = (byte) c;
      for (int p = 0; p < 784; p++) images[i * 784 + p] = (byte) rnd.nextInt(60);
      int r0 = (c / 5) * 12 + 2, c0 = (c % 5) * 5 + 1;
      for (int r = r0; r < r0 + 8; r++) for (int q = c0; q < c0 + 4; q++) images[i * 784 + r * 28 + q] = (byte) 220;
    }
    gz(dir.resolve(prefix + "-images-idx3-ubyte.gz"), header(0x803, n, 28, 28), images);
    gz(dir.resolve(prefix + "-labels-idx1-ubyte.gz"), header(0x801, n), labels);
  }

  private static byte[] header(int magic, int... dims) {
    ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length).putInt(magic);
    for (int d : dims) b.putInt(d);
    return b.array();
  }

  private static void gz(Path file, byte[] head, byte[] body) throws IOException {
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file))) {
      out.write(head);
      out.write(body);
    }
  }

  private static String[] run(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
    String o = out.toString(StandardCharsets.UTF_8);
    String e = err.toString(StandardCharsets.UTF_8);
    assertEquals(0, code, "stdout:\n" + o + "\nstderr:\n" + e);
    return o.split("\n");
  }

  @Test
  void trainsLeavesARunFolderAndResumesToTheSameBytes(@TempDir Path tmp) throws IOException {
    Path full = tmp.resolve("full");
    String[] lines = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "3", "--batch-size", "32",
        "--checkpoint-every", "7", "--out", full.toString(), "--quiet");
    String last = lines[lines.length - 1];
    assertTrue(last.matches("test_accuracy=[01]\\.\\d{4}"), last);
    assertTrue(Double.parseDouble(last.substring("test_accuracy=".length())) > 0.9, last);
    for (String f : List.of("metrics.csv", "model.safetensors", "report.html", "confusion_matrix.json", "profile.json",
        "run.properties", "checkpoints")) {
      assertTrue(Files.exists(full.resolve(f)), f + " missing in " + full);
    }
    List<String> csv = Files.readAllLines(full.resolve("metrics.csv"));
    assertEquals(4, csv.size(), "header + 3 epochs: " + csv);
    assertTrue(csv.get(0).contains("val_accuracy"), csv.get(0));

    // the same run stopped after 1 epoch, then resumed up to 3
    Path part = tmp.resolve("part");
    String[] one = run("train", "--data", data.toString(), "--model", "mlp", "--epochs", "1", "--batch-size", "32",
        "--checkpoint-every", "7", "--out", part.toString(), "--quiet");
    assertTrue(one[0].contains(", batch 32, 1 epoch, seed 0, "), one[0]);
    assertTrue(one[one.length - 2].startsWith("ember train: 1 epoch, median "), one[one.length - 2]);
    String[] resumed = run("train", "--resume", part.toString(), "--epochs", "3", "--data", data.toString(), "--quiet");
    assertTrue(resumed[0].startsWith("ember train: resuming from "), resumed[0]);
    assertArrayEquals(Files.readAllBytes(full.resolve("model.safetensors")), Files.readAllBytes(part.resolve("model.safetensors")),
        "model.safetensors of the resumed run differs from the uninterrupted run's");
    assertEquals(lines[lines.length - 1], resumed[resumed.length - 1]);
  }

  @Test
  void badOptionsSayWhatIsWrong() {
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int code = Main.run(new String[] {"train", "--model", "resnet"}, new PrintStream(new ByteArrayOutputStream()),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    assertEquals(2, code);
    assertEquals("ember train: --model must be one of mlp, lenet, convnet, got 'resnet'\n", err.toString(StandardCharsets.UTF_8));
  }
}
