package dev.ember.data;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.zip.GZIPOutputStream;

/** Builds IDX files in memory for tests. */
final class IdxFiles {
  private IdxFiles() {}

  /** An unsigned-byte IDX file with the given dims and data. */
  static byte[] idx(int[] dims, byte[] data) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.write(0);
    out.write(0);
    out.write(0x08);
    out.write(dims.length);
    for (int d : dims) {
      out.write(d >>> 24);
      out.write(d >>> 16);
      out.write(d >>> 8);
      out.write(d);
    }
    out.writeBytes(data);
    return out.toByteArray();
  }

  static byte[] gzip(byte[] raw) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
      gz.write(raw);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /** {@code n} 28x28 images whose pixel (y, x) of image i is (i * 7 + y * 28 + x) % 256. */
  static byte[] images(int n) {
    byte[] d = new byte[n * 784];
    for (int i = 0; i < n; i++) for (int p = 0; p < 784; p++) d[i * 784 + p] = (byte) ((i * 7 + p) % 256);
    return idx(new int[] {n, 28, 28}, d);
  }

  /** {@code n} labels i % 10. */
  static byte[] labels(int n) {
    byte[] d = new byte[n];
    for (int i = 0; i < n; i++) d[i] = (byte) (i % 10);
    return idx(new int[] {n}, d);
  }
}
