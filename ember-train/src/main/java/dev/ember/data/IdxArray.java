package dev.ember.data;

import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * The unsigned-byte array of one IDX file ({@link Idx#read}): its dims and its elements, either
 * memory-mapped or on the heap. Immutable and safe to share between threads.
 */
public final class IdxArray {
  private static final int CHUNK = 1 << 16;
  private final Path file;
  private final int[] dims;
  private final ByteBuffer data; // read-only, position 0, limit = numel

  IdxArray(Path file, int[] dims, ByteBuffer data) {
    this.file = file;
    this.dims = dims;
    this.data = data;
  }

  /** The file it was read from. */
  public Path file() {
    return file;
  }

  /** The dims, outermost first (e.g. [60000, 28, 28]). */
  public int[] dims() {
    return dims.clone();
  }

  /** The number of elements. */
  public int numel() {
    return data.limit();
  }

  /** Element {@code i} (row-major) as an int in 0..255. */
  public int get(int i) {
    if (i < 0 || i >= data.limit()) {
      throw new IndexOutOfBoundsException("IdxArray.get: index " + i + " out of range for " + data.limit() + " elements");
    }
    return data.get(i) & 0xff;
  }

  /** Copies elements {@code [from, from + length)} into {@code dst} at {@code at}. */
  public void copyTo(int from, byte[] dst, int at, int length) {
    data.get(from, dst, at, length);
  }

  /**
   * The elements as F32 images {@code [N, 1, H, W]} in [0, 1] ({@code v / 255f}, as torchvision);
   * the file must hold {@code [N, H, W]}.
   */
  public Tensor toImages() throws DataFormatException {
    return toImages(1);
  }

  /** {@link #toImages()} converting on {@code threads} threads (the caller's among them). */
  Tensor toImages(int threads) throws DataFormatException {
    if (dims.length != 3) {
      throw DataFormatException.at("idx", file, 3, "expected images [N, H, W] (3 dims), got " + dims.length + " dims "
          + Arrays.toString(dims));
    }
    float[] o = new float[Math.toIntExact((long) dims[0] * dims[1] * dims[2])];
    Tensor out = TensorData.wrap(o, dims[0], 1, dims[1], dims[2]);
    if (threads <= 1 || o.length < 2 * CHUNK) {
      convert(0, o.length, o);
      return out;
    }
    int half = o.length / 2;
    Thread helper = new Thread(() -> convert(half, o.length, o), "ember-idx-convert");
    helper.setDaemon(true);
    helper.start();
    convert(0, half, o);
    try {
      helper.join();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("IdxArray.toImages: interrupted", e);
    }
    return out;
  }

  /** {@code dst[i] = data[i] / 255f} for i in [from, to). */
  private void convert(int from, int to, float[] dst) {
    byte[] buf = new byte[CHUNK];
    for (int done = from; done < to; ) {
      int n = Math.min(CHUNK, to - done);
      data.get(done, buf, 0, n);
      scale(buf, 0, n, dst, done);
      done += n;
    }
  }

  /** {@code dst[i] = src[i] / 255f} for i in [from, to). */
  static void scale(byte[] src, int from, int to, float[] dst) {
    scale(src, from, to - from, dst, from);
  }

  private static void scale(byte[] src, int from, int n, float[] dst, int at) {
    for (int k = 0; k < n; k++) dst[at + k] = ToTensor.scale(src[from + k]);
  }

  /** The elements as I64 class labels {@code [N]}; the file must hold {@code [N]}. */
  public Tensor toLabels() throws DataFormatException {
    if (dims.length != 1) {
      throw DataFormatException.at("idx", file, 3, "expected labels [N] (1 dim), got " + dims.length + " dims "
          + Arrays.toString(dims));
    }
    long[] o = new long[dims[0]];
    for (int i = 0; i < o.length; i++) o[i] = data.get(i) & 0xff;
    return TensorData.wrap(o, dims[0]);
  }

  @Override
  public String toString() {
    return "IdxArray(" + file + ", dims=" + Arrays.toString(dims) + (data.isDirect() ? ", mapped" : "") + ")";
  }
}
