package dev.ember.examples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Module;
import dev.ember.nn.io.SafeTensors;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.GZIPOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Runs the Fashion-MNIST example on a small generated set in Fashion-MNIST's IDX layout (each class
 * a bright bar in its own place, plus noise), so it needs neither the real data nor a network.
 */
class FashionCnnTest {
  @Test
  void trainsAndSavesWeightsThatLoadBack(@TempDir Path tmp) throws Exception {
    Path data = Files.createDirectory(tmp.resolve("data"));
    writeFashionLike(data, "train", 600, new Random(1));
    writeFashionLike(data, "t10k", 200, new Random(2));
    Path weights = tmp.resolve("out/cnn.safetensors");

    String out = Output.of(() -> FashionCnn.main(new String[] {"3", "500", weights.toString(), data.toString()}));
    assertTrue(out.contains("train 500 images, test 200"), out);
    double acc = Output.value(out, "test_accuracy");
    assertTrue(acc > 0.4, "test_accuracy " + acc + " (chance: 0.1)");

    Module model = FashionCnn.cnn();
    var loaded = model.loadStateDict(SafeTensors.load(weights)); // strict
    assertEquals(0, loaded.missingKeys().size() + loaded.unexpectedKeys().size());
  }

  /** n images and labels as {@code PREFIX-images-idx3-ubyte.gz} and {@code PREFIX-labels-idx1-ubyte.gz}. */
  static void writeFashionLike(Path dir, String prefix, int n, Random rnd) throws IOException {
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

  static byte[] header(int magic, int... dims) {
    ByteBuffer b = ByteBuffer.allocate(4 + 4 * dims.length).putInt(magic);
    for (int d : dims) b.putInt(d);
    return b.array();
  }

  static void gz(Path file, byte[] head, byte[] body) throws IOException {
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file))) {
      out.write(head);
      out.write(body);
    }
  }
}
