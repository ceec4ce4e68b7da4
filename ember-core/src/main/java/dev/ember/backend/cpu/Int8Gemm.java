package dev.ember.backend.cpu;

import java.util.function.IntConsumer;
import java.util.logging.Logger;

/**
 * int8 x int8 -&gt; int32 matrix products for quantized inference, with the int32 result turned into float32
 * (dequantized) or int8 (requantized) tile by tile in the output loop, so no m x n int32 matrix is stored.
 * {@code a} is [m, k] (activations, signed int8 with zero point {@code aZero}); {@code b} is [n, k] (weights,
 * signed int8, symmetric: zero point 0, one scale per row/output channel); the real product is
 * {@code (acc[i, j] - aZero * bRowSum[j]) * aScale * bScale[j]}, where {@code bRowSum[j] = sum_p b[j, p]}
 * (fbgemm's column-offset correction: the zero point is not subtracted inside the loop).
 * The Vector API kernels are used when {@code jdk.incubator.vector} is readable (and
 * {@code -Dember.kernels=scalar} is not set); results are the same bit for bit either way.
 */
public final class Int8Gemm {
  private static final Logger LOG = Logger.getLogger("dev.ember");
  private static final String VECTOR_KERNELS = "dev.ember.backend.cpu.vector.VectorInt8Kernels";
  /** Rows of A per task. */
  private static final int ROW_BLOCK = 16;
  /** Columns of C per task (columns are output channels: 64 weight rows stay in L1/L2 while the rows stream). */
  private static final int COL_BLOCK = 64;
  /** |a * b| &lt;= 2^14, so a sum of k products fits in int32 for k &lt;= 2^16 (2^30). */
  public static final int MAX_K = dev.ember.backend.Backend.INT8_MAX_K;
  /** From this many rows of A on, A is widened and B packed once per product ({@link Int8Kernels#panelDot}). */
  static final int PACK_MIN_ROWS = 8;
  /** Products of fewer multiply-adds (m n k) run on the calling thread. */
  static final long INLINE_WORK = 1 << 18;
  private static volatile Int8Kernels instance;

  private Int8Gemm() {}

  /** The kernels in use (vector or scalar). */
  public static Int8Kernels kernels() {
    Int8Kernels k = instance;
    if (k == null) {
      synchronized (Int8Gemm.class) {
        k = instance;
        if (k == null) {
          k = choose();
          instance = k;
        }
      }
    }
    return k;
  }

  /** The Vector API kernels, or null when the module is not readable. */
  public static Int8Kernels vectorKernelsOrNull() {
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return null;
    try {
      return (Int8Kernels) Class.forName(VECTOR_KERNELS).getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException | LinkageError e) {
      LOG.warning("ember: could not load the Vector API int8 kernels (" + e + "); using scalar ones");
      return null;
    }
  }

  private static Int8Kernels choose() {
    if ("scalar".equals(System.getProperty("ember.kernels"))) return new ScalarInt8Kernels();
    Int8Kernels v = vectorKernelsOrNull();
    return v == null ? new ScalarInt8Kernels() : v;
  }

  /** The raw int32 product C [m, n] = A [m, k] B^T. */
  public static int[] gemm(Int8Kernels kern, byte[] a, byte[] b, int m, int n, int k) {
    check(a, b, m, n, k);
    int[] c = new int[m * n];
    run(kern, a, b, m, n, k, (tile, acc, ld) -> {
      for (int r = 0; r < tile.rows; r++) {
        System.arraycopy(acc, r * ld, c, (tile.i0 + r) * n + tile.j0, tile.j1 - tile.j0);
      }
    });
    return c;
  }

  /**
   * Float32 output: {@code out[i, j] = (acc[i, j] - aZero * bRowSum[j]) * (aScale * bScale[j]) + bias[j]}
   * ({@code bias} may be null).
   */
  public static void gemmDequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m, int n, int k) {
    check(a, b, m, n, k);
    run(kernels(), a, b, m, n, k, (tile, acc, ld) -> {
      for (int r = 0; r < tile.rows; r++) {
        int o = (tile.i0 + r) * n;
        for (int j = tile.j0; j < tile.j1; j++) {
          float v = (acc[r * ld + j - tile.j0] - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
          out[o + j] = bias == null ? v : v + bias[j];
        }
      }
    });
  }

  /**
   * Int8 output: the float32 value above (bias included) requantized as {@code quantize_per_tensor} does,
   * {@code clamp(rint(v * (1f / outScale)) + outZero, outMin, outMax)}, stored as bytes (quint8 as its low 8 bits).
   */
  public static void gemmRequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int n, int k) {
    check(a, b, m, n, k);
    float inv = 1.0f / outScale;
    run(kernels(), a, b, m, n, k, (tile, acc, ld) -> {
      for (int r = 0; r < tile.rows; r++) {
        int o = (tile.i0 + r) * n;
        for (int j = tile.j0; j < tile.j1; j++) {
          float v = (acc[r * ld + j - tile.j0] - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
          if (bias != null) v += bias[j];
          double q = Math.rint(v * inv) + outZero;
          out[o + j] = (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
        }
      }
    });
  }

  /**
   * B [n, k] packed for {@link Int8Kernels#panelDot}: panel {@code q} holds output channels
   * {@code [q w, q w + w)} k-major, {@code bp[(q k + p) w + c] = b[(q w + c) k + p]}, zero past channel n.
   */
  public static byte[] packPanels(byte[] b, int n, int k, int w) {
    int panels = (n + w - 1) / w;
    byte[] bp = new byte[panels * k * w];
    for (int q = 0; q < panels; q++) packPanel(b, n, k, w, q, bp);
    return bp;
  }

  private static void packPanel(byte[] b, int n, int k, int w, int q, byte[] bp) {
    int base = q * k * w;
    for (int c = 0; c < w && q * w + c < n; c++) {
      int bo = (q * w + c) * k;
      for (int p = 0; p < k; p++) bp[base + p * w + c] = b[bo + p];
    }
  }

  /** The epilogue of one tile: {@code acc[r * ld + (j - j0)]} holds C[i0 + r, j] for the tile's rows and columns. */
  private interface TileSink {
    void accept(Tile tile, int[] acc, int ld);
  }

  /**
   * Computes C tile by tile, in parallel unless the product is small (then on the calling thread: handing a few
   * microseconds of work to the pool costs more than it saves), and hands each tile to {@code sink}. From
   * {@link #PACK_MIN_ROWS} rows on, A is widened to floats and B packed into panels once per call
   * ({@link Int8Kernels#panelDot}); fewer rows use {@link Int8Kernels#dotBlock} on B as stored. Every path sums
   * exactly, so the bits do not depend on the path or the thread count.
   */
  private static void run(Int8Kernels kern, byte[] a, byte[] b, int m, int n, int k, TileSink sink) {
    if (m == 0 || n == 0) return;
    boolean inline = work(m, n, k) < INLINE_WORK;
    if (m < PACK_MIN_ROWS || k == 0) {
      int tasks = tasks(m, n, COL_BLOCK);
      IntConsumer body = t -> {
        int[] acc = new int[ROW_BLOCK * COL_BLOCK];
        Tile tile = tile(t, m, n, COL_BLOCK);
        kern.dotBlock(a, tile.i0, tile.rows, b, tile.j0, tile.j1, k, acc, COL_BLOCK);
        sink.accept(tile, acc, COL_BLOCK);
      };
      forEach(inline, tasks, body);
      return;
    }
    int w = kern.panelWidth();
    int colBlock = w * Math.max(1, COL_BLOCK / w);
    int panels = (n + w - 1) / w;
    byte[] bp = new byte[panels * k * w];
    float[] af = new float[m * k];
    int rowChunks = (m + ROW_BLOCK - 1) / ROW_BLOCK;
    forEach(inline, panels + rowChunks, t -> {
      if (t < panels) {
        packPanel(b, n, k, w, t, bp);
      } else {
        int i0 = (t - panels) * ROW_BLOCK;
        int end = Math.min(m, i0 + ROW_BLOCK) * k;
        for (int e = i0 * k; e < end; e++) af[e] = a[e];
      }
    });
    forEach(inline, tasks(m, n, colBlock), t -> {
      int[] acc = new int[ROW_BLOCK * colBlock];
      Tile tile = tile(t, m, n, colBlock);
      for (int j = tile.j0; j < tile.j1; j += w) {
        kern.panelDot(af, tile.i0 * k, tile.rows, k, bp, (j / w) * k * w, acc, j - tile.j0, colBlock);
      }
      sink.accept(tile, acc, colBlock);
    });
  }

  private static void forEach(boolean inline, int tasks, IntConsumer body) {
    if (inline) {
      for (int t = 0; t < tasks; t++) body.accept(t);
    } else {
      Parallel.forEach(tasks, body);
    }
  }

  private static long work(int m, int n, int k) {
    return (long) m * n * Math.max(k, 1);
  }

  private record Tile(int i0, int rows, int j0, int j1) {}

  private static int tasks(int m, int n, int colBlock) {
    return ((m + ROW_BLOCK - 1) / ROW_BLOCK) * ((n + colBlock - 1) / colBlock);
  }

  private static Tile tile(int t, int m, int n, int colBlock) {
    int colBlocks = (n + colBlock - 1) / colBlock;
    int i0 = (t / colBlocks) * ROW_BLOCK;
    int j0 = (t % colBlocks) * colBlock;
    return new Tile(i0, Math.min(ROW_BLOCK, m - i0), j0, Math.min(n, j0 + colBlock));
  }

  private static void check(byte[] a, byte[] b, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0 || k > MAX_K || (long) m * k > a.length || (long) n * k > b.length) {
      throw new IllegalArgumentException("int8 gemm: operands do not match (m=" + m + ", n=" + n + ", k=" + k
          + ", k <= " + MAX_K + "): a=" + a.length + " bytes, b=" + b.length + " bytes");
    }
  }
}
