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
  /** Columns per task of the packed product when there are enough row blocks to spread. */
  private static final int COL_GROUP = 256;
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
    run(kernels(), a, b, m, n, k, dequantizeSink(aZero, aScale, bRowSum, bScale, bias, out, n, k));
  }

  /** {@link #gemmDequantize} with B packed once ({@link #panels}): the same bits. */
  public static void gemmDequantize(byte[] a, int aZero, float aScale, Panels b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m) {
    check(a, b.n * b.k, m, b.n, b.k);
    runPacked(kernels(), a, b, m, dequantizeSink(aZero, aScale, bRowSum, bScale, bias, out, b.n, b.k));
  }

  /**
   * The dequantizing epilogue. When {@code acc[i, j] - aZero * bRowSum[j]} cannot leave the int range
   * ({@code |acc| <= 2^14 k}), an int converts to the same float as the long of the same value, so the loop runs in
   * int with the per-column terms hoisted (and C2 vectorizes it): the same bits as the long form, which stays for the
   * rest (long k with a large zero point).
   */
  private static TileSink dequantizeSink(int aZero, float aScale, int[] bRowSum, float[] bScale, float[] bias,
      float[] out, int n, int k) {
    long maxCorr = 0;
    for (int j = 0; j < n; j++) maxCorr = Math.max(maxCorr, Math.abs((long) aZero * bRowSum[j]));
    if ((long) k * 16384 + maxCorr > Integer.MAX_VALUE) {
      return (tile, acc, ld) -> {
        for (int r = 0; r < tile.rows; r++) {
          int o = (tile.i0 + r) * n;
          for (int j = tile.j0; j < tile.j1; j++) {
            float v = (acc[r * ld + j - tile.j0] - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
            out[o + j] = bias == null ? v : v + bias[j];
          }
        }
      };
    }
    int[] corr = new int[n];
    float[] scale = new float[n];
    float[] add = bias;
    for (int j = 0; j < n; j++) {
      corr[j] = aZero * bRowSum[j];
      scale[j] = aScale * bScale[j];
    }
    return (tile, acc, ld) -> {
      int w = tile.j1 - tile.j0;
      for (int r = 0; r < tile.rows; r++) {
        int o = (tile.i0 + r) * n + tile.j0;
        int c = r * ld;
        int j0 = tile.j0;
        if (bias == null) {
          for (int j = 0; j < w; j++) out[o + j] = (acc[c + j] - corr[j0 + j]) * scale[j0 + j];
        } else {
          for (int j = 0; j < w; j++) out[o + j] = (acc[c + j] - corr[j0 + j]) * scale[j0 + j] + add[j0 + j];
        }
      }
    };
  }

  /**
   * B [n, k] packed into {@link Int8Kernels#panelDot}'s panels of {@code width} output channels
   * ({@link #packPanels}), made once per weight: {@link #panels}.
   */
  public record Panels(byte[] data, int n, int k, int width) {}

  /** The panels of the current kernels for a weight, packed on first use and kept in it. */
  public static Panels panels(dev.ember.backend.Int8Matrix b) {
    Int8Kernels kern = kernels();
    return b.derived(Panels.class, w -> new Panels(packPanels(w.data(), w.rows(), w.cols(), kern.panelWidth()),
        w.rows(), w.cols(), kern.panelWidth()));
  }

  /**
   * Int8 output: the float32 value above (bias included) requantized as {@code quantize_per_tensor} does,
   * {@code clamp(rint(v * (1f / outScale)) + outZero, outMin, outMax)}, stored as bytes (quint8 as its low 8 bits).
   */
  public static void gemmRequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int n, int k) {
    check(a, b, m, n, k);
    run(kernels(), a, b, m, n, k, requantizeSink(aZero, aScale, bRowSum, bScale, bias, outScale, outZero, outMin,
        outMax, out, n, k));
  }

  /** {@link #gemmRequantize} with B packed once ({@link #panels}): the same bits. */
  public static void gemmRequantize(byte[] a, int aZero, float aScale, Panels b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m) {
    check(a, b.n * b.k, m, b.n, b.k);
    runPacked(kernels(), a, b, m, requantizeSink(aZero, aScale, bRowSum, bScale, bias, outScale, outZero, outMin,
        outMax, out, b.n, b.k));
  }

  /**
   * The requantizing epilogue: the kernels' {@link Int8Kernels#requantizeColumns} when {@code acc - aZero *
   * bRowSum[j]} cannot leave the int range (as {@link #dequantizeSink}), the long form otherwise: the same bits.
   */
  private static TileSink requantizeSink(int aZero, float aScale, int[] bRowSum, float[] bScale, float[] bias,
      float outScale, int outZero, int outMin, int outMax, byte[] out, int n, int k) {
    float inv = 1.0f / outScale;
    if ((long) k * 16384 + maxCorrection(aZero, bRowSum, n) > Integer.MAX_VALUE) {
      return (tile, acc, ld) -> {
        for (int r = 0; r < tile.rows; r++) {
          int o = (tile.i0 + r) * n;
          for (int j = tile.j0; j < tile.j1; j++) {
            float v = (acc[r * ld + j - tile.j0] - (long) aZero * bRowSum[j]) * (aScale * bScale[j]);
            if (bias != null) v += bias[j];
            double q = Math.rint(v * inv) + outZero;
            out[o + j] = (byte) (q <= outMin ? outMin : q >= outMax ? outMax : (int) q);
          }
        }
      };
    }
    int[] corr = new int[n];
    float[] scale = new float[n];
    for (int j = 0; j < n; j++) {
      corr[j] = aZero * bRowSum[j];
      scale[j] = aScale * bScale[j];
    }
    Int8Kernels kern = kernels();
    return (tile, acc, ld) -> {
      for (int r = 0; r < tile.rows; r++) {
        kern.requantizeColumns(acc, r * ld, tile.j1 - tile.j0, corr, scale, bias, tile.j0, inv, outZero, outMin, outMax,
            out, (tile.i0 + r) * n + tile.j0);
      }
    };
  }

  /** Output channels (rows of W) per task of {@link #convRequantize}. */
  private static final int CONV_ROWS = 64;
  /** Columns (output pixels) per task of {@link #convRequantize}, a multiple of every panel width. */
  private static final int CONV_COLS = 256;

  /**
   * The convolution's orientation, for few output channels: W [n, k] (rows are output channels, widened to floats
   * once per weight and kept in it) times the im2col columns X [k, m] (k-major: row p holds the p-th patch element of
   * every output pixel), requantized per ROW: {@code v = (acc[j, i] - xZero * wRowSum[j]) * (xScale * wScale[j]) +
   * bias[j]}, {@code clamp(rint(v * (1f / outScale)) + outZero, outMin, outMax)}, the same bits as
   * {@link #gemmRequantize} of X^T and W (the sums are exact; the float products are commutative). Column
   * {@code i = b * plane + p} is stored at {@code out[outOff + b * imageStride + j * plane + p]}: NCHW directly.
   * Each task packs its panels of {@code panelWidth()} pixels of X into a buffer of its thread (contiguous
   * copies: X is k-major) just before it multiplies them.
   */
  public static void convRequantize(dev.ember.backend.Int8Matrix w, int[] wRowSum, float[] wScale, float[] bias,
      byte[] x, int xZero, float xScale, float outScale, int outZero, int outMin, int outMax, byte[] out, int m,
      int plane, int outOff, int imageStride) {
    int n = w.rows();
    int k = w.cols();
    if (m < 0 || (long) m * k > x.length || k > MAX_K || plane < 1) {
      throw new IllegalArgumentException("int8 conv gemm: operands do not match (n=" + n + ", k=" + k + ", m=" + m
          + ", plane=" + plane + ", k <= " + MAX_K + "): x=" + x.length + " bytes");
    }
    if (m == 0 || n == 0) return;
    Int8Kernels kern = kernels();
    int pw = kern.panelWidth();
    float[] wf = w.derived(float[].class, mat -> {
      byte[] d = mat.data();
      float[] f = new float[d.length];
      for (int i = 0; i < d.length; i++) f[i] = d[i];
      return f;
    });
    int cols = Math.max(pw, CONV_COLS / pw * pw);
    int colGroups = (m + cols - 1) / cols;
    int rowBlocks = (n + CONV_ROWS - 1) / CONV_ROWS;
    float inv = 1.0f / outScale;
    boolean wide = (long) k * 16384 + maxCorrection(xZero, wRowSum, n) > Integer.MAX_VALUE;
    forEach(work(m, n, k) < INLINE_WORK, rowBlocks * colGroups, t -> {
      int r0 = (t / colGroups) * CONV_ROWS;
      int rows = Math.min(CONV_ROWS, n - r0);
      int i0 = (t % colGroups) * cols;
      int i1 = Math.min(m, i0 + cols);
      int ld = (i1 - i0 + pw - 1) / pw * pw;
      Scratch sc = SCRATCH.get();
      int[] acc = sc.ints(rows * ld);
      byte[] xp = sc.bytes(k * pw);
      for (int i = i0; i < i1; i += pw) {   // each task packs its panels of X, one at a time, while they are hot
        int len = Math.min(pw, m - i);
        if (len < pw) java.util.Arrays.fill(xp, (byte) 0);
        for (int p = 0; p < k; p++) System.arraycopy(x, p * m + i, xp, p * pw, len);
        kern.panelDot(wf, r0 * k, rows, k, xp, 0, acc, i - i0, ld);
      }
      for (int r = 0; r < rows; r++) {
        int j = r0 + r;
        float s = xScale * wScale[j];
        float add = bias == null ? 0f : bias[j];
        int b = i0 / plane;
        int p = i0 - b * plane;
        int o = outOff + b * imageStride + j * plane;
        int c = r * ld;
        if (wide) {
          long corr = (long) xZero * wRowSum[j];
          for (int i = i0; i < i1; i++, c++) {
            float v = (acc[c] - corr) * s;
            if (bias != null) v += add;
            double qv = Math.rint(v * inv) + outZero;
            out[o + p] = (byte) (qv <= outMin ? outMin : qv >= outMax ? outMax : (int) qv);
            if (++p == plane) {
              p = 0;
              o += imageStride;
            }
          }
          continue;
        }
        int corr = xZero * wRowSum[j];
        for (int i = i0; i < i1; ) {   // runs of columns inside one image
          int len = Math.min(i1 - i, plane - p);
          kern.requantizeRow(acc, c, len, corr, s, add, bias != null, inv, outZero, outMin, outMax, out, o + p);
          i += len;
          c += len;
          p += len;
          if (p == plane) {
            p = 0;
            o += imageStride;
          }
        }
      }
    });
  }

  private static long maxCorrection(int zero, int[] rowSum, int n) {
    long max = 0;
    for (int j = 0; j < n; j++) max = Math.max(max, Math.abs((long) zero * rowSum[j]));
    return max;
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
    runPacked(kern, a, new Panels(packPanels(b, n, k, w), n, k, w), m, sink);
  }

  /**
   * The packed product: one task per block of {@link #ROW_BLOCK} rows and group of columns (whole panels), which
   * widens its rows of A to floats once and runs every panel of its group over them.
   */
  private static void runPacked(Int8Kernels kern, byte[] a, Panels bp, int m, TileSink sink) {
    int n = bp.n;
    int k = bp.k;
    int w = bp.width;
    if (m == 0 || n == 0) return;
    int rowBlocks = (m + ROW_BLOCK - 1) / ROW_BLOCK;
    // few row blocks: narrower column groups, so both threads get work
    int colGroup = w * Math.max(1, (rowBlocks >= 4 ? COL_GROUP : COL_BLOCK) / w);
    forEach(work(m, n, k) < INLINE_WORK, tasks(m, n, colGroup), t -> {
      Tile tile = tile(t, m, n, colGroup);
      Scratch sc = SCRATCH.get();
      float[] af = sc.floats(tile.rows * k);
      int a0 = tile.i0 * k;
      for (int e = 0, end = tile.rows * k; e < end; e++) af[e] = a[a0 + e];
      int ld = (tile.j1 - tile.j0 + w - 1) / w * w;   // whole panels: the last one's padding columns are computed too
      int[] acc = sc.ints(tile.rows * ld);
      for (int j = tile.j0; j < tile.j1; j += w) {
        kern.panelDot(af, 0, tile.rows, k, bp.data, (j / w) * k * w, acc, j - tile.j0, ld);
      }
      sink.accept(tile, acc, ld);
    });
  }

  /** Per-thread buffers of the packed product's tasks (A's rows widened, the tile's int32 sums), grown on demand. */
  private static final class Scratch {
    private float[] floats = new float[0];
    private int[] ints = new int[0];
    private byte[] bytes = new byte[0];

    byte[] bytes(int n) {
      if (bytes.length < n) bytes = new byte[n];
      return bytes;
    }

    float[] floats(int n) {
      if (floats.length < n) floats = new float[n];
      return floats;
    }

    int[] ints(int n) {
      if (ints.length < n) ints = new int[n];
      return ints;
    }
  }

  private static final ThreadLocal<Scratch> SCRATCH = ThreadLocal.withInitial(Scratch::new);

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
    check(a, b.length, m, n, k);
  }

  private static void check(byte[] a, int bBytes, int m, int n, int k) {
    if (m < 0 || n < 0 || k < 0 || k > MAX_K || (long) m * k > a.length || (long) n * k > bBytes) {
      throw new IllegalArgumentException("int8 gemm: operands do not match (m=" + m + ", n=" + n + ", k=" + k
          + ", k <= " + MAX_K + "): a=" + a.length + " bytes, b=" + bBytes + " bytes");
    }
  }
}
