package dev.ember.data;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorData;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads the IDX format of MNIST and Fashion-MNIST: two zero bytes, an element type ({@code 0x08}:
 * unsigned byte), the number of dims, each dim as a big-endian 32-bit integer, then the elements
 * in row-major order. Files may be raw or gzip-compressed (recognised by the gzip magic).
 *
 * <p>Everything is checked before the data is allocated: the magic, the type, the dims (each below
 * 2^31, their product within {@link #MAX_ELEMENTS}), and the data size. A raw file must hold
 * exactly the header plus the declared elements; raw files of at least {@link #MAP_THRESHOLD}
 * bytes are memory-mapped instead of copied. A gzip file's declared size must be one deflate can
 * produce from the file's compressed size (at most about 1032:1), and the stream must hold exactly
 * that many bytes. The data array is allocated before inflating only when the declared size is
 * plausible (at most {@link #TRUSTED_RATIO} times the compressed size, and equal to the size in
 * the gzip trailer); otherwise the stream is inflated once without keeping it to prove its length,
 * so a small file that lies cannot make the reader allocate much. Problems throw
 * {@link DataFormatException} naming the file and the byte offset (of the decompressed data).
 */
public final class Idx {
  private Idx() {}

  /** Most elements one file may declare: what one tensor can hold. */
  public static final long MAX_ELEMENTS = Integer.MAX_VALUE - 64;

  /** Raw files at least this large are memory-mapped rather than read onto the heap. */
  public static final long MAP_THRESHOLD = 1 << 20;

  /** Deflate's best ratio is about 1032:1; a gzip file declaring more is corrupt or a decompression bomb. */
  static final long MAX_DEFLATE_RATIO = 1032;

  private static final String FORMAT = "idx";

  /** Data declaring at most this ratio to its compressed size (and a matching trailer) is allocated before inflating. */
  static final long TRUSTED_RATIO = 32;

  /** Bytes inflated between two {@link Progress#filled} calls. */
  private static final int PROGRESS_CHUNK = 1 << 20;

  /** The array in {@code file} (raw or gzip). */
  public static IdxArray read(Path file) throws IOException {
    long size = Files.size(file);
    byte[] head = new byte[2];
    int got;
    try (InputStream in = Files.newInputStream(file)) {
      got = in.readNBytes(head, 0, 2);
    }
    boolean gzip = got == 2 && (head[0] & 0xff) == 0x1f && (head[1] & 0xff) == 0x8b;
    if (!gzip && file.getFileName().toString().endsWith(".gz")) {
      throw DataFormatException.at(FORMAT, file, 0, "named .gz but not gzip-compressed: the first bytes are "
          + hex(head, got) + ", not the gzip magic \\x1f\\x8b");
    }
    return gzip ? readGzip(file, size, null) : readRaw(file, size);
  }

  /** Told as a gzip file's data arrives, so work on the first bytes can start while the rest inflates. */
  interface Progress {
    /** The dims are valid and {@code data} (still empty) is where the elements will land. */
    void start(int[] dims, byte[] data);

    /** Elements {@code [from, to)} of {@code data} are final. */
    void filled(int from, int to);
  }

  /**
   * The images of an IDX file holding {@code [N, H, W]}, as F32 {@code [N, 1, H, W]} in [0, 1]
   * ({@code v / 255f}). Same checks as {@link #read}; the conversion runs on a second thread, for
   * a gzip file chunk by chunk while the rest of the file is still inflating.
   */
  public static Tensor readImages(Path file) throws IOException {
    long size = Files.size(file);
    if (!isGzip(file)) {
      IdxArray a = read(file);
      return a.toImages(2);
    }
    ExecutorService converter = Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, "ember-idx-convert");
      t.setDaemon(true);
      return t;
    });
    try {
      Tensor[] out = new Tensor[1];
      List<Future<?>> parts = new ArrayList<>();
      IdxArray a = readGzip(file, size, new Progress() {
        float[] dst;
        byte[] src;

        @Override
        public void start(int[] dims, byte[] data) {
          if (dims.length != 3) return; // toImages below reports it
          dst = new float[Math.toIntExact((long) dims[0] * dims[1] * dims[2])];
          out[0] = TensorData.wrap(dst, dims[0], 1, dims[1], dims[2]);
          src = data;
        }

        @Override
        public void filled(int from, int to) {
          if (dst != null) parts.add(converter.submit(() -> IdxArray.scale(src, from, to, dst)));
        }
      });
      if (out[0] == null) return a.toImages(); // not 3 dims: throws the DataFormatException
      for (Future<?> f : parts) f.get();
      return out[0];
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("idx: " + file + ": interrupted while converting", e);
    } catch (ExecutionException e) {
      throw new IllegalStateException("idx: " + file + ": converting the images failed", e.getCause());
    } finally {
      converter.shutdownNow();
    }
  }

  private static boolean isGzip(Path file) throws IOException {
    byte[] head = new byte[2];
    try (InputStream in = Files.newInputStream(file)) {
      return in.readNBytes(head, 0, 2) == 2 && (head[0] & 0xff) == 0x1f && (head[1] & 0xff) == 0x8b;
    }
  }

  private static IdxArray readRaw(Path file, long size) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      InputStream in = java.nio.channels.Channels.newInputStream(ch);
      int[] dims = readHeader(in, file, size);
      long header = 4 + 4L * dims.length;
      long numel = numel(dims);
      long data = size - header;
      if (data != numel) {
        throw DataFormatException.at(FORMAT, file, data < numel ? size : header + numel, "dims " + Arrays.toString(dims)
            + " need " + numel + " bytes of data after the " + header + "-byte header, but the file has " + data
            + (data < numel ? " (truncated?)" : " (trailing bytes)"));
      }
      ByteBuffer buf;
      if (size >= MAP_THRESHOLD) {
        buf = ch.map(FileChannel.MapMode.READ_ONLY, header, numel);
      } else {
        byte[] b = new byte[(int) numel];
        ch.position(header);
        ByteBuffer bb = ByteBuffer.wrap(b);
        while (bb.hasRemaining()) {
          if (ch.read(bb) < 0) {
            throw DataFormatException.at(FORMAT, file, header + bb.position(), "ended early (was it changed while being read?)");
          }
        }
        buf = ByteBuffer.wrap(b);
      }
      return new IdxArray(file, dims, buf.asReadOnlyBuffer());
    }
  }

  private static IdxArray readGzip(Path file, long compressed, Progress progress) throws IOException {
    int[] dims;
    try (InputStream in = gunzip(file)) {
      dims = readHeader(in, file, Long.MAX_VALUE);
    } catch (ZipException | EOFException e) {
      throw corrupt(file, 0, e);
    }
    long header = 4 + 4L * dims.length;
    long numel = numel(dims);
    if (numel > MAX_DEFLATE_RATIO * compressed + 1024) {
      throw DataFormatException.at(FORMAT, file, 4, "dims " + Arrays.toString(dims) + " declare " + numel
          + " bytes, more than gzip can produce from this " + compressed + "-byte file (corrupt, or a decompression bomb)");
    }
    // Allocate up front only when the size is plausible twice over: a ratio real data reaches and a
    // gzip trailer that agrees. Otherwise inflate once without keeping anything to prove the
    // length, so a lying file is rejected having cost no memory.
    boolean plausible = numel <= TRUSTED_RATIO * compressed && trailerSize(file) == ((header + numel) & 0xffffffffL);
    if (!plausible) inflate(file, dims, null, null);
    byte[] data = new byte[(int) numel];
    inflate(file, dims, data, progress);
    return new IdxArray(file, dims, ByteBuffer.wrap(data).asReadOnlyBuffer());
  }

  /**
   * Inflates the data after the header into {@code dst} (or, when null, into a scratch buffer),
   * failing unless the stream holds exactly {@code numel(dims)} bytes after the header.
   */
  private static void inflate(Path file, int[] dims, byte[] dst, Progress progress) throws IOException {
    long header = 4 + 4L * dims.length;
    long numel = numel(dims);
    long n = 0;
    try (InputStream in = gunzip(file)) {
      in.readNBytes((int) header); // validated by readHeader already
      byte[] scratch = dst == null ? new byte[1 << 16] : null;
      if (progress != null) progress.start(dims, dst);
      while (n < numel) {
        int want = (int) Math.min(dst == null ? scratch.length : PROGRESS_CHUNK, numel - n);
        int r = dst == null ? in.readNBytes(scratch, 0, want) : in.readNBytes(dst, (int) n, want);
        if (r <= 0) break;
        if (progress != null) progress.filled((int) n, (int) n + r);
        n += r;
      }
      if (n < numel) {
        throw DataFormatException.at(FORMAT, file, header + n, "decompressed data ends after " + n + " of the " + numel
            + " bytes that dims " + Arrays.toString(dims) + " declare (truncated?)");
      }
      if (in.read() >= 0) {
        throw DataFormatException.at(FORMAT, file, header + n, "decompressed data is longer than the " + numel
            + " bytes that dims " + Arrays.toString(dims) + " declare (trailing bytes)");
      }
    } catch (ZipException | EOFException e) {
      throw corrupt(file, header + n, e);
    }
  }

  private static InputStream gunzip(Path file) throws IOException {
    InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
    try {
      return new GZIPInputStream(raw, 1 << 16);
    } catch (IOException | RuntimeException e) {
      raw.close();
      throw e;
    }
  }

  private static DataFormatException corrupt(Path file, long at, IOException e) {
    return DataFormatException.at(FORMAT, file, -1, "corrupt gzip data after " + at + " decompressed bytes ("
        + e.getMessage() + ")", e);
  }

  /** The gzip trailer's ISIZE: the uncompressed size mod 2^32 (of the last member), or -1 if unreadable. */
  private static long trailerSize(Path file) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
      long size = ch.size();
      if (size < 18) return -1;
      ByteBuffer b = ByteBuffer.allocate(4).order(java.nio.ByteOrder.LITTLE_ENDIAN);
      while (b.hasRemaining()) {
        if (ch.read(b, size - 4 + b.position()) < 0) return -1;
      }
      return b.getInt(0) & 0xffffffffL;
    }
  }

  /**
   * Reads and checks magic, type and dims from a stream at the file's start; {@code size} is the
   * file size (raw) or {@code Long.MAX_VALUE} (compressed, size unknown).
   */
  private static int[] readHeader(InputStream in, Path file, long size) throws IOException {
    if (size < 4) throw DataFormatException.at(FORMAT, file, 0, "file is " + size + " bytes, too short for the 4-byte magic");
    byte[] m = readN(in, 4, file, 0, "the 4-byte magic");
    if (m[0] != 0 || m[1] != 0) {
      throw DataFormatException.at(FORMAT, file, 0, "not an IDX file: the first bytes are " + hex(m, 4)
          + ", not two zero bytes, a type and a rank");
    }
    int type = m[2] & 0xff;
    if (type != 0x08) {
      String name = switch (type) {
        case 0x09 -> "signed byte";
        case 0x0B -> "int16";
        case 0x0C -> "int32";
        case 0x0D -> "float32";
        case 0x0E -> "float64";
        default -> null;
      };
      throw DataFormatException.at(FORMAT, file, 2, name == null
          ? String.format("unknown element type 0x%02X (IDX types are 0x08, 0x09, 0x0B-0x0E)", type)
          : String.format("element type 0x%02X (%s) is not supported; Ember reads unsigned-byte IDX files (0x08)", type, name));
    }
    int rank = m[3] & 0xff;
    if (rank == 0) throw DataFormatException.at(FORMAT, file, 3, "rank is 0; an IDX array has at least one dim");
    long header = 4 + 4L * rank;
    if (size != Long.MAX_VALUE && header > size) {
      throw DataFormatException.at(FORMAT, file, 3, "rank " + rank + " needs a " + header + "-byte header but the file has "
          + size + " bytes");
    }
    byte[] d = readN(in, 4 * rank, file, 4, "the " + rank + " dims");
    int[] dims = new int[rank];
    long numel = 1;
    for (int k = 0; k < rank; k++) {
      long v = ((d[4 * k] & 0xffL) << 24) | ((d[4 * k + 1] & 0xff) << 16) | ((d[4 * k + 2] & 0xff) << 8) | (d[4 * k + 3] & 0xff);
      if (v > Integer.MAX_VALUE) {
        throw DataFormatException.at(FORMAT, file, 4 + 4L * k, "dim " + k + " is " + v + ", more than " + Integer.MAX_VALUE);
      }
      dims[k] = (int) v;
      numel = v == 0 || numel <= Long.MAX_VALUE / v ? numel * v : Long.MAX_VALUE;
    }
    if (numel > MAX_ELEMENTS) {
      long[] shown = new long[rank];
      for (int k = 0; k < rank; k++) shown[k] = dims[k];
      throw DataFormatException.at(FORMAT, file, 4, "dims " + Arrays.toString(shown) + " hold "
          + (numel == Long.MAX_VALUE ? "more than 2^63" : String.valueOf(numel)) + " elements, more than one tensor holds ("
          + MAX_ELEMENTS + ")");
    }
    return dims;
  }

  static long numel(int[] dims) {
    long n = 1;
    for (int d : dims) n *= d;
    return n;
  }

  private static byte[] readN(InputStream in, int n, Path file, long offset, String what) throws IOException {
    byte[] b = new byte[n];
    int got = in.readNBytes(b, 0, n);
    if (got < n) {
      throw DataFormatException.at(FORMAT, file, offset + got, "ended after " + (offset + got) + " bytes, inside " + what);
    }
    return b;
  }

  static String hex(byte[] b, int n) {
    StringBuilder sb = new StringBuilder();
    for (int i = 0; i < n; i++) sb.append(String.format("\\x%02x", b[i] & 0xff));
    return n == 0 ? "(none)" : sb.toString();
  }
}
