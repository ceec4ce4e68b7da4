package dev.ember.data;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

/**
 * A small data set in Fashion-MNIST's gzipped IDX layout, for tests that need the real files'
 * format but neither the data set nor a network: each of the 10 classes is a bright 8x4 square in
 * its own place over noise, so a model learns it in a few steps. Shared with ember-cli's and the
 * examples' tests through this module's test jar.
 */
public final class FashionLike {
  private FashionLike() {}

  /** {@code n} images and labels as {@code PREFIX-images-idx3-ubyte.gz} and {@code PREFIX-labels-idx1-ubyte.gz} in {@code dir}. */
  public static void write(Path dir, String prefix, int n, Random rnd) throws IOException {
    byte[] images = new byte[n * 784];
    byte[] labels = new byte[n];
    for (int i = 0; i < n; i++) {
      int c = rnd.nextInt(10);
      labels[i] = (byte) c;
      for (int p = 0; p < 784; p++) images[i * 784 + p] = (byte) rnd.nextInt(60);
      int r0 = (c / 5) * 12 + 2, c0 = (c % 5) * 5 + 1;
      for (int r = r0; r < r0 + 8; r++) for (int q = c0; q < c0 + 4; q++) images[i * 784 + r * 28 + q] = (byte) 220;
    }
    writeIdx(dir.resolve(prefix + "-images-idx3-ubyte.gz"), 0x803, new int[] {n, 28, 28}, images);
    writeIdx(dir.resolve(prefix + "-labels-idx1-ubyte.gz"), 0x801, new int[] {n}, labels);
  }

  /** One gzipped IDX file: the magic, the dimensions (big-endian ints), then {@code body}. */
  public static void writeIdx(Path file, int magic, int[] dims, byte[] body) throws IOException {
    ByteBuffer head = ByteBuffer.allocate(4 + 4 * dims.length).putInt(magic);
    for (int d : dims) head.putInt(d);
    try (OutputStream out = new GZIPOutputStream(Files.newOutputStream(file))) {
      out.write(head.array());
      out.write(body);
    }
  }
}
