package dev.ember.backend.cpu.vector;

import dev.ember.backend.RowSink;
import dev.ember.backend.cpu.HalfOperand;
import dev.ember.backend.cpu.Parallel;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Packed, cache-blocked SGEMM on the Vector API (same contract as {@code ScalarGemm.sgemm}).
 *
 * <p>Goto-style loops: a KC x NC block of op(B) is packed into NR-wide micro-panels, an MC x KC
 * block of op(A) into MR-row micro-panels (p-major; on AVX2 an A micro-panel of op(A) = A is its 4
 * rows as they are), and an MR x NR register tile accumulates over the K block. Packed buffers are
 * zero-padded to whole tiles so the micro-kernel never needs masks; edge tiles are written back
 * through a scalar path.
 *
 * <p>Determinism: work is split into tasks over fixed blocks of C whose boundaries depend only on
 * m, n and k, and every C element goes through the same K blocking in the same order whichever
 * task owns it, so results are bitwise identical for any {@link Parallel#threads()}.
 */
public final class VectorGemm {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  /**
   * Rows of the register tile, chosen by the register file: with 32 vector registers (AVX-512,
   * ARM NEON/SVE) a 12 x (2 vectors) tile keeps 24 accumulators + 2 B vectors + 1 A broadcast in
   * registers; with 16 (AVX2 and SSE on x86) it is 4 x (2 vectors), see {@link #kernel4}.
   */
  static final int MR = L >= 16 || System.getProperty("os.arch", "").equals("aarch64") ? 12 : 4;
  private static final int NR = 2 * L;
  /** Floats one A^T micro-panel row copy touches: MR rounded up to whole vectors. */
  private static final int ROW_SPAN = (MR + L - 1) / L * L;
  /**
   * K block. AVX-512 (MR = 12): 512, so a B micro-panel (512 x 32 floats, 64 KiB) is read from L2
   * by the A micro-panels of a block; against 256, half the read-modify-write passes over C and
   * half the pack calls: 1 thread on a Zen 4 core, 1024^3 83 -> 90 GFLOP/s, 128 x 6656 x 6656
   * 66 -> 74, the small training shapes unchanged within noise. With MR = 4 on AVX2 (16 KiB B
   * panels) 384 and 512 measured slower than 256.
   */
  private static final int KC = MR == 12 ? 512 : 256;
  /**
   * Floats from one row of a row-packed A micro-panel to the next: KC plus one cache line, so the
   * 12 rows a kernel step reads fall in different L1 sets.
   */
  private static final int AS = KC + 16;
  /**
   * Longest K block of a product one B panel wide with op(A) = A (see {@link #multiplyInPlace}): its packed B
   * panel (up to 512 KiB) stays in L2 while A's rows stream past it once, so K is cut only past this. The
   * short last tile's copy, 8 x (INPLACE_KC + 16) floats, fits in the workspace's aPack (MC x AS).
   */
  private static final int INPLACE_KC = 4096;
  /** Row blocks of B that {@link #rowsOfB} packs at a time: 128 rows of 2048 columns are 1 MiB. */
  private static final int ROWS_B_KC = 128;
  /** op(A) rows (four 12-row tiles), B columns and K for which {@link #rowsOfB} replaces the Goto path. */
  private static final int ROWS_B_MAX_M = 48;
  private static final int ROWS_B_MAX_N = 2048;
  private static final int ROWS_B_MIN_K = 4 * ROWS_B_KC;
  /** Fixed K parts of {@link #rowsOfB}, one per core here; a fixed count keeps the sums' order. */
  private static final int ROWS_B_PARTS = 2;
  /**
   * Narrowest B block (columns) for which {@link #packA} packs op(A) = A p-major with MR = 12 and 16 lanes (else
   * as rows; without 16 lanes there is no in-register transpose, and it is not measured there). Over all of a
   * 1024^3 product's A the transposing pack took 0.28 ms against the row copy's 0.39, but where an A tile meets
   * few B panels the row layout measured faster. One thread, CPU time, builds alternating in one JVM (Intel Xeon
   * model 207, load 10-15): p-major for every width gave 128 x 784 x 128 A B^T -5.5%, 1024 x 1024 x 128 -2.3%,
   * 256^3 -3.5% and -2.9%, 300^3 -0.7%, 128 x 1024 x 256 -3% and -1.3%, 128 x 784 x 256 A B^T +1.7%, 2048 x 1024 x
   * 256 +2.6%; from 512 columns on 512^3 +0.7..1.3%, 128 x 512 x 512 +1%, 1024^3 +2..4%, 2048^3 +1.9%, 128 x 2048
   * x 2048 +1.7..2.9%, 128 x 6656 x 6656 +1.7%.
   */
  static final int PMAJOR_MIN_N = 512;
  /** Largest A block (144 x KC floats, up to 288 KiB) stays in L2 while the B panels stream past it. */
  private static final int MC = 144;
  /**
   * Columns of a B block (KC x NC floats), packed once and reused by all row blocks: see {@link #nc}. 4096 (up to
   * 8 MiB, in L3) where the L2 is smaller than 2 MiB or unknown, 1024 on the Xeon's 2 MiB L2.
   */
  static final int NC = nc(l2Bytes());

  /**
   * The B block's width for a core with {@code l2} bytes of L2 (0: unknown). Where the L2 holds a whole KC x NC block
   * (2 MiB and more: KC x 1024 floats at KC = 512), the block is that wide: packing it leaves it in L2 for the
   * multiply that reads it next, where a 4096-column block (8 MiB) went out to L3 between the pack and its reads.
   * On the Intel Xeon (model 207, L2 2 MiB, 48 KiB L1d), one thread, CPU time, medians of builds alternating in one
   * JVM: 128 x 6656 x 6656 84 -> 96 GFLOP/s, 128 x 2048 x 2048 91 -> 100, 2048^3 120 -> 125, 1024^3 (one block
   * either way) the same; same bits (a C element's K blocks do not depend on the column blocking). Smaller L2s
   * keep 4096 (measured on the Zen 4's 1 MiB, MR = 12) and so does the 4-row AVX2 path (not measured here).
   */
  static int nc(long l2) {
    if (MR != 12 || l2 < 2L << 20) return 4096;
    return (int) Math.min(4096, l2 / (4L * KC) / NR * NR);
  }

  /**
   * This core's L2 in bytes as Linux reports it ({@code /sys/devices/system/cpu/cpu0/cache/index*}: the level-2
   * data or unified cache), or 0 where it cannot be read (another OS, a container without sysfs).
   */
  static long l2Bytes() {
    java.nio.file.Path dir = java.nio.file.Path.of("/sys/devices/system/cpu/cpu0/cache");
    for (int i = 0; i < 8; i++) {
      java.nio.file.Path index = dir.resolve("index" + i);
      try {
        if (!java.nio.file.Files.readString(index.resolve("level")).strip().equals("2")) continue;
        if (java.nio.file.Files.readString(index.resolve("type")).strip().equals("Instruction")) continue;
        return cacheSize(java.nio.file.Files.readString(index.resolve("size")));
      } catch (java.io.IOException | RuntimeException e) {
        return 0;
      }
    }
    return 0;
  }

  /** A sysfs cache size ("2048K", "1M", "512"): bytes, or 0 if it is not one. */
  static long cacheSize(String text) {
    String t = text.strip();
    long unit = 1;
    if (t.endsWith("K")) unit = 1L << 10;
    else if (t.endsWith("M")) unit = 1L << 20;
    else if (t.endsWith("G")) unit = 1L << 30;
    if (unit != 1) t = t.substring(0, t.length() - 1);
    try {
      return Long.parseLong(t) * unit;
    } catch (NumberFormatException e) {
      return 0;
    }
  }
  /** Below this many multiply-adds the pool hand-off costs more than it saves. */
  private static final long SERIAL_WORK = 1L << 18;
  /**
   * Elements of C (256 x 256) up to which a weight gradient of more than two K blocks runs as {@link #allBlocks}.
   * Two threads, per CPU-second against the per-K-block hand-offs (load 8-9): 256 x 2048 x 256 +5.6% / +10%,
   * but 512 x 2048 x 512 -5%, 1024 x 2048 x 256 -4%, 256 x 2048 x 1024 (as rows) -3%.
   */
  private static final int WEIGHT_GRAD_MAX_MN = 1 << 16;
  /** Floats of packed B (8 MiB) up to which a weight gradient's K blocks are all packed at once (see allBlocks). */
  private static final int WEIGHT_GRAD_B_FLOATS = 1 << 21;
  /** Row-split products of at least this many multiply-adds share one packed B (see sharedB). */
  private static final long SHARED_B_WORK = 1L << 24;
  /**
   * Floats of packed B (512 KiB) that a row of micro-tiles sweeps before the next row starts: see
   * {@link #multiply}.
   */
  private static final int B_WINDOW = 1 << 17;
  /** K blocks this short take the window order whatever the size of B: see {@link #multiply}. */
  private static final int WINDOW_KC = 64;

  private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);
  /** Numbers the column-split products, so a thread knows whether its packed A blocks are this product's. */
  private static final java.util.concurrent.atomic.AtomicLong CALLS = new java.util.concurrent.atomic.AtomicLong();
  /**
   * Packed A blocks a thread keeps for the column tasks of one product, at most A_FLOATS floats (2.25 MiB) in all:
   * all eight of the transformer's 256 x 2048 x 1024 weight gradient (g^T x of its second feed-forward layer, two
   * blocks of 132 or 124 rows per K block, 69,712 floats each), which with 1.5 MiB kept five and packed three again
   * for each thread's second column task (two threads, per CPU-second, load 6: +1.9% / +3.3%, same bits).
   */
  private static final int A_SLOTS = 8;
  private static final int A_FLOATS = 9 << 16;

  private VectorGemm() {}

  /** Per-thread packing buffers, grown on demand and reused across calls. */
  private static final class Workspace {
    final float[] aPack = new float[MC * AS + ROW_SPAN];
    final float[] tile = new float[MR * NR];
    /**
     * The packed blocks of op(A) of product {@code aCall} (see {@link #CALLS}) that this thread has packed, for its
     * next column task of the same product: {@code aSlots} of them, block {@code s} (rows from aIc[s], K from aPc[s])
     * in aBlocks[s]. A new product empties the list; see {@link #packedA}.
     */
    long aCall;
    int aSlots;
    int aFloats;
    final int[] aIc = new int[A_SLOTS];
    final int[] aPc = new int[A_SLOTS];
    /** Whether block s is p-major (see packA): a column task narrower than PMAJOR_MIN_N packs rows. */
    final boolean[] aMajor = new boolean[A_SLOTS];
    final float[][] aBlocks = new float[A_SLOTS][];
    float[] bPack = new float[0];

    float[] bPack(int size) {
      return bPack = atLeast(bPack, size);
    }

    /** sharedB's second B block, packed while the first is multiplied (products of 2+ K blocks only). */
    float[] bPackNext = new float[0];

    /** swapped's C^T (n x m floats, up to 4 MiB): the inner product writes it, the transpose back reads it. */
    float[] swapped = new float[0];

    float[] swapped(int size) {
      return swapped = atLeast(swapped, size);
    }

    /** allBlocks' packed B, one buffer per K block (up to WEIGHT_GRAD_B_FLOATS floats in all). */
    float[][] bBlocks = new float[0][];

    float[][] bBlocks(int blocks, int size) {
      if (bBlocks.length < blocks) bBlocks = java.util.Arrays.copyOf(bBlocks, blocks);
      for (int i = 0; i < blocks; i++) bBlocks[i] = atLeast(bBlocks[i] == null ? new float[0] : bBlocks[i], size);
      return bBlocks;
    }

    float[] bPackNext(int size) {
      return bPackNext = atLeast(bPackNext, size);
    }

    /** rowsOfB's partial C of each K part (up to 2 x 48 x 2048 floats, 768 KiB), on the calling thread. */
    float[] partial = new float[0];

    float[] partial(int size) {
      return partial = atLeast(partial, size);
    }

    /** sgemmRows' packed B (its own: a sink may run an sgemm on this thread, which uses bPack). */
    float[] rowsB = new float[0];

    /** sgemmRows' block of C rows, handed to the sink while it is in L2. */
    float[] rowsC = new float[0];

    /** packBT's widened rows of a half B (one panel: NR rows of a K block) and SkinnyGemm's widened block of B. */
    float[] halfRows = new float[0];

    float[] halfRows(int size) {
      return halfRows = atLeast(halfRows, size);
    }

    static float[] atLeast(float[] buf, int size) {
      return buf.length < size ? new float[size] : buf;
    }
  }

  public static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    sgemmHalf(transA, transB, m, n, k, alpha, a, null, aOff, lda, b, null, bOff, ldb, beta, c, cOff, ldc);
  }

  /**
   * {@link #sgemm} with either operand (or both) given as BF16/F16 bits ({@code ah}, {@code bh}; the float array
   * then null), as {@link dev.ember.backend.cpu.FloatKernels#sgemmHalf}: every path runs as for float32 operands,
   * and a half operand is widened where that path reads it, into the same packed panels (packA, packAT, packB,
   * packBT), into the rows a tile of {@link #multiplyInPlace} reads, or into the block of B a SkinnyGemm task reads,
   * so each element of C is the same sum of the same float32 products as on the operands widened first.
   */
  public static void sgemmHalf(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, HalfOperand ah, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb,
      float beta, float[] c, int cOff, int ldc) {
    if (m <= 0 || n <= 0) return;
    if (k <= 0 || alpha == 0) {
      scaleC(m, n, beta, c, cOff, ldc);
      return;
    }
    if (m <= SkinnyGemm.MAX_M) {
      // a few rows (or columns) of a half A: widened whole
      float[] af = ah == null ? a : ah.widen(aOff, transA ? HalfOperand.span(k, m, lda) : HalfOperand.span(m, k, lda));
      SkinnyGemm.sgemm(transA, transB, m, n, k, alpha, af, ah == null ? aOff : 0, lda, b, bh, bOff, ldb, beta,
          c, cOff, ldc);
      return;
    }
    if (transB && !transA && (long) m * (k + n) * 4 < (long) n * k) {
      swapped(m, n, k, alpha, a, ah, aOff, lda, b, bh, bOff, ldb, beta, c, cOff, ldc);
      return;
    }
    if (!transB && MR == 12 && m <= ROWS_B_MAX_M && n <= ROWS_B_MAX_N && k >= ROWS_B_MIN_K && (long) k * n >= 1L << 18) {
      rowsOfB(transA, m, n, k, alpha, a, ah, aOff, lda, b, bh, bOff, ldb, beta, c, cOff, ldc);
      return;
    }
    // Equal K blocks (e.g. 784 -> 4 x 196) avoid a short last block that runs the kernel at low efficiency.
    int kBlocks = (k + KC - 1) / KC;
    if (!transA && n <= NR && MR == 12) kBlocks = (k + INPLACE_KC - 1) / INPLACE_KC;
    int kc = (k + kBlocks - 1) / kBlocks;

    long work = (long) m * n * k;
    int tm = 1;
    int tn = 1;
    int mChunk = m;
    int nChunk = n;
    // Split only where the tasks can run on other threads. Inside a forEach (a GEMM per attention
    // head, the heads spread over the threads) or on one thread, a 128 x 128 x 64 product split in
    // two row tasks packed B twice and ran 64-row tasks of five 12-row tiles and a 4-row edge.
    if (work >= SERIAL_WORK && !Parallel.runsInline()) {
      int want = work < (1L << 24) ? 2 : 4;
      // Splitting N, each task packs its own columns of B and a copy of A; splitting M, the tasks
      // share one packed B block (see sharedB). Row chunks are equal to within 4 rows rather than
      // whole 12-row tiles: at m = 128 on two threads, 72 + 56 rows left one thread 6 tiles and the
      // other 4 and an 8-row edge; 64 + 64 is 5 tiles and a 4-row edge each. Which rows a task
      // owns does not change any C element's sums, so results stay the same bits.
      if (splitsRows(transA, m, n, work)) {
        mChunk = roundUp((m + want - 1) / want, MR == 12 ? 4 : MR);
        tm = (m + mChunk - 1) / mChunk;
      } else {
        nChunk = roundUp((n + want - 1) / want, NR);
        tn = (n + nChunk - 1) / nChunk;
      }
    }
    if (tm > 1 && work < SHARED_B_WORK) {
      // Small products (128 x 784 x 128, the MLP layers at batch 128) take one hand-off: each task
      // packs the B blocks itself. Sharing one packed B costs two hand-offs per K block, a pack and
      // a multiply, and at ~150 us a product those waits cost more than the copy of B they save
      // (128 x 784 x 128 on two threads: 113-167 -> 170-197 GFLOP/s, same bits).
      final int fm = mChunk;
      Parallel.forEach(tm, t -> {
        int i0 = t * fm;
        block(transA, transB, i0, Math.min(m, i0 + fm), 0, n, k, kc, alpha, a, ah, aOff, lda, b, bh, bOff, ldb, beta,
            c, cOff, ldc, true, 0);
      });
      return;
    }
    if (tm > 1) {
      sharedB(transA, transB, m, n, k, kc, mChunk, tm, alpha, a, ah, aOff, lda, b, bh, bOff, ldb, beta, c, cOff, ldc);
      return;
    }
    final int fnChunk = nChunk;
    final boolean fullWidth = tn == 1;
    // Column tasks all pack the same blocks of op(A): a thread that runs two packs each block once (see packedA).
    long call = tn > 1 ? CALLS.incrementAndGet() : 0;
    Parallel.forEach(tn, t -> {
      int j0 = t * fnChunk;
      block(transA, transB, 0, m, j0, Math.min(n, j0 + fnChunk), k, kc, alpha,
          a, ah, aOff, lda, b, bh, bOff, ldb, beta, c, cOff, ldc, fullWidth, call);
    });
  }

  /**
   * Whether a product split over the threads splits C's rows (else its columns): when C is at least as
   * tall as it is wide, and for a weight gradient g^T x (op(A) = A^T) whose tasks pack for themselves,
   * whatever its width. The optimizer updates a weight in equal halves of its elements, that is of its
   * rows, so each core then updates the gradient rows it wrote, and (as the forward's column split of
   * x W^T reads them) the weight rows it reads next. Split by columns, half of every gradient row
   * crossed to the other core, which on this host can cost more than DRAM (see Parallel.forEach):
   * the MNIST MLP at batch 32 (dW 128 x 784 x 32) went from 265K to 283K samples/s, alternating JVMs,
   * and its slow stretches from ~150K to ~240K.
   */
  static boolean splitsRows(boolean transA, int m, int n, long work) {
    return m >= n || (transA && work < SHARED_B_WORK && m >= 8 * MR);
  }

  /**
   * Whether sharedB runs a column block {@code nc} wide as {@link #allBlocks}: a weight gradient g^T x (op(A) =
   * A^T) of more than two K blocks whose C block is at most {@link #WEIGHT_GRAD_MAX_MN} elements, so that a K
   * block's share of the work is short against a hand-off.
   */
  static boolean weightGradAllBlocks(boolean transA, int m, int k, int nc) {
    return transA && MR == 12 && k > 2 * KC && (long) m * nc <= WEIGHT_GRAD_MAX_MN;
  }

  /**
   * op(A) op(B) handed to {@code sink} a block of rows at a time (see {@link dev.ember.backend.cpu.FloatKernels#sgemmRows}), each
   * block computed into a per-thread buffer of about {@link #ROWS_BLOCK} floats that stays in L2 while the
   * sink reads it: a weight gradient dY^T X at batch 32 (2048 x 2048 x 32) is never written to memory, and
   * the optimizer that consumes it reads it from cache. Products of one K block only, the case where the
   * sum is cheap and the memory traffic is the cost; a block of rows runs {@link #multiply} exactly as the
   * full product's row tasks do, and tiling never changes an element's sum, so the bits are sgemm's.
   * Returns false, having done nothing, for the other shapes (more than one K block, SkinnyGemm's, the
   * swapped A B^T): the caller computes the whole product and hands it over.
   */
  public static boolean sgemmRows(boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
      float[] b, int bOff, int ldb, RowSink sink) {
    if (m <= 0 || n <= 0) return true;
    if (k <= 0 || k > KC || m <= SkinnyGemm.MAX_M || (transB && !transA && (long) m * (k + n) * 4 < (long) n * k)) {
      return false;
    }
    int panels = (n + NR - 1) / NR;
    int packed = panels * panelStride(k);
    // Whole tiles of rows, at least one, about ROWS_BLOCK floats: 12 rows of 2048 (96 KiB), 24 of 1024.
    int rows = Math.max(1, ROWS_BLOCK / n / MR) * MR;
    // The rows are cut into one chunk per thread, as sgemm's row split cuts them (see splitsRows), then each
    // chunk into blocks of whole tiles: Parallel gives each thread a contiguous run of tasks, so each thread
    // writes (and the optimizer's sink updates) the rows sgemm's row tasks and the forward's column tasks give
    // it, and no row crosses to the other core. Cut straight into blocks of `rows`, a 128-row weight gradient
    // went 72 + 56 rows on two threads (36-row blocks), 8 rows of every step's weight on the other core.
    // Below SERIAL_WORK one chunk, as sgemm keeps such products on one thread.
    int threads = Parallel.runsInline() || (long) m * n * k < SERIAL_WORK ? 1 : Parallel.threads();
    int chunk = Math.min(m, roundUp((m + threads - 1) / threads, 4));
    int perChunk = (chunk + rows - 1) / rows;
    int blockRows = Math.min(rows, roundUp((chunk + perChunk - 1) / perChunk, MR));
    int chunks = (m + chunk - 1) / chunk;
    if (chunks > 1 && (long) m * n * k < SHARED_B_WORK) {
      // A small product (the MNIST MLP's 128 x 784 weight gradient at batch 32): one task per chunk, each packing
      // B for itself, as sgemm's small row-split products do. A B packed once by the caller is read by the
      // other thread from the caller's cache, every line of it modified there, which on this host can cost
      // more than DRAM (see Parallel.forEach); the second pack reads x, which both threads hold already.
      Parallel.forEach(chunks, q -> {
        Workspace w = WORKSPACE.get();
        float[] own = w.rowsB = Workspace.atLeast(w.rowsB, packed);
        packPart(transB, b, null, bOff, ldb, 0, k, 0, n, panels, 1, 0, own);
        int c1 = Math.min(m, (q + 1) * chunk);
        for (int r0 = q * chunk; r0 < c1; r0 += blockRows) {
          rowBlock(w, transA, r0, Math.min(c1, r0 + blockRows), blockRows, n, k, own, a, aOff, lda, sink);
        }
      });
      return true;
    }
    Workspace ws = WORKSPACE.get();
    float[] bPack = ws.rowsB = Workspace.atLeast(ws.rowsB, packed);
    int packTasks = (long) n * k >= 1L << 16 ? Math.min(4, panels) : 1;
    Parallel.forEach(packTasks, g -> packPart(transB, b, null, bOff, ldb, 0, k, 0, n, panels, packTasks, g, bPack));
    Parallel.forEach(chunks * perChunk, t -> {
      int c0 = t / perChunk * chunk;
      int r0 = c0 + t % perChunk * blockRows;
      int r1 = Math.min(Math.min(m, c0 + chunk), r0 + blockRows);
      if (r0 < r1) rowBlock(WORKSPACE.get(), transA, r0, r1, blockRows, n, k, bPack, a, aOff, lda, sink);
    });
    return true;
  }

  /** Rows r0..r1 of op(A) B (one K block, B packed in {@code bPack}) into the thread's row block, then to the sink. */
  private static void rowBlock(Workspace w, boolean transA, int r0, int r1, int blockRows, int n, int k, float[] bPack,
      float[] a, int aOff, int lda, RowSink sink) {
    float[] block = w.rowsC = Workspace.atLeast(w.rowsC, blockRows * n);
    // C's row r0 lands at block[0]: multiply indexes C by absolute row.
    multiply(w, transA, r0, r1, 0, n, 0, k, bPack, 1f, a, null, aOff, lda, 0f, block, -r0 * n, n, true, 0);
    sink.rows(r0, r1, block, 0);
  }

  /** Floats in one of sgemmRows' row blocks (128 KiB), rounded to whole tiles of rows. */
  private static final int ROWS_BLOCK = 1 << 15;

  /**
   * The row-split schedule: for each KC x NC block of op(B), the panels are packed once into the
   * caller's buffer (by up to {@code tm} tasks, each a run of whole panels), then each of the
   * {@code tm} row chunks multiplies its rows of A against it. Packing B per task instead (each
   * thread streaming all of B) cost ~9% of a 1024^3 product on one thread and more on two, where
   * both copies compete for L3. The next K block is packed into a second buffer by tasks of the
   * same hand-off that multiplies the current one, so a product takes one hand-off (one wait for
   * the slower thread) per K block rather than two: 128 x 6656 x 6656 has 13 K blocks per column
   * block. Every C element still sees the same K blocks in the same order, whichever thread ran
   * which task.
   */
  private static void sharedB(boolean transA, boolean transB, int m, int n, int k, int kcMax, int mChunk, int tm,
      float alpha, float[] a, HalfOperand ah, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb,
      float beta, float[] c, int cOff, int ldc) {
    Workspace ws = WORKSPACE.get();
    for (int jc = 0; jc < n; jc += NC) {
      int nc = Math.min(NC, n - jc);
      int panels = (nc + NR - 1) / NR;
      int packTasks = Math.min(tm, panels);
      int size = panels * panelStride(kcMax);
      float[][] bufs = {ws.bPack(size), k > kcMax ? ws.bPackNext(size) : null};
      final int fjc = jc;
      if (k <= 2 * kcMax) {
        // One or two K blocks: one hand-off, the B parts packed by the tasks that first need them (see BParts).
        int kBlocks = k > kcMax ? 2 : 1;
        BParts parts = new BParts(kBlocks * packTasks);
        Parallel.forEach(tm, t -> {
          int i0 = t * mChunk;
          int i1 = Math.min(m, i0 + mChunk);
          for (int blk = 0, pc = 0; blk < kBlocks; blk++, pc += kcMax) {
            int kc = Math.min(kcMax, k - pc);
            int fpc = pc;
            float[] dst = bufs[blk];
            parts.ready(blk * packTasks, packTasks, t * packTasks / tm,
                g -> packPart(transB, b, bh, bOff, ldb, fpc, kc, fjc, nc, panels, packTasks, g, dst));
            multiply(WORKSPACE.get(), transA, i0, i1, fjc, nc, pc, kc, dst, alpha, a, ah, aOff, lda, beta, c, cOff,
                ldc, true, 0);
          }
        });
        continue;
      }
      int kBlocksAll = (k + kcMax - 1) / kcMax;
      if (weightGradAllBlocks(transA, m, k, nc) && (long) kBlocksAll * size <= WEIGHT_GRAD_B_FLOATS) {
        allBlocks(ws, transB, m, n, k, kcMax, jc, nc, panels, size, kBlocksAll, alpha, a, ah, aOff, lda, b, bh, bOff,
            ldb, beta, c, cOff, ldc);
        continue;
      }
      Parallel.forEach(packTasks, g -> packPart(transB, b, bh, bOff, ldb, 0, Math.min(kcMax, k), fjc, nc, panels,
          packTasks, g, bufs[0]));
      int[] order = interleave(tm, packTasks, Parallel.threads());
      for (int pc = 0, blk = 0; pc < k; pc += kcMax, blk++) {
        int kc = Math.min(kcMax, k - pc);
        int next = pc + kcMax;
        int kcNext = next < k ? Math.min(kcMax, k - next) : 0;
        float[] cur = bufs[blk & 1];
        float[] nxt = bufs[(blk + 1) & 1];
        final int fpc = pc;
        Parallel.forEach(kcNext > 0 ? tm + packTasks : tm, q -> {
          int t = kcNext > 0 ? order[q] : q;
          if (t < tm) {
            int i0 = t * mChunk;
            multiply(WORKSPACE.get(), transA, i0, Math.min(m, i0 + mChunk), fjc, nc, fpc, kc, cur, alpha,
                a, ah, aOff, lda, beta, c, cOff, ldc, true, 0);
          } else {
            packPart(transB, b, bh, bOff, ldb, next, kcNext, fjc, nc, panels, packTasks, t - tm, nxt);
          }
        });
      }
    }
  }

  /**
   * sharedB for a weight gradient g^T x (op(A) = A^T) of more than two K blocks whose packed B fits
   * {@link #WEIGHT_GRAD_B_FLOATS}: every K block of this column block is packed into a buffer of its own, once,
   * by the tasks that first need it (see BParts), and each thread's rows go through all of them in one
   * hand-off, one task per thread so that each thread streams each B block once. The K = 2048 weight gradients
   * of a transformer at B*T = 2048 rows (256..1024 x 2048 x 256..1024) took four hand-offs, one per K block,
   * each a wait for the slower thread (and for a thread the scheduler took away, on a loaded host). Each C
   * element still sums the same K blocks in the same order: same bits on any number of threads.
   */
  private static void allBlocks(Workspace ws, boolean transB, int m, int n, int k, int kcMax, int jc, int nc,
      int panels, int size, int kBlocks, float alpha, float[] a, HalfOperand ah, int aOff, int lda, float[] b,
      HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    int threads = Parallel.threads();
    int chunk = roundUp((m + threads - 1) / threads, MR == 12 ? 4 : MR);
    int tasks = (m + chunk - 1) / chunk;
    int packTasks = Math.min(tasks, panels);
    float[][] bufs = ws.bBlocks(kBlocks, size);
    BParts parts = new BParts(kBlocks * packTasks);
    Parallel.forEach(tasks, t -> {
      int i0 = t * chunk;
      int i1 = Math.min(m, i0 + chunk);
      for (int blk = 0, pc = 0; blk < kBlocks; blk++, pc += kcMax) {
        int kc = Math.min(kcMax, k - pc);
        int fpc = pc;
        float[] dst = bufs[blk];
        parts.ready(blk * packTasks, packTasks, t * packTasks / tasks,
            g -> packPart(transB, b, bh, bOff, ldb, fpc, kc, jc, nc, panels, packTasks, g, dst));
        multiply(WORKSPACE.get(), true, i0, i1, jc, nc, pc, kc, dst, alpha, a, ah, aOff, lda, beta, c, cOff, ldc,
            true, 0);
      }
    });
  }

  /**
   * The parts of the packed B blocks of one of sharedB's hand-offs, each packed once by whichever task claims it
   * first: a task that needs a block packs the parts nobody has claimed yet, from its own share of them on,
   * then waits for the parts other tasks are packing. A product of one or two K blocks then takes one hand-off
   * (both blocks' buffers live through it), where a hand-off to pack the first block and one to multiply each
   * block took three, each a wait for the slower thread; and a task starts multiplying as soon as its block is
   * packed rather than when the whole pool is done. A task waits only for a part another task is packing at
   * that moment, so the tasks cannot wait on each other in a cycle, whichever thread runs them (all on the
   * caller's thread, they pack every part themselves). Who packs a part never changes its contents: same bits.
   */
  static final class BParts {
    private static final int FREE = 0;
    private static final int PACKING = 1;
    private static final int DONE = 2;
    private static final int FAILED = 3;
    private final java.util.concurrent.atomic.AtomicIntegerArray state;

    BParts(int parts) {
      state = new java.util.concurrent.atomic.AtomicIntegerArray(parts);
    }

    /**
     * Returns when parts {@code base .. base + count} are packed: {@code pack.accept(g)} packs part
     * {@code base + g}; this task claims free ones from {@code first} on (wrapping), then waits for the rest.
     */
    void ready(int base, int count, int first, java.util.function.IntConsumer pack) {
      for (int i = 0; i < count; i++) {
        int g = (first + i) % count;
        if (!state.compareAndSet(base + g, FREE, PACKING)) continue;
        boolean ok = false;
        try {
          pack.accept(g);
          ok = true;
        } finally {
          state.set(base + g, ok ? DONE : FAILED);
        }
      }
      for (int g = 0; g < count; g++) {
        long spinUntil = 0;
        int s;
        while ((s = state.get(base + g)) == PACKING) {
          // A claimer taken off its core would leave this thread spinning for a time slice: yield after 50 us.
          if (spinUntil == 0) spinUntil = System.nanoTime() + 50_000;
          if (System.nanoTime() < spinUntil) Thread.onSpinWait();
          else Thread.yield();
        }
        if (s == FAILED) throw new IllegalStateException("sgemm: packing part " + g + " of B failed in another task");
      }
    }
  }

  /**
   * The order of one of sharedB's hand-offs, for {@code threads} threads: per thread, its share of the
   * multiplies (task {@code i}) and then its share of the packs (task {@code tm + g}). Parallel gives each
   * thread a contiguous range of the tasks; in index order the first thread would get only multiplies and
   * the second only packs, the packing then on the critical path (N = 2048 on two threads: 195 against
   * 214 GFLOP/s), and a pack between two multiplies evicts the B block the second one reads. Which
   * thread runs which task never changes a result.
   */
  static int[] interleave(int tm, int packs, int threads) {
    int[] order = new int[tm + packs];
    int q = 0;
    for (int r = 0; r < threads; r++) {
      for (int i = tm * r / threads, i1 = tm * (r + 1) / threads; i < i1; i++) order[q++] = i;
      for (int g = packs * r / threads, g1 = packs * (r + 1) / threads; g < g1; g++) order[q++] = tm + g;
    }
    return order;
  }

  /** Part {@code g} of {@code parts} (a run of whole panels) of the packed B block at rows pc..pc+kc. */
  private static void packPart(boolean transB, float[] b, HalfOperand bh, int bOff, int ldb, int pc, int kc, int jc,
      int nc, int panels, int parts, int g, float[] dst) {
    int p0 = g * panels / parts;
    int p1 = (g + 1) * panels / parts;
    int j0 = jc + p0 * NR;
    int cols = Math.min(nc, p1 * NR) - p0 * NR;
    if (transB) packBT(b, bh, bOff, ldb, pc, kc, j0, cols, dst, p0 * panelStride(kc));
    else packB(b, bh, bOff, ldb, pc, kc, j0, cols, dst, p0 * panelStride(kc));
  }

  /**
   * C = alpha A B^T + beta C for a short A (few rows against a wide B, as x W^T of a small batch):
   * packing op(B) = B^T is a scalar transpose of all n x k elements of B, a quarter of the time at
   * m = 32 on AVX2 and more on AVX-512, where the product itself is faster. C^T = B A^T instead packs B's rows as they are and transposes only A (m x k)
   * and the m x n result. The choice depends on the shapes alone, so results stay deterministic.
   * Measured on a Zen 3 core against the direct path: 1.3x at 32 x 1024 x 256, 1.3x at 32 x 512 x
   * 784, 2x at 16 x 4096 x 1024; even at 64 x 512 x 512 and slower at 128 x 128 x 784, hence the
   * threshold m (k + n) * 4 < n k. AVX-512 (Zen 4, one thread): 32 x 2048 x 2048 7.8 -> 4.4 ms,
   * 32 x 1024 x 2048 4.1 -> 2.7 ms, 128 x 2048 x 2048 16.7 -> 13.9 ms.
   */
  private static void swapped(int m, int n, int k, float alpha, float[] a, HalfOperand ah, int aOff, int lda,
      float[] b, HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    // Kept per thread up to 4 MiB; a larger C^T (a vocabulary-sized projection) is not held after the call.
    float[] ct = n * m <= 1 << 20 ? WORKSPACE.get().swapped(n * m) : new float[n * m];
    sgemmHalf(false, true, n, m, k, alpha, b, bh, bOff, ldb, a, ah, aOff, lda, 0f, ct, 0, m);
    // C = (C^T)^T + beta C in 16 x 16 register transposes. The scalar loop this replaced read C^T
    // down its columns, one L1 miss per element once C^T outgrew L1: 32 x 2048 x 2048 in a
    // training step, 90 -> 70 us of the 1.8 ms product (medians of steady-state steps, two threads).
    int m16 = L == 16 ? m / 16 * 16 : 0;
    int n16 = L == 16 ? n / 16 * 16 : 0;
    for (int i = 0; i < m16; i += 16) {
      for (int j = 0; j < n16; j += 16) Transpose16.transpose(ct, j * m + i, m, c, cOff + i * ldc + j, ldc, beta);
    }
    for (int i = 0; i < m; i++) { // the edges: columns past n16 of every row, all columns of rows past m16
      int ci = cOff + i * ldc;
      for (int j = i < m16 ? n16 : 0; j < n; j++) {
        c[ci + j] = beta == 0 ? ct[j * m + i] : ct[j * m + i] + beta * c[ci + j];
      }
    }
  }

  /**
   * C = alpha op(A) B + beta C for a short op(A) against a tall, wide B (dY W in the backward of a linear layer
   * at batch 32: 32 x 2048 x 2048), read a block of whole B rows at a time. The product packs each element of B
   * for at most four 12-row tiles, so the packing's reads of B are its cost, and the Goto path reads B in runs
   * of a 512-column task's width, 2 KiB of each 8 KiB row: a run that short keeps the prefetchers from running
   * ahead (one thread reads 2048-wide rows 1, 2 or 4 KiB at a time at 10-13 GB/s, whole rows at 23-28).
   * Here K is cut into {@link #ROWS_B_PARTS} fixed parts, each a run of {@link #ROWS_B_KC}-row blocks of
   * whole rows, contiguous in memory, summed into a partial C of its own; the parts are added in order at the
   * end. The split depends on the shapes alone, so the bits do not depend on the thread count. Two threads,
   * W from DRAM, alternating JVMs: 32 x 2048 x 2048 125 -> 140-143 GFLOP/s, 16 x 2048 x 2048 84 -> 106,
   * 32 x 1024 x 2048 133 -> 150; one thread 32 x 2048 x 2048 67 -> 75-78.
   * Blocks of 64 rows ran at 71 on one thread, 256 rows (2 MiB, out of L2) at 69. Packing the next block
   * a slice per panel between the current block's tiles (to overlap its reads with the FMAs) cost 10-20%.
   * Wider B (6656 columns: chunks of 1664, runs of 6.5 KiB) lost to the Goto path, 133 -> 120: hence
   * {@link #ROWS_B_MAX_N}. From K = 512 (4 blocks) on, and B of 256K floats: in a training step the K
   * parts are also the row halves of W that each core has just updated (see {@link #splitsRows}), where the
   * Goto path's column tasks read half of every row from the other core. seed_small at batch 32 (dY W
   * 32 x 512 x 512), alternating JVMs, 7 pairs: SGD 1.08-1.15x, Adam 1.01-1.11x, AdamW 1.03-1.13x, though
   * the product alone, one B reused, runs the same or slower (32 x 512 x 512 145-177 against 174-176
   * GFLOP/s; 32 x 2048 x 512 154 -> 146 when K = 1024 was the floor).
   */
  private static void rowsOfB(boolean transA, int m, int n, int k, float alpha, float[] a, HalfOperand ah, int aOff,
      int lda, float[] b, HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    int parts = ROWS_B_PARTS;
    int blocks = (k + ROWS_B_KC - 1) / ROWS_B_KC;
    int mn = m * n;
    float[] partial = WORKSPACE.get().partial(parts * mn);
    int panels = (n + NR - 1) / NR;
    // A spare line between panels: packRows writes one row into every panel in turn, and panels 32 KiB
    // apart (a multiple of 4 KiB) would all map to the same L1 set.
    int ps = ROWS_B_KC * NR + 16;
    // A p-major where B is wide, as in multiply (MR = 12 here): 32 x 512 x 512 (seed_small's dY W at batch 32), one
    // thread, CPU time, alternating in one JVM at load 11-13: +17.5%, +20%, +17.5%; two threads +23%, +17%, -2.5%.
    boolean pMajor = transA || (L == 16 && n >= PMAJOR_MIN_N);
    Parallel.forEach(parts, part -> {
      Workspace ws = WORKSPACE.get();
      float[] bPack = ws.bPack(panels * ps);
      int b0 = part * blocks / parts;
      int b1 = (part + 1) * blocks / parts;
      for (int blk = b0; blk < b1; blk++) {
        int pc = blk * ROWS_B_KC;
        int kc = Math.min(ROWS_B_KC, k - pc);
        boolean first = blk == b0;
        packRows(b, bh, bOff, ldb, pc, kc, 0, n, bPack, 0, ps);
        if (transA) packAT(a, ah, aOff, lda, 0, m, pc, kc, ws.aPack);
        else packA(a, ah, aOff, lda, 0, m, pc, kc, ws.aPack, pMajor);
        for (int jr = 0; jr < n; jr += NR) { // each B panel meets every tile of A while it is in L1
          int cols = Math.min(NR, n - jr);
          int bBase = jr / NR * ps;
          for (int ir = 0; ir < m; ir += MR) {
            int rows = Math.min(MR, m - ir);
            packedTile(pMajor, rows, kc, ws.aPack, ir, bPack, bBase, ws.tile);
            writeTile(ws.tile, rows, cols, partial, part * mn + ir * n + jr, n, 1f, 0f, first);
          }
        }
      }
    });
    int rowTasks = Math.min(m, 4);
    Parallel.forEach(rowTasks, t -> {
      FloatVector al = FloatVector.broadcast(S, alpha);
      for (int i = t * m / rowTasks, i1 = (t + 1) * m / rowTasks; i < i1; i++) {
        int ci = cOff + i * ldc;
        int pi = i * n;
        int j = 0;
        for (; j <= n - L; j += L) {
          FloatVector sum = FloatVector.fromArray(S, partial, pi + j);
          for (int q = 1; q < parts; q++) sum = sum.add(FloatVector.fromArray(S, partial, q * mn + pi + j));
          (beta == 0 ? sum.mul(al) : sum.fma(al, FloatVector.fromArray(S, c, ci + j).mul(beta))).intoArray(c, ci + j);
        }
        for (; j < n; j++) {
          float sum = partial[pi + j];
          for (int q = 1; q < parts; q++) sum += partial[q * mn + pi + j];
          c[ci + j] = beta == 0 ? sum * alpha : Math.fma(sum, alpha, c[ci + j] * beta);
        }
      }
    });
  }

  /**
   * Rows pc..pc+kc, columns jc..jc+nc of B into panels {@code ps} floats apart from {@code dOff}, each row's run
   * read once, front to back.
   */
  private static void packRows(float[] b, HalfOperand bh, int bOff, int ldb, int pc, int kc, int jc, int nc,
      float[] dst, int dOff, int ps) {
    int full = nc / NR * NR;
    int cols = nc - full;
    if (bh != null) {
      packRowsHalf(bh, bOff, ldb, pc, kc, jc, nc, dst, dOff, ps);
      return;
    }
    for (int p = 0; p < kc; p++) {
      int src = bOff + (pc + p) * ldb + jc;
      int d = dOff + p * NR;
      for (int jr = 0; jr < full; jr += NR, d += ps) {
        FloatVector.fromArray(S, b, src + jr).intoArray(dst, d);
        FloatVector.fromArray(S, b, src + jr + L).intoArray(dst, d + L);
      }
      if (cols > 0) {
        System.arraycopy(b, src + full, dst, d, cols);
        java.util.Arrays.fill(dst, d + cols, d + NR, 0f);
      }
    }
  }

  /** The full Goto loop nest for C[i0:i1, j0:j1], packing its own B blocks ({@code sweep}: see multiply). */
  private static void block(boolean transA, boolean transB, int i0, int i1, int j0, int j1, int k, int kcMax,
      float alpha, float[] a, HalfOperand ah, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb,
      float beta, float[] c, int cOff, int ldc, boolean sweep, long call) {
    Workspace ws = WORKSPACE.get();
    for (int jc = j0; jc < j1; jc += NC) {
      int nc = Math.min(NC, j1 - jc);
      int ncPad = roundUp(nc, NR);
      float[] bPack = ws.bPack(ncPad / NR * panelStride(kcMax));
      for (int pc = 0; pc < k; pc += kcMax) {
        int kc = Math.min(kcMax, k - pc);
        if (transB) packBT(b, bh, bOff, ldb, pc, kc, jc, nc, bPack, 0);
        else packB(b, bh, bOff, ldb, pc, kc, jc, nc, bPack, 0);
        multiply(ws, transA, i0, i1, jc, nc, pc, kc, bPack, alpha, a, ah, aOff, lda, beta, c, cOff, ldc, sweep, call);
      }
    }
  }

  /**
   * C[i0:i1, jc:jc+nc] (+)= alpha op(A)[i0:i1, pc:pc+kc] times the packed B block {@code bPack}:
   * A is packed MC rows at a time into the workspace (unless the block is one panel wide), then
   * each A micro-panel meets the B micro-panels of an L2-sized window while it is in L1
   * ({@code sweep}: the task owns whole rows of C; otherwise panel by panel). {@code call}: the product's number
   * where its column tasks may reuse the A blocks this thread packed for the previous one (see packedA), else 0.
   */
  private static void multiply(Workspace ws, boolean transA, int i0, int i1, int jc, int nc, int pc, int kc,
      float[] bPack, float alpha, float[] a, HalfOperand ah, int aOff, int lda, float beta, float[] c, int cOff,
      int ldc, boolean sweep, long call) {
    float[] aPack = ws.aPack;
    float[] tile = ws.tile;
    boolean first = pc == 0;
    if (!transA && nc <= NR && MR == 12) {
      multiplyInPlace(ws, i0, i1 - i0, jc, nc, pc, kc, bPack, alpha, a, ah, aOff, lda, beta, c, cOff, ldc, first);
      return;
    }
    // Row of tiles by row of tiles over a window of B panels that fits in L2, rather than panel by
    // panel down the whole A block, where K is short or B outgrows the window. At small K (a
    // weight gradient dY^T X at batch 32) a tile is little work and writing C is the cost: sweeping
    // each C row across the window writes it in long runs instead of 128-byte pieces 12 rows
    // apart. Medians of alternating rounds in one JVM, two threads, A^T B: 2048 x 32 x 2048
    // 74 -> 102-128 GFLOP/s, 2048 x 128 x 2048 153 -> 172, 2048 x 128 x 1024 151 -> 172. A B block
    // within one window keeps the panel order: 128 x 128 x 784 (the MNIST MLP's first weight
    // gradient) lost 7% in window order; a product whose columns are split between tasks (sweep
    // false) keeps it too: 288 x 32 x 1024 A^T B (a convnet's column gradient), two tasks of 512
    // columns, lost 22% in window order. The order of tiles changes no sum: same bits.
    boolean windowed = sweep && (kc <= WINDOW_KC || (long) kc * nc >= B_WINDOW);
    boolean pMajor = transA || (MR == 12 && L == 16 && nc >= PMAJOR_MIN_N);
    int window = windowed ? Math.max(1, B_WINDOW / (kc * NR)) * NR : NR;
    // Equal row blocks in whole tiles: a 12-row remainder block would repack A for little work.
    int mBlocks = (i1 - i0 + MC - 1) / MC;
    int mcStep = roundUp((i1 - i0 + mBlocks - 1) / mBlocks, MR);
    for (int ic = i0; ic < i1; ic += mcStep) {
      int mc = Math.min(mcStep, i1 - ic);
      if (call != 0) {
        aPack = packedA(ws, call, transA, pMajor, a, ah, aOff, lda, ic, mc, pc, kc);
      } else if (transA) {
        packAT(a, ah, aOff, lda, ic, mc, pc, kc, aPack);
      } else {
        packA(a, ah, aOff, lda, ic, mc, pc, kc, aPack, pMajor);
      }
      for (int jw = 0; jw < nc; jw += window) {
        int jEnd = Math.min(nc, jw + window);
        for (int ir = 0; ir < mc; ir += MR) {
          for (int jr = jw; jr < jEnd; jr += NR) {
            int cols = Math.min(NR, nc - jr);
            int bBase = jr / NR * panelStride(kc);
            int rows = Math.min(MR, mc - ir);
            int cIdx = cOff + (ic + ir) * ldc + jc + jr;
            if (MR == 12) {
              if (rows == MR && cols == NR) { // full tiles: written to C from the accumulators
                if (!pMajor && first) kernelRowsC(kc, aPack, ir * AS, bPack, bBase, c, cIdx, ldc, alpha, beta);
                else if (!pMajor) kernelRowsAcc(kc, aPack, ir * AS, bPack, bBase, c, cIdx, ldc, alpha);
                else if (first) kernelC(kc, aPack, ir * KC, bPack, bBase, c, cIdx, ldc, alpha, beta);
                else kernelAcc(kc, aPack, ir * KC, bPack, bBase, c, cIdx, ldc, alpha);
                continue;
              }
              packedTile(pMajor, rows, kc, aPack, ir, bPack, bBase, tile);
              writeTile(tile, rows, cols, c, cIdx, ldc, alpha, beta, first);
            } else {
              // Full tiles are written back by the kernel itself; edge tiles come back in tile.
              boolean full = rows == MR && cols == NR;
              float[] cFull = full ? c : null;
              if (transA) kernel4(kc, aPack, ir * KC, bPack, bBase, tile, cFull, cIdx, ldc, alpha, beta, first);
              else kernel4r(kc, aPack, ir * AS, bPack, bBase, tile, cFull, cIdx, ldc, alpha, beta, first);
              if (!full) storeEdge(tile, rows, cols, c, cIdx, ldc, alpha, beta, first);
            }
          }
        }
      }
    }
  }

  /**
   * The block of op(A) at rows ic..ic+mc, K pc..pc+kc, packed as multiply packs it, for a column task of product
   * {@code call}: the copy this thread packed for an earlier task of the same product, or a new one kept for the
   * next (up to {@link #A_SLOTS} blocks, {@link #A_FLOATS} floats; past that, packed into aPack and not kept).
   * A product split by columns (wider than tall: x W^T and dY W at batch 128, 128 x 512 x 512) runs four tasks on
   * two threads, and each task packed all of A: every A element was copied twice per thread. Within one product A
   * does not change; the product's number ({@link #CALLS}) keeps a later product, even on the same array rewritten,
   * from finding these copies. Same packed panels: same bits.
   */
  private static float[] packedA(Workspace ws, long call, boolean transA, boolean pMajor, float[] a, HalfOperand ah,
      int aOff, int lda, int ic, int mc, int pc, int kc) {
    if (ws.aCall != call) {
      ws.aCall = call;
      ws.aSlots = 0;
      ws.aFloats = 0;
    }
    for (int s = 0; s < ws.aSlots; s++) {
      if (ws.aIc[s] == ic && ws.aPc[s] == pc && ws.aMajor[s] == pMajor) return ws.aBlocks[s];
    }
    int size = roundUp(mc, MR) * AS + ROW_SPAN;
    float[] dst = ws.aPack;
    if (ws.aSlots < A_SLOTS && ws.aFloats + size <= A_FLOATS) {
      int s = ws.aSlots++;
      ws.aFloats += size;
      ws.aIc[s] = ic;
      ws.aPc[s] = pc;
      ws.aMajor[s] = pMajor;
      dst = ws.aBlocks[s] = Workspace.atLeast(ws.aBlocks[s] == null ? new float[0] : ws.aBlocks[s], size);
    }
    if (transA) packAT(a, ah, aOff, lda, ic, mc, pc, kc, dst);
    else packA(a, ah, aOff, lda, ic, mc, pc, kc, dst, pMajor);
    return dst;
  }

  /**
   * {@link #multiply} for rows ic..ic+mc of a block one B panel wide with op(A) = A. Each element of A is used
   * once, so packing A would copy every element for one use: tiles of 8 rows read A's rows where they are
   * (x W^T at batch 32 runs as W x^T, one panel wide: 32 x 2048 x 2048 went from 93 to 109 GFLOP/s on two
   * threads when A stopped being packed). With no A block to pack there is no MC blocking either: all rows
   * in one sweep.
   *
   * <p>8 rows, not the packed kernels' 12: a weight's rows are 8 KiB apart (any multiple of 4 KiB), so the
   * lines a tile reads at one p all fall in one L1 set, and 12 of them overflow its 8 ways on a Zen 4 core:
   * every broadcast then came from L2. One thread, 32 x 2048 x 2048 with W from DRAM: 12-row tiles 87,
   * 8-row tiles 96-97 GFLOP/s, and 12-row tiles on rows padded to 2064 floats 96. Where rows do not alias,
   * 8-row tiles are as fast (98 against 100). Together with the single K block (sgemm caps it at
   * {@link #INPLACE_KC}; four blocks of 512 before, each re-reading 2 KiB runs of the 8 KiB rows and adding
   * into C), two threads: 32 x 2048 x 2048 144-160 -> 169-183, 32 x 2048 x 1024 130-155 -> 173-177,
   * 32 x 6656 x 6656 166 -> 185 GFLOP/s (alternating JVMs).
   */
  private static void multiplyInPlace(Workspace ws, int ic, int mc, int jc, int nc, int pc, int kc, float[] bPack,
      float alpha, float[] a, HalfOperand ah, int aOff, int lda, float beta, float[] c, int cOff, int ldc,
      boolean first) {
    float[] aPack = ws.aPack;
    for (int ir = 0; ir < mc; ir += 8) {
      int rows = Math.min(8, mc - ir);
      int cIdx = cOff + (ic + ir) * ldc + jc;
      if (ah != null) {
        // A half A: the tile's rows widened HALF_CHUNK elements at a time into L1 (a whole K block of 8 rows, up to
        // 128 KiB, would go through L2), the kernel resuming its sums from the tile between chunks: each element
        // still sums its products in order, so the bits are those of the rows widened whole.
        int as = HALF_CHUNK + 16;
        for (int p0 = 0; p0 < kc; p0 += HALF_CHUNK) {
          int ch = Math.min(HALF_CHUNK, kc - p0);
          for (int r = 0; r < 8; r++) {
            if (r < rows) ah.toFloats(aOff + (ic + ir + r) * lda + pc + p0, aPack, r * as, ch);
            else java.util.Arrays.fill(aPack, r * as, r * as + ch, 0f);
          }
          kernelRowsDirect8(ch, aPack, 0, as, bPack, p0 * NR, ws.tile, p0 > 0);
        }
      } else if (rows == 8) {
        kernelRowsDirect8(kc, a, aOff + (ic + ir) * lda + pc, lda, bPack, 0, ws.tile, false);
      } else {
        // The short last tile's rows are copied, the rest zeroed, and run through the same kernel, so every
        // element is summed in the order a full tile sums it: how the rows are split between tasks (on one
        // thread or two) must not change any bits. kc + 16 floats apart, the copies share no L1 set.
        int as = kc + 16;
        for (int r = 0; r < 8; r++) {
          if (r < rows) System.arraycopy(a, aOff + (ic + ir + r) * lda + pc, aPack, r * as, kc);
          else java.util.Arrays.fill(aPack, r * as, r * as + kc, 0f);
        }
        kernelRowsDirect8(kc, aPack, 0, as, bPack, 0, ws.tile, false);
      }
      writeTile(ws.tile, rows, nc, c, cIdx, ldc, alpha, beta, first);
    }
  }

  /**
   * The 12-row path's kernel for the tile of {@code rows} rows at row {@code ir} of a packed A block: a
   * p-major micro-panel ({@link #packAT}, or {@link #packA} with pMajor) when {@code pMajor}, else rows
   * {@link #packA} copied. Edge row tiles run a kernel of their own height: padding them to 12 rows cost up
   * to an eighth of the multiply at m = 32 or 64 (36 or 72 rows computed).
   */
  private static void packedTile(boolean pMajor, int rows, int kc, float[] aPack, int ir, float[] bPack, int bBase,
      float[] tile) {
    if (!pMajor) packedRows(rows, kc, aPack, ir * AS, bPack, bBase, tile);
    else if (rows > 8) kernel(kc, aPack, ir * KC, bPack, bBase, tile);
    else if (rows > 4) kernel8(kc, aPack, ir * KC, bPack, bBase, tile);
    else kernel4s(kc, aPack, ir * KC, bPack, bBase, tile);
  }

  /** The row kernel for a tile of {@code rows} rows of an A micro-panel packed by {@link #packA} as rows. */
  private static void packedRows(int rows, int kc, float[] aPack, int aBase, float[] bPack, int bBase, float[] tile) {
    if (rows > 8) kernelRows(kc, aPack, aBase, bPack, bBase, tile);
    else if (rows > 4) kernelRows8(kc, aPack, aBase, bPack, bBase, tile);
    else kernelRows4(kc, aPack, aBase, bPack, bBase, tile);
  }

  /**
   * op(A) = A. {@code pMajor} (MR = 12, 16 lanes, a B block at least {@link #PMAJOR_MIN_N} wide, see multiply): each
   * micro-panel p-major ([p][MR]), as {@link #packAT} packs op(A) = A^T, for the same kernels ({@link #packAN}).
   * The kernel then reads a tile's 12 A values at one p from one cache line with one index: on the Intel Xeon
   * (model 207) the 12 x 32 kernel over rows AS floats apart ran at 92-94% of a register-only FMA loop, over
   * p-major panels at 96-98% (one thread, CPU time, alternating in one JVM: 158 against 165 GFLOP/s, the FMA
   * loop 169). Otherwise each micro-panel is its MR rows copied as they are, AS floats apart, for the row kernels
   * ({@link #kernel4r}, {@link #kernelRows}), rows past the edge zeroed: a copy costs less per element than the
   * transpose, which pays only where each A tile meets many B panels, and with MR = 4 (AVX2) a p-major panel
   * needed a gather per column (on a Zen 4 core that pack took a quarter of a 128 x 784 x 128 product). The
   * layout changes no sum: same bits either way.
   */
  private static void packA(float[] a, HalfOperand ah, int aOff, int lda, int ic, int mc, int pc, int kc,
      float[] dst, boolean pMajor) {
    if (pMajor) {
      packAN(a, ah, aOff, lda, ic, mc, pc, kc, dst);
      return;
    }
    for (int ir = 0; ir < mc; ir += MR) {
      int rows = Math.min(MR, mc - ir);
      int src = aOff + (ic + ir) * lda + pc;
      int d = ir * AS;
      for (int r = 0; r < MR; r++) {
        if (r < rows && ah != null) ah.toFloats(src + r * lda, dst, d + r * AS, kc);
        else if (r < rows) System.arraycopy(a, src + r * lda, dst, d + r * AS, kc);
        else java.util.Arrays.fill(dst, d + r * AS, d + r * AS + kc, 0f);
      }
    }
  }

  /**
   * {@link #packA}'s p-major layout (MR = 12): rows ic..ic+mc, K pc..pc+kc of A into micro-panels KC * MR floats
   * apart (as {@link #packAT}), 12 x 16 blocks of a tile's rows transposed in registers
   * ({@link Transpose16#transpose12}; without 16 lanes, none), the rest (the last kc % 16 columns, an edge tile's
   * rows, zero-padded to 12) one element at a time. A half A's tile rows are widened first into a scratch block
   * (kc floats a row), then transposed from it as floats. The last 16-column block of a tile writes 4 floats past its panel (see
   * {@link Transpose16#transpose12}): into the next panel's first slot, written after it, or into the buffer's
   * slack (aPack and packedA's blocks keep AS - KC floats a row beyond the panels).
   */
  private static void packAN(float[] a, HalfOperand ah, int aOff, int lda, int ic, int mc, int pc, int kc,
      float[] dst) {
    for (int ir = 0; ir < mc; ir += MR) {
      int rows = Math.min(MR, mc - ir);
      float[] src = a;
      int s0 = aOff + (ic + ir) * lda + pc;
      int ld = lda;
      if (ah != null) {
        src = WORKSPACE.get().halfRows(MR * kc);
        for (int r = 0; r < rows; r++) ah.toFloats(aOff + (ic + ir + r) * lda + pc, src, r * kc, kc);
        s0 = 0;
        ld = kc;
      }
      int d = ir * KC;
      int p = 0;
      if (rows == MR && L == 16) {
        for (; p + 16 <= kc; p += 16) Transpose16.transpose12(src, s0 + p, ld, dst, d + p * MR);
      }
      for (; p < kc; p++) {
        int dp = d + p * MR;
        for (int r = 0; r < rows; r++) dst[dp + r] = src[s0 + r * ld + p];
        for (int r = rows; r < MR; r++) dst[dp + r] = 0f;
      }
    }
  }

  /**
   * op(A) = A^T: a row of the stored A holds MR consecutive rows of op(A), so pack each micro-panel
   * p-major ([p][MR]) with contiguous reads and writes instead of a transpose.
   */
  private static void packAT(float[] a, HalfOperand ah, int aOff, int lda, int ic, int mc, int pc, int kc,
      float[] dst) {
    for (int ir = 0; ir < mc; ir += MR) {
      int rows = Math.min(MR, mc - ir);
      int src = aOff + pc * lda + ic + ir;
      int d = ir * KC;
      if (ah != null) { // a half A^T: each p's run of rows widened into its slot
        for (int p = 0; p < kc; p++, src += lda, d += MR) {
          ah.toFloats(src, dst, d, rows);
          for (int r = rows; r < MR; r++) dst[d + r] = 0f;
        }
      } else if (rows == 4 && MR == 4) {
        // Plain copies: System.arraycopy of 4 floats costs more in the call than the copy, and a
        // 128-bit FloatVector copy sometimes ran 3x slower (a second species beside S in the same
        // Vector API call paths can stop C2 from intrinsifying it).
        for (int p = 0; p < kc; p++, src += lda, d += 4) {
          dst[d] = a[src];
          dst[d + 1] = a[src + 1];
          dst[d + 2] = a[src + 2];
          dst[d + 3] = a[src + 3];
        }
      } else if (rows == MR && src + (kc - 1L) * lda + ROW_SPAN <= a.length) {
        // Whole vectors: a 12-float System.arraycopy per p cost a quarter of a 1024 x 2048 x 256
        // A^T B (65 GFLOP/s against 88 for A B on one Zen 4 core). The lanes past MR land in the next
        // p's slot (rewritten next) or, after the last p, in the panel gap or the buffer's slack.
        for (int p = 0; p < kc; p++, src += lda, d += MR) {
          for (int v = 0; v < MR; v += L) FloatVector.fromArray(S, a, src + v).intoArray(dst, d + v);
        }
      } else {
        for (int p = 0; p < kc; p++, src += lda, d += MR) {
          System.arraycopy(a, src, dst, d, rows);
          for (int r = rows; r < MR; r++) dst[d + r] = 0f;
        }
      }
    }
  }

  /**
   * op(B) = B: each micro-panel row is NR contiguous floats of a B row. Walks B row by row so the
   * reads stream (panel by panel, every read was a new cache line at stride ldb: packing a
   * 256 x 1664 block of a 6656-wide B cost as much as a third of the multiply).
   */
  private static void packB(float[] b, HalfOperand bh, int bOff, int ldb, int pc, int kc, int jc, int nc, float[] dst,
      int dOff) {
    if (bh != null) {
      packRowsHalf(bh, bOff, ldb, pc, kc, jc, nc, dst, dOff, panelStride(kc));
    } else if (MR == 12) {
      packBByPanel(b, bOff, ldb, pc, kc, jc, nc, dst, dOff);
    } else {
      packRows(b, null, bOff, ldb, pc, kc, jc, nc, dst, dOff, panelStride(kc));
    }
  }

  /** K elements of a half A's rows that {@link #multiplyInPlace} widens at a time: 8 rows of them are 8 KiB, in L1. */
  private static final int HALF_CHUNK = 256;

  /** Shorts, as many lanes as {@link #S}: a BF16 run of L elements. */
  private static final VectorSpecies<Short> HS = VectorShape.forBitSize(S.vectorBitSize() / 2).withLanes(short.class);
  private static final VectorSpecies<Integer> IS = VectorSpecies.of(int.class, S.vectorShape());

  /**
   * dst[d, d + NR) = the float32 values of half bits [s, s + NR): BF16 widened in registers here (its bits are a
   * float32's top half), F16 through the bulk kernels; a call per panel row is too short for their loop set-up.
   */
  private static void widenRun(HalfOperand h, int s, float[] dst, int d) {
    if (!h.bf16()) {
      h.toFloats(s, dst, d, NR);
      return;
    }
    short[] bits = h.bits();
    for (int v = 0; v < NR; v += L) {
      ((IntVector) ShortVector.fromArray(HS, bits, s + v).convertShape(VectorOperators.S2I, IS, 0))
          .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, d + v);
    }
  }

  /**
   * {@link #packRows} (and {@link #packB}, whose panels are the same) from a half B: 8 panels at a time, each row's
   * run of them widened straight into its panels.
   */
  private static void packRowsHalf(HalfOperand b, int bOff, int ldb, int pc, int kc, int jc, int nc, float[] dst,
      int dOff, int ps) {
    int full = nc / NR * NR;
    int g = 8 * NR;
    for (int jg = 0; jg < full; jg += g) {
      int gEnd = Math.min(full, jg + g);
      int src = bOff + pc * ldb + jc;
      for (int p = 0; p < kc; p++, src += ldb) {
        for (int jr = jg, d = dOff + jg / NR * ps + p * NR; jr < gEnd; jr += NR, d += ps) widenRun(b, src + jr, dst, d);
      }
    }
    int cols = nc - full;
    if (cols > 0) { // the edge panel, zero-padded to NR columns
      int src = bOff + pc * ldb + jc + full;
      for (int p = 0, d = dOff + full / NR * ps; p < kc; p++, d += NR, src += ldb) {
        b.toFloats(src, dst, d, cols);
        java.util.Arrays.fill(dst, d + cols, d + NR, 0f);
      }
    }
  }

  /**
   * packB for the AVX-512 path: 8 micro-panels (256 columns, 1 KiB of each B row) at a time, p by p.
   * One panel at a time read 128 bytes per B row and jumped a whole row (26 KiB at n = 6656, a new
   * page each time) so the prefetchers never ran ahead; walking all panels row by row (as on AVX2)
   * scattered each row over 52 panels and was slower still. 1 thread at 128 x 6656 x 6656:
   * one panel 73.5, 8 panels 79, all panels 58 GFLOP/s; 2 threads 130 -> 140.
   */
  private static void packBByPanel(float[] b, int bOff, int ldb, int pc, int kc, int jc, int nc, float[] dst,
      int dOff) {
    int full = nc / NR * NR;
    int g = 8 * NR;
    int ps = panelStride(kc);
    for (int jg = 0; jg < full; jg += g) {
      int gEnd = Math.min(full, jg + g);
      int src = bOff + pc * ldb + jc;
      for (int p = 0; p < kc; p++, src += ldb) {
        for (int jr = jg, d = dOff + jg / NR * ps + p * NR; jr < gEnd; jr += NR, d += ps) {
          FloatVector.fromArray(S, b, src + jr).intoArray(dst, d);
          FloatVector.fromArray(S, b, src + jr + L).intoArray(dst, d + L);
        }
      }
    }
    int cols = nc - full;
    if (cols > 0) { // the edge panel, zero-padded to NR columns
      int src = bOff + pc * ldb + jc + full;
      for (int p = 0, d = dOff + full / NR * ps; p < kc; p++, d += NR, src += ldb) {
        System.arraycopy(b, src, dst, d, cols);
        java.util.Arrays.fill(dst, d + cols, d + NR, 0f);
      }
    }
  }

  /**
   * op(B) = B^T: column j of op(B) is row j of b. With 16 lanes, full panels are transposed 16 x 16
   * blocks at a time in registers ({@link Transpose16}); the rest by a scalar transpose reading
   * rows of b in order. The 16-lane gather this replaced (one element from each of NR rows per
   * step) spent most of its time checking its index vector: 32 x 2048 x 2048 with B^T on two Zen 4
   * threads 11.4 -> 4.2 ms with the scalar transpose.
   */
  private static void packBT(float[] b, HalfOperand bh, int bOff, int ldb, int pc, int kc, int jc, int nc, float[] dst,
      int dOff) {
    if (bh != null) {
      // a half B: each panel's NR rows (kc elements each) widened into a scratch block, then transposed from it
      float[] rows = WORKSPACE.get().halfRows(NR * kc);
      for (int jr = 0; jr < nc; jr += NR) {
        int cols = Math.min(NR, nc - jr);
        for (int j = 0; j < cols; j++) bh.toFloats(bOff + (jc + jr + j) * ldb + pc, rows, j * kc, kc);
        // column j of op(B) at rows[j * kc + p]: offset and ld chosen so that packBT reads exactly there
        packBT(rows, null, -(jc + jr) * kc - pc, kc, pc, kc, jc + jr, cols, dst, dOff + jr / NR * panelStride(kc));
      }
      return;
    }
    for (int jr = 0; jr < nc; jr += NR) {
      int cols = Math.min(NR, nc - jr);
      int base = dOff + jr / NR * panelStride(kc);
      int src = bOff + (jc + jr) * ldb + pc;
      int p0 = 0;
      if (L == 16 && cols == NR) {
        for (; p0 + 16 <= kc; p0 += 16) {
          Transpose16.transpose(b, src + p0, ldb, dst, base + p0 * NR, NR, 0f);
          Transpose16.transpose(b, src + 16 * ldb + p0, ldb, dst, base + p0 * NR + 16, NR, 0f);
        }
      }
      for (int j = 0; j < cols; j++) {
        int s0 = src + j * ldb;
        for (int p = p0, d = base + p0 * NR + j; p < kc; p++, d += NR) dst[d] = b[s0 + p];
      }
      if (cols < NR) {
        for (int p = 0; p < kc; p++) java.util.Arrays.fill(dst, base + p * NR + cols, base + (p + 1) * NR, 0f);
      }
    }
  }

  /**
   * One 12 x NR tile over a K block, left in {@code tile}: the accumulators cannot be handed to a
   * store helper without C2 boxing them. The accumulators start from FloatVector.zero inside the method: a static
   * final zero vector stops C2 from keeping them in registers.
   */
  private static void kernel(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
    c40.intoArray(tile, 8 * L); c41.intoArray(tile, 9 * L);
    c50.intoArray(tile, 10 * L); c51.intoArray(tile, 11 * L);
    c60.intoArray(tile, 12 * L); c61.intoArray(tile, 13 * L);
    c70.intoArray(tile, 14 * L); c71.intoArray(tile, 15 * L);
    c80.intoArray(tile, 16 * L); c81.intoArray(tile, 17 * L);
    c90.intoArray(tile, 18 * L); c91.intoArray(tile, 19 * L);
    ca0.intoArray(tile, 20 * L); ca1.intoArray(tile, 21 * L);
    cb0.intoArray(tile, 22 * L); cb1.intoArray(tile, 23 * L);
  }

  /**
   * {@link #kernel} for a full tile of a first K block, written to C straight from the accumulators
   * ({@code alpha} times each, plus {@code beta} times C rounded first, as {@link #storeTile} writes it:
   * the same bits) rather than through the tile buffer. At a short K the write-back is a large part of
   * a tile: the weight gradient dY^T X at batch 32 on two threads, C from memory, medians of
   * alternating rounds in one JVM: 2048 x 2048 x 32 1,628 -> 1,495 us and 1,747 -> 1,613 us (two runs),
   * 2048 x 1024 x 32 855 -> 769 us; products of several K blocks unchanged (256 x 256 x 2048, 1024^3).
   * With beta != 0 (C = b, beta 0.9, as SGD once folded a weight gradient into its momentum buffer), the
   * same product 127 -> 143 GFLOP/s; beta 0 unchanged by the second branch (170-177 either way). A version
   * that also took the accumulate write-back of later K blocks ran at 2 GFLOP/s (C2 gave up on the
   * method and boxed the accumulators).
   */
  private static void kernelC(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] c, int cIdx, int ldc,
      float alpha, float beta) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    if (beta == 0) {
      c00.mul(al).intoArray(c, cIdx + 0 * ldc);
      c01.mul(al).intoArray(c, cIdx + 0 * ldc + L);
      c10.mul(al).intoArray(c, cIdx + 1 * ldc);
      c11.mul(al).intoArray(c, cIdx + 1 * ldc + L);
      c20.mul(al).intoArray(c, cIdx + 2 * ldc);
      c21.mul(al).intoArray(c, cIdx + 2 * ldc + L);
      c30.mul(al).intoArray(c, cIdx + 3 * ldc);
      c31.mul(al).intoArray(c, cIdx + 3 * ldc + L);
      c40.mul(al).intoArray(c, cIdx + 4 * ldc);
      c41.mul(al).intoArray(c, cIdx + 4 * ldc + L);
      c50.mul(al).intoArray(c, cIdx + 5 * ldc);
      c51.mul(al).intoArray(c, cIdx + 5 * ldc + L);
      c60.mul(al).intoArray(c, cIdx + 6 * ldc);
      c61.mul(al).intoArray(c, cIdx + 6 * ldc + L);
      c70.mul(al).intoArray(c, cIdx + 7 * ldc);
      c71.mul(al).intoArray(c, cIdx + 7 * ldc + L);
      c80.mul(al).intoArray(c, cIdx + 8 * ldc);
      c81.mul(al).intoArray(c, cIdx + 8 * ldc + L);
      c90.mul(al).intoArray(c, cIdx + 9 * ldc);
      c91.mul(al).intoArray(c, cIdx + 9 * ldc + L);
      ca0.mul(al).intoArray(c, cIdx + 10 * ldc);
      ca1.mul(al).intoArray(c, cIdx + 10 * ldc + L);
      cb0.mul(al).intoArray(c, cIdx + 11 * ldc);
      cb1.mul(al).intoArray(c, cIdx + 11 * ldc + L);
    } else {
      FloatVector be = FloatVector.broadcast(S, beta);
      c00.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc).mul(be)).intoArray(c, cIdx + 0 * ldc);
      c01.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc + L).mul(be)).intoArray(c, cIdx + 0 * ldc + L);
      c10.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc).mul(be)).intoArray(c, cIdx + 1 * ldc);
      c11.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc + L).mul(be)).intoArray(c, cIdx + 1 * ldc + L);
      c20.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc).mul(be)).intoArray(c, cIdx + 2 * ldc);
      c21.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc + L).mul(be)).intoArray(c, cIdx + 2 * ldc + L);
      c30.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc).mul(be)).intoArray(c, cIdx + 3 * ldc);
      c31.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc + L).mul(be)).intoArray(c, cIdx + 3 * ldc + L);
      c40.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc).mul(be)).intoArray(c, cIdx + 4 * ldc);
      c41.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc + L).mul(be)).intoArray(c, cIdx + 4 * ldc + L);
      c50.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc).mul(be)).intoArray(c, cIdx + 5 * ldc);
      c51.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc + L).mul(be)).intoArray(c, cIdx + 5 * ldc + L);
      c60.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc).mul(be)).intoArray(c, cIdx + 6 * ldc);
      c61.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc + L).mul(be)).intoArray(c, cIdx + 6 * ldc + L);
      c70.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc).mul(be)).intoArray(c, cIdx + 7 * ldc);
      c71.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc + L).mul(be)).intoArray(c, cIdx + 7 * ldc + L);
      c80.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc).mul(be)).intoArray(c, cIdx + 8 * ldc);
      c81.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc + L).mul(be)).intoArray(c, cIdx + 8 * ldc + L);
      c90.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc).mul(be)).intoArray(c, cIdx + 9 * ldc);
      c91.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc + L).mul(be)).intoArray(c, cIdx + 9 * ldc + L);
      ca0.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc).mul(be)).intoArray(c, cIdx + 10 * ldc);
      ca1.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc + L).mul(be)).intoArray(c, cIdx + 10 * ldc + L);
      cb0.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc).mul(be)).intoArray(c, cIdx + 11 * ldc);
      cb1.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc + L).mul(be)).intoArray(c, cIdx + 11 * ldc + L);
    }
  }

  /** {@link #kernel} for an edge tile of 5..8 rows: the first 8 rows of a 12-row p-major A micro-panel. */
  private static void kernel8(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
    c40.intoArray(tile, 8 * L); c41.intoArray(tile, 9 * L);
    c50.intoArray(tile, 10 * L); c51.intoArray(tile, 11 * L);
    c60.intoArray(tile, 12 * L); c61.intoArray(tile, 13 * L);
    c70.intoArray(tile, 14 * L); c71.intoArray(tile, 15 * L);
  }

  /** {@link #kernel} for an edge tile of 1..4 rows: the first 4 rows of a 12-row p-major A micro-panel. */
  private static void kernel4s(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
  }

  /**
   * {@link #kernel} over an A micro-panel packed as rows AS floats apart ({@link #packA}): the row
   * offsets are constants, so the 12 broadcasts cost no more registers than the p-major ones.
   * Writing C from the kernel itself (as kernel4 does) made the method too big for C1 ("out of
   * virtual registers"), which left it in tier-2 code at ~1 GFLOP/s in 2 of 6 launches.
   */
  private static void kernelRows(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4 * AS]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5 * AS]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6 * AS]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7 * AS]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8 * AS]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9 * AS]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10 * AS]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11 * AS]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
    c40.intoArray(tile, 8 * L); c41.intoArray(tile, 9 * L);
    c50.intoArray(tile, 10 * L); c51.intoArray(tile, 11 * L);
    c60.intoArray(tile, 12 * L); c61.intoArray(tile, 13 * L);
    c70.intoArray(tile, 14 * L); c71.intoArray(tile, 15 * L);
    c80.intoArray(tile, 16 * L); c81.intoArray(tile, 17 * L);
    c90.intoArray(tile, 18 * L); c91.intoArray(tile, 19 * L);
    ca0.intoArray(tile, 20 * L); ca1.intoArray(tile, 21 * L);
    cb0.intoArray(tile, 22 * L); cb1.intoArray(tile, 23 * L);
  }

  /**
   * {@link #kernelRows} for a full tile of a first K block, written to C straight from the accumulators as
   * {@link #kernelC} writes it (the same bits as {@link #storeTile}). A method of its own beside
   * {@link #kernelRowsAcc}: one method with both write-backs is the size that left C1 (and C2, see kernelC)
   * without registers. The tile buffer's round trip (24 stores, 24 loads) and storeTile's loops went away:
   * see {@link #multiply} for what it saves.
   */
  private static void kernelRowsC(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] c, int cIdx, int ldc,
      float alpha, float beta) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4 * AS]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5 * AS]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6 * AS]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7 * AS]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8 * AS]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9 * AS]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10 * AS]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11 * AS]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    if (beta == 0) {
      c00.mul(al).intoArray(c, cIdx + 0 * ldc);
      c01.mul(al).intoArray(c, cIdx + 0 * ldc + L);
      c10.mul(al).intoArray(c, cIdx + 1 * ldc);
      c11.mul(al).intoArray(c, cIdx + 1 * ldc + L);
      c20.mul(al).intoArray(c, cIdx + 2 * ldc);
      c21.mul(al).intoArray(c, cIdx + 2 * ldc + L);
      c30.mul(al).intoArray(c, cIdx + 3 * ldc);
      c31.mul(al).intoArray(c, cIdx + 3 * ldc + L);
      c40.mul(al).intoArray(c, cIdx + 4 * ldc);
      c41.mul(al).intoArray(c, cIdx + 4 * ldc + L);
      c50.mul(al).intoArray(c, cIdx + 5 * ldc);
      c51.mul(al).intoArray(c, cIdx + 5 * ldc + L);
      c60.mul(al).intoArray(c, cIdx + 6 * ldc);
      c61.mul(al).intoArray(c, cIdx + 6 * ldc + L);
      c70.mul(al).intoArray(c, cIdx + 7 * ldc);
      c71.mul(al).intoArray(c, cIdx + 7 * ldc + L);
      c80.mul(al).intoArray(c, cIdx + 8 * ldc);
      c81.mul(al).intoArray(c, cIdx + 8 * ldc + L);
      c90.mul(al).intoArray(c, cIdx + 9 * ldc);
      c91.mul(al).intoArray(c, cIdx + 9 * ldc + L);
      ca0.mul(al).intoArray(c, cIdx + 10 * ldc);
      ca1.mul(al).intoArray(c, cIdx + 10 * ldc + L);
      cb0.mul(al).intoArray(c, cIdx + 11 * ldc);
      cb1.mul(al).intoArray(c, cIdx + 11 * ldc + L);
    } else {
      FloatVector be = FloatVector.broadcast(S, beta);
      c00.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc).mul(be)).intoArray(c, cIdx + 0 * ldc);
      c01.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc + L).mul(be)).intoArray(c, cIdx + 0 * ldc + L);
      c10.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc).mul(be)).intoArray(c, cIdx + 1 * ldc);
      c11.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc + L).mul(be)).intoArray(c, cIdx + 1 * ldc + L);
      c20.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc).mul(be)).intoArray(c, cIdx + 2 * ldc);
      c21.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc + L).mul(be)).intoArray(c, cIdx + 2 * ldc + L);
      c30.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc).mul(be)).intoArray(c, cIdx + 3 * ldc);
      c31.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc + L).mul(be)).intoArray(c, cIdx + 3 * ldc + L);
      c40.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc).mul(be)).intoArray(c, cIdx + 4 * ldc);
      c41.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc + L).mul(be)).intoArray(c, cIdx + 4 * ldc + L);
      c50.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc).mul(be)).intoArray(c, cIdx + 5 * ldc);
      c51.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc + L).mul(be)).intoArray(c, cIdx + 5 * ldc + L);
      c60.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc).mul(be)).intoArray(c, cIdx + 6 * ldc);
      c61.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc + L).mul(be)).intoArray(c, cIdx + 6 * ldc + L);
      c70.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc).mul(be)).intoArray(c, cIdx + 7 * ldc);
      c71.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc + L).mul(be)).intoArray(c, cIdx + 7 * ldc + L);
      c80.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc).mul(be)).intoArray(c, cIdx + 8 * ldc);
      c81.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc + L).mul(be)).intoArray(c, cIdx + 8 * ldc + L);
      c90.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc).mul(be)).intoArray(c, cIdx + 9 * ldc);
      c91.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc + L).mul(be)).intoArray(c, cIdx + 9 * ldc + L);
      ca0.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc).mul(be)).intoArray(c, cIdx + 10 * ldc);
      ca1.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc + L).mul(be)).intoArray(c, cIdx + 10 * ldc + L);
      cb0.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc).mul(be)).intoArray(c, cIdx + 11 * ldc);
      cb1.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc + L).mul(be)).intoArray(c, cIdx + 11 * ldc + L);
    }
  }

  /** {@link #kernelRows} for a full tile of a later K block: C += alpha acc from the accumulators (storeTile's bits). */
  private static void kernelRowsAcc(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] c, int cIdx, int ldc,
      float alpha) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4 * AS]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5 * AS]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6 * AS]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7 * AS]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8 * AS]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9 * AS]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10 * AS]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11 * AS]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    c00.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc)).intoArray(c, cIdx + 0 * ldc);
    c01.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc + L)).intoArray(c, cIdx + 0 * ldc + L);
    c10.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc)).intoArray(c, cIdx + 1 * ldc);
    c11.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc + L)).intoArray(c, cIdx + 1 * ldc + L);
    c20.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc)).intoArray(c, cIdx + 2 * ldc);
    c21.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc + L)).intoArray(c, cIdx + 2 * ldc + L);
    c30.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc)).intoArray(c, cIdx + 3 * ldc);
    c31.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc + L)).intoArray(c, cIdx + 3 * ldc + L);
    c40.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc)).intoArray(c, cIdx + 4 * ldc);
    c41.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc + L)).intoArray(c, cIdx + 4 * ldc + L);
    c50.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc)).intoArray(c, cIdx + 5 * ldc);
    c51.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc + L)).intoArray(c, cIdx + 5 * ldc + L);
    c60.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc)).intoArray(c, cIdx + 6 * ldc);
    c61.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc + L)).intoArray(c, cIdx + 6 * ldc + L);
    c70.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc)).intoArray(c, cIdx + 7 * ldc);
    c71.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc + L)).intoArray(c, cIdx + 7 * ldc + L);
    c80.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc)).intoArray(c, cIdx + 8 * ldc);
    c81.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc + L)).intoArray(c, cIdx + 8 * ldc + L);
    c90.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc)).intoArray(c, cIdx + 9 * ldc);
    c91.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc + L)).intoArray(c, cIdx + 9 * ldc + L);
    ca0.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc)).intoArray(c, cIdx + 10 * ldc);
    ca1.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc + L)).intoArray(c, cIdx + 10 * ldc + L);
    cb0.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc)).intoArray(c, cIdx + 11 * ldc);
    cb1.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc + L)).intoArray(c, cIdx + 11 * ldc + L);
  }

  /** {@link #kernel} (A^T, p-major panels) for a full tile of a later K block: C += alpha acc, as kernelRowsAcc. */
  private static void kernelAcc(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] c, int cIdx, int ldc,
      float alpha) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    c00.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc)).intoArray(c, cIdx + 0 * ldc);
    c01.fma(al, FloatVector.fromArray(S, c, cIdx + 0 * ldc + L)).intoArray(c, cIdx + 0 * ldc + L);
    c10.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc)).intoArray(c, cIdx + 1 * ldc);
    c11.fma(al, FloatVector.fromArray(S, c, cIdx + 1 * ldc + L)).intoArray(c, cIdx + 1 * ldc + L);
    c20.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc)).intoArray(c, cIdx + 2 * ldc);
    c21.fma(al, FloatVector.fromArray(S, c, cIdx + 2 * ldc + L)).intoArray(c, cIdx + 2 * ldc + L);
    c30.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc)).intoArray(c, cIdx + 3 * ldc);
    c31.fma(al, FloatVector.fromArray(S, c, cIdx + 3 * ldc + L)).intoArray(c, cIdx + 3 * ldc + L);
    c40.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc)).intoArray(c, cIdx + 4 * ldc);
    c41.fma(al, FloatVector.fromArray(S, c, cIdx + 4 * ldc + L)).intoArray(c, cIdx + 4 * ldc + L);
    c50.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc)).intoArray(c, cIdx + 5 * ldc);
    c51.fma(al, FloatVector.fromArray(S, c, cIdx + 5 * ldc + L)).intoArray(c, cIdx + 5 * ldc + L);
    c60.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc)).intoArray(c, cIdx + 6 * ldc);
    c61.fma(al, FloatVector.fromArray(S, c, cIdx + 6 * ldc + L)).intoArray(c, cIdx + 6 * ldc + L);
    c70.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc)).intoArray(c, cIdx + 7 * ldc);
    c71.fma(al, FloatVector.fromArray(S, c, cIdx + 7 * ldc + L)).intoArray(c, cIdx + 7 * ldc + L);
    c80.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc)).intoArray(c, cIdx + 8 * ldc);
    c81.fma(al, FloatVector.fromArray(S, c, cIdx + 8 * ldc + L)).intoArray(c, cIdx + 8 * ldc + L);
    c90.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc)).intoArray(c, cIdx + 9 * ldc);
    c91.fma(al, FloatVector.fromArray(S, c, cIdx + 9 * ldc + L)).intoArray(c, cIdx + 9 * ldc + L);
    ca0.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc)).intoArray(c, cIdx + 10 * ldc);
    ca1.fma(al, FloatVector.fromArray(S, c, cIdx + 10 * ldc + L)).intoArray(c, cIdx + 10 * ldc + L);
    cb0.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc)).intoArray(c, cIdx + 11 * ldc);
    cb1.fma(al, FloatVector.fromArray(S, c, cIdx + 11 * ldc + L)).intoArray(c, cIdx + 11 * ldc + L);
  }

  /** {@link #kernelRows} for an edge tile of 5..8 rows. */
  private static void kernelRows8(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4 * AS]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5 * AS]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6 * AS]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7 * AS]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
    c40.intoArray(tile, 8 * L); c41.intoArray(tile, 9 * L);
    c50.intoArray(tile, 10 * L); c51.intoArray(tile, 11 * L);
    c60.intoArray(tile, 12 * L); c61.intoArray(tile, 13 * L);
    c70.intoArray(tile, 14 * L); c71.intoArray(tile, 15 * L);
  }

  /**
   * {@link #kernelRows8} on 8 rows of A read in place, {@code as} floats apart ({@link #multiplyInPlace}). A
   * copy rather than kernelRows8 with a stride argument: the packed path keeps AS a constant, and passing it
   * as an argument cost the square products ~5% (1024^3 and 2048^3 on two threads, alternating runs).
   */
  private static void kernelRowsDirect8(int kc, float[] ap, int aBase, int as, float[] bp, int bBase, float[] tile,
      boolean resume) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    if (resume) { // the sums so far, from the tile a call on the previous K chunk left (see multiplyInPlace)
      c00 = FloatVector.fromArray(S, tile, 0 * L); c01 = FloatVector.fromArray(S, tile, 1 * L);
      c10 = FloatVector.fromArray(S, tile, 2 * L); c11 = FloatVector.fromArray(S, tile, 3 * L);
      c20 = FloatVector.fromArray(S, tile, 4 * L); c21 = FloatVector.fromArray(S, tile, 5 * L);
      c30 = FloatVector.fromArray(S, tile, 6 * L); c31 = FloatVector.fromArray(S, tile, 7 * L);
      c40 = FloatVector.fromArray(S, tile, 8 * L); c41 = FloatVector.fromArray(S, tile, 9 * L);
      c50 = FloatVector.fromArray(S, tile, 10 * L); c51 = FloatVector.fromArray(S, tile, 11 * L);
      c60 = FloatVector.fromArray(S, tile, 12 * L); c61 = FloatVector.fromArray(S, tile, 13 * L);
      c70 = FloatVector.fromArray(S, tile, 14 * L); c71 = FloatVector.fromArray(S, tile, 15 * L);
    }
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * as]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * as]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * as]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4 * as]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5 * as]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6 * as]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7 * as]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
    c40.intoArray(tile, 8 * L); c41.intoArray(tile, 9 * L);
    c50.intoArray(tile, 10 * L); c51.intoArray(tile, 11 * L);
    c60.intoArray(tile, 12 * L); c61.intoArray(tile, 13 * L);
    c70.intoArray(tile, 14 * L); c71.intoArray(tile, 15 * L);
  }
  /** {@link #kernelRows} for an edge tile of 1..4 rows. */
  private static void kernelRows4(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += NR) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1 * AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
    c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
    c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
    c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
  }
  /**
   * The 4 x NR tile for machines with 16 vector registers: 8 accumulators + 2 B vectors + the A
   * broadcasts. A 6-row tile (12 accumulators) fits on paper but C2 hoists the broadcasts and spills
   * two accumulators to the stack each step, 40 GFLOP/s against 90 for this one on a Zen 3 core.
   * A micro-panel p-major ([p][4], from packAT). With {@code c} non-null the kernel writes the full
   * tile into C itself, with storeTile's arithmetic (saves the round trip through {@code tile});
   * with {@code c} null it leaves the tile in {@code tile} for storeEdge.
   */
  private static void kernel4(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile,
      float[] c, int cIdx, int ldc, float alpha, float beta, boolean first) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0; p < kc; p++) {
      int bi = bBase + p * NR;
      int ai = aBase + p * 4;
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    if (c == null) {
      c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
      c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
      c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
      c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
      return;
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    int c0 = cIdx, c1 = c0 + ldc, c2 = c1 + ldc, c3 = c2 + ldc;
    if (!first) {
      c00.fma(al, FloatVector.fromArray(S, c, c0)).intoArray(c, c0);
      c01.fma(al, FloatVector.fromArray(S, c, c0 + L)).intoArray(c, c0 + L);
      c10.fma(al, FloatVector.fromArray(S, c, c1)).intoArray(c, c1);
      c11.fma(al, FloatVector.fromArray(S, c, c1 + L)).intoArray(c, c1 + L);
      c20.fma(al, FloatVector.fromArray(S, c, c2)).intoArray(c, c2);
      c21.fma(al, FloatVector.fromArray(S, c, c2 + L)).intoArray(c, c2 + L);
      c30.fma(al, FloatVector.fromArray(S, c, c3)).intoArray(c, c3);
      c31.fma(al, FloatVector.fromArray(S, c, c3 + L)).intoArray(c, c3 + L);
    } else if (beta == 0) {
      c00.mul(al).intoArray(c, c0);
      c01.mul(al).intoArray(c, c0 + L);
      c10.mul(al).intoArray(c, c1);
      c11.mul(al).intoArray(c, c1 + L);
      c20.mul(al).intoArray(c, c2);
      c21.mul(al).intoArray(c, c2 + L);
      c30.mul(al).intoArray(c, c3);
      c31.mul(al).intoArray(c, c3 + L);
    } else {
      c00.fma(al, FloatVector.fromArray(S, c, c0).mul(beta)).intoArray(c, c0);
      c01.fma(al, FloatVector.fromArray(S, c, c0 + L).mul(beta)).intoArray(c, c0 + L);
      c10.fma(al, FloatVector.fromArray(S, c, c1).mul(beta)).intoArray(c, c1);
      c11.fma(al, FloatVector.fromArray(S, c, c1 + L).mul(beta)).intoArray(c, c1 + L);
      c20.fma(al, FloatVector.fromArray(S, c, c2).mul(beta)).intoArray(c, c2);
      c21.fma(al, FloatVector.fromArray(S, c, c2 + L).mul(beta)).intoArray(c, c2 + L);
      c30.fma(al, FloatVector.fromArray(S, c, c3).mul(beta)).intoArray(c, c3);
      c31.fma(al, FloatVector.fromArray(S, c, c3 + L).mul(beta)).intoArray(c, c3 + L);
    }
  }

  /**
   * {@link #kernel4} over an A micro-panel packed as rows of stride AS ({@link #packA} with MR = 4):
   * plain row copies instead of a transpose, which cost ~1 ns a float and up to a fifth of a
   * 128 x 784 x 128 product; the kernel runs as fast on either layout.
   */
  private static void kernel4r(int kc, float[] ap, int aBase, float[] bp, int bBase, float[] tile,
      float[] c, int cIdx, int ldc, float alpha, float beta, boolean first) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0; p < kc; p++) {
      int bi = bBase + p * NR;
      int ai = aBase + p;
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + AS]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2 * AS]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3 * AS]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    if (c == null) {
      c00.intoArray(tile, 0 * L); c01.intoArray(tile, 1 * L);
      c10.intoArray(tile, 2 * L); c11.intoArray(tile, 3 * L);
      c20.intoArray(tile, 4 * L); c21.intoArray(tile, 5 * L);
      c30.intoArray(tile, 6 * L); c31.intoArray(tile, 7 * L);
      return;
    }
    FloatVector al = FloatVector.broadcast(S, alpha);
    int c0 = cIdx, c1 = c0 + ldc, c2 = c1 + ldc, c3 = c2 + ldc;
    if (!first) {
      c00.fma(al, FloatVector.fromArray(S, c, c0)).intoArray(c, c0);
      c01.fma(al, FloatVector.fromArray(S, c, c0 + L)).intoArray(c, c0 + L);
      c10.fma(al, FloatVector.fromArray(S, c, c1)).intoArray(c, c1);
      c11.fma(al, FloatVector.fromArray(S, c, c1 + L)).intoArray(c, c1 + L);
      c20.fma(al, FloatVector.fromArray(S, c, c2)).intoArray(c, c2);
      c21.fma(al, FloatVector.fromArray(S, c, c2 + L)).intoArray(c, c2 + L);
      c30.fma(al, FloatVector.fromArray(S, c, c3)).intoArray(c, c3);
      c31.fma(al, FloatVector.fromArray(S, c, c3 + L)).intoArray(c, c3 + L);
    } else if (beta == 0) {
      c00.mul(al).intoArray(c, c0);
      c01.mul(al).intoArray(c, c0 + L);
      c10.mul(al).intoArray(c, c1);
      c11.mul(al).intoArray(c, c1 + L);
      c20.mul(al).intoArray(c, c2);
      c21.mul(al).intoArray(c, c2 + L);
      c30.mul(al).intoArray(c, c3);
      c31.mul(al).intoArray(c, c3 + L);
    } else {
      c00.fma(al, FloatVector.fromArray(S, c, c0).mul(beta)).intoArray(c, c0);
      c01.fma(al, FloatVector.fromArray(S, c, c0 + L).mul(beta)).intoArray(c, c0 + L);
      c10.fma(al, FloatVector.fromArray(S, c, c1).mul(beta)).intoArray(c, c1);
      c11.fma(al, FloatVector.fromArray(S, c, c1 + L).mul(beta)).intoArray(c, c1 + L);
      c20.fma(al, FloatVector.fromArray(S, c, c2).mul(beta)).intoArray(c, c2);
      c21.fma(al, FloatVector.fromArray(S, c, c2 + L).mul(beta)).intoArray(c, c2 + L);
      c30.fma(al, FloatVector.fromArray(S, c, c3).mul(beta)).intoArray(c, c3);
      c31.fma(al, FloatVector.fromArray(S, c, c3 + L).mul(beta)).intoArray(c, c3 + L);
    }
  }

  /**
   * Write-back of the first {@code rows} rows of a full-width tile: C = alpha*acc + beta*C on the
   * first K block (beta == 0 ignores the old C), C += alpha*acc after. storeEdge applies the same
   * fused operations element by element.
   */
  private static void storeTile(float[] tile, int rows, float[] c, int cIdx, int ldc, float alpha, float beta,
      boolean first) {
    FloatVector al = FloatVector.broadcast(S, alpha);
    for (int r = 0, ci = cIdx, t = 0; r < rows; r++, ci += ldc) {
      for (int j = 0; j < NR; j += L, t += L) {
        FloatVector v = FloatVector.fromArray(S, tile, t);
        if (!first) v = v.fma(al, FloatVector.fromArray(S, c, ci + j));
        else if (beta == 0) v = v.mul(al);
        else v = v.fma(al, FloatVector.fromArray(S, c, ci + j).mul(beta));
        v.intoArray(c, ci + j);
      }
    }
  }

  /** {@link #storeTile} for a full-width tile, {@link #storeEdge} for the edge panel's {@code cols} columns. */
  private static void writeTile(float[] tile, int rows, int cols, float[] c, int cIdx, int ldc, float alpha, float beta,
      boolean first) {
    if (cols == NR) storeTile(tile, rows, c, cIdx, ldc, alpha, beta, first);
    else storeEdge(tile, rows, cols, c, cIdx, ldc, alpha, beta, first);
  }

  private static void storeEdge(float[] tile, int rows, int cols, float[] c, int cIdx, int ldc,
      float alpha, float beta, boolean first) {
    for (int r = 0; r < rows; r++) {
      int ci = cIdx + r * ldc;
      int t = r * NR;
      for (int j = 0; j < cols; j++) {
        float v = tile[t + j];
        if (!first) c[ci + j] = Math.fma(v, alpha, c[ci + j]);
        else if (beta == 0) c[ci + j] = v * alpha;
        else c[ci + j] = Math.fma(v, alpha, c[ci + j] * beta);
      }
    }
  }

  private static void scaleC(int m, int n, float beta, float[] c, int cOff, int ldc) {
    if (beta == 1) return;
    for (int i = 0; i < m; i++) {
      int ci = cOff + i * ldc;
      for (int j = 0; j < n; j++) c[ci + j] = beta == 0 ? 0f : beta * c[ci + j];
    }
  }

  /** Most rows of x that {@link #sgemmWeightRows} takes: a batch, two NR-wide panels of x^T. */
  private static final int WEIGHT_ROWS_MAX_M = 2 * NR;
  /** {@link #sgemmWeightRows}' per-thread buffers: x^T packed for every K block, and the task's block of C^T. */
  private static final ThreadLocal<float[][]> WEIGHT_ROWS = ThreadLocal.withInitial(() -> new float[2][0]);

  /**
   * C = x W^T + beta C for a batch x [m, k] (rows ldx apart) against a weight W [n, k] (rows ldw apart; C [m, n], rows
   * ldc apart), with the bits {@code sgemm(false, true, m, n, k, 1, x, xOff, ldx, W, wOff, ldw, beta, C, cOff, ldc)}
   * gives it, computed as C^T = W x^T: W's rows are read where they are, 8 at a time ({@link #kernelRowsDirect8}, as
   * {@link #multiplyInPlace} reads A), against x^T packed into NR-wide panels, and each task's block of C^T is
   * transposed into C at the end. sgemm's path for these shapes packs W^T, a transpose of every element of W, on
   * every call; here only x (m x k) is packed. Each element of C sums sgemm's K blocks (the same cut of k) in the
   * same order, each from zero, and its first block starts from beta C and later ones add to C as sgemm's tiles do
   * ({@link #writeTile}): the same bits. The tasks split W's rows (C's columns) into one chunk per thread, as the
   * optimizer's update splits the weight, so each core reads the rows it updates. The MNIST MLP's 32 x 784 x 128
   * layer, one thread, CPU time: 66 us through sgemm, 58 us as two sgemm calls on W x^T (this schedule, before it was
   * one method).
   *
   * <p>Returns false, having done nothing, where sgemm would not run its 12-row Goto path (SkinnyGemm's few rows, the
   * swapped A B^T, AVX2's 4-row kernels), where x has more than {@link #WEIGHT_ROWS_MAX_M} rows, or where W has fewer
   * than twice as many rows as x (W not the larger operand): the caller runs sgemm.
   */
  public static boolean sgemmWeightRows(int m, int n, int k, float[] x, int xOff, int ldx, float[] w, int wOff, int ldw,
      float beta, float[] c, int cOff, int ldc) {
    if (MR != 12 || m <= SkinnyGemm.MAX_M || m > WEIGHT_ROWS_MAX_M || n < 2 * m || k <= 0
        || (long) m * (k + n) * 4 < (long) n * k) {
      return false;
    }
    // sgemm's K blocks for op(A) = x, op(B) = W^T (see sgemmHalf)
    int kBlocks = n <= NR ? (k + INPLACE_KC - 1) / INPLACE_KC : (k + KC - 1) / KC;
    int kcMax = (k + kBlocks - 1) / kBlocks;
    if (kcMax > INPLACE_KC) return false; // the short-tile copy must fit in aPack (see INPLACE_KC)
    int panels = (m + NR - 1) / NR;
    int ldt = panels * NR; // C^T's rows: x's rows padded to whole panels
    int threads = Parallel.runsInline() || (long) m * n * k < SERIAL_WORK ? 1 : Parallel.threads();
    int chunk = roundUp((n + threads - 1) / threads, 16);
    int tasks = (n + chunk - 1) / chunk;
    Parallel.forEach(tasks, t -> {
      int j0 = t * chunk;
      int j1 = Math.min(n, j0 + chunk);
      Workspace ws = WORKSPACE.get();
      float[][] bufs = WEIGHT_ROWS.get();
      int blockFloats = panels * panelStride(kcMax);
      float[] xt = bufs[0] = Workspace.atLeast(bufs[0], kBlocks * blockFloats);
      float[] ct = bufs[1] = Workspace.atLeast(bufs[1], (j1 - j0) * ldt);
      for (int pc = 0, blk = 0; pc < k; pc += kcMax, blk++) {
        packBT(x, null, xOff, ldx, pc, Math.min(kcMax, k - pc), 0, m, xt, blk * blockFloats);
      }
      if (beta != 0) transposeInto(c, cOff, ldc, m, j0, j1, ct, ldt, true);
      for (int pc = 0, blk = 0; pc < k; pc += kcMax, blk++) {
        int kc = Math.min(kcMax, k - pc);
        boolean first = pc == 0;
        for (int j = j0; j < j1; j += 8) {
          int rows = Math.min(8, j1 - j);
          float[] ap = w;
          int aBase = wOff + j * ldw + pc;
          int as = ldw;
          if (rows < 8) { // the short last tile's rows copied, the rest zeroed, as multiplyInPlace does
            as = kc + 16;
            ap = ws.aPack;
            aBase = 0;
            for (int r = 0; r < 8; r++) {
              if (r < rows) System.arraycopy(w, wOff + (j + r) * ldw + pc, ap, r * as, kc);
              else java.util.Arrays.fill(ap, r * as, r * as + kc, 0f);
            }
          }
          for (int q = 0; q < panels; q++) {
            kernelRowsDirect8(kc, ap, aBase, as, xt, blk * blockFloats + q * panelStride(kc), ws.tile, false);
            writeTile(ws.tile, rows, Math.min(NR, m - q * NR), ct, (j - j0) * ldt + q * NR, ldt, 1f, beta, first);
          }
        }
      }
      transposeInto(c, cOff, ldc, m, j0, j1, ct, ldt, false);
    });
    return true;
  }

  /**
   * SGD's update of a float32 weight W [m, n] (contiguous from wOff) by its gradient g = A^T B (a [k, m], rows lda
   * apart; b [k, n], rows ldb apart) with g computed in registers and never stored: each 12 x NR tile of g is applied
   * to W from the accumulators, {@code W = W - lr (sign g + wd W)} as {@code VectorUpdateKernels.sgd} writes it
   * (each product and sum rounded to float32, in that order). The weight gets the bits it gets from
   * {@link #sgemmRows} handing g to that update: g's elements are sgemm's (one K block, each summed from zero in K
   * order; alpha 1, beta 0), and the update is elementwise. The rows are split into one chunk per thread as
   * sgemmRows splits them, so each core updates the rows it computes. B's rows are read where they are by the full
   * tiles (each B element is used by a handful of A tiles, and packing B was each task's copy of all of it); an edge
   * tile copies its panel. Against sgemmRows with the update as its sink, the gradient's block is not written to L2
   * and read back: the MNIST MLP's 128 x 784 weight at batch 32, one thread, CPU time: 67-71 against 58 us (the
   * gradient alone through sgemm: 57-58; 60 with B packed).
   *
   * <p>Returns false, having done nothing, where sgemmRows would not keep the product in blocks of sgemm's 12-row
   * A^T tiles (more than one K block, SkinnyGemm's few rows, AVX2's 4-row kernels): the caller updates from the
   * product as before.
   */
  public static boolean sgemmRowsSgd(int m, int n, int k, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
      float[] w, int wOff, float lr, float wd, float sign) {
    if (MR != 12 || k <= 0 || k > KC || m <= SkinnyGemm.MAX_M || n <= 0) return false;
    int threads = Parallel.runsInline() || (long) m * n * k < SERIAL_WORK ? 1 : Parallel.threads();
    int chunk = Math.min(m, roundUp((m + threads - 1) / threads, 4));
    int chunks = (m + chunk - 1) / chunk;
    Parallel.forEach(chunks, q -> {
      Workspace ws = WORKSPACE.get();
      float[] bTile = ws.rowsB = Workspace.atLeast(ws.rowsB, k * NR);
      int r1 = Math.min(m, (q + 1) * chunk);
      for (int ic = q * chunk; ic < r1; ic += MC) {
        int mc = Math.min(MC, r1 - ic);
        packAT(a, null, aOff, lda, ic, mc, 0, k, ws.aPack);
        for (int ir = 0; ir < mc; ir += MR) {
          int rows = Math.min(MR, mc - ir);
          for (int jr = 0; jr < n; jr += NR) {
            int cols = Math.min(NR, n - jr);
            int wIdx = wOff + (ic + ir) * n + jr;
            if (rows == MR && cols == NR) { // B's rows read where they are: x is not packed for a single use
              kernelSgd(k, ws.aPack, ir * KC, b, bOff + jr, ldb, w, wIdx, n, lr, wd, sign);
            } else if (cols == NR) { // a short tile (a 64-row chunk's last 4 rows), B still read in place, 4 rows a pass
              for (int r0 = 0; r0 < rows; r0 += 4) {
                kernelSgd4(k, ws.aPack, ir * KC + r0, Math.min(4, rows - r0), b, bOff + jr, ldb, w, wIdx + r0 * n, n,
                    lr, wd, sign);
              }
            } else { // an edge tile: this panel of B copied (zero-padded to NR columns) for the edge kernels
              for (int p = 0; p < k; p++) {
                System.arraycopy(b, bOff + p * ldb + jr, bTile, p * NR, cols);
                if (cols < NR) java.util.Arrays.fill(bTile, p * NR + cols, (p + 1) * NR, 0f);
              }
              packedTile(true, rows, k, ws.aPack, ir, bTile, 0, ws.tile);
              float[] tile = ws.tile;
              for (int r = 0; r < rows; r++) { // g = acc (alpha 1, as storeTile and storeEdge write it)
                int wi = wIdx + r * n;
                int t = r * NR;
                int j = 0;
                for (; j <= cols - L; j += L) {
                  FloatVector x = FloatVector.fromArray(S, w, wi + j);
                  x.sub(FloatVector.fromArray(S, tile, t + j).mul(sign).add(x.mul(wd)).mul(lr)).intoArray(w, wi + j);
                }
                for (; j < cols; j++) {
                  float x = w[wi + j];
                  w[wi + j] = x - (tile[t + j] * sign + x * wd) * lr;
                }
              }
            }
          }
        }
      }
    });
    return true;
  }

  /**
   * {@link #kernelSgd} for {@code rows} (1 to 4) rows of a short A^T tile: rows {@code aBase - ir * KC} on of the
   * p-major panel (MR floats a p), the rest of the 4 computed and dropped. Each element of g sums its products from
   * zero in K order with one fma each, as {@link #kernel4s} and {@link #kernel8} do: the same bits. Two threads cut
   * the MNIST MLP's 128 weight rows 64 + 64, five whole tiles and 4 rows each; those 4 rows went through the edge
   * path, which copied all of x's panels and ran a 12-row-sized kernel for them.
   */
  private static void kernelSgd4(int kc, float[] ap, int aBase, int rows, float[] bp, int bBase, int ldb, float[] w,
      int wIdx, int ldw, float lr, float wd, float sign) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    FloatVector lrv = FloatVector.broadcast(S, lr);
    FloatVector wdv = FloatVector.broadcast(S, wd);
    FloatVector sgv = FloatVector.broadcast(S, sign);
    FloatVector x;
    x = FloatVector.fromArray(S, w, wIdx);
    x.sub(c00.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx);
    x = FloatVector.fromArray(S, w, wIdx + L);
    x.sub(c01.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + L);
    if (rows < 2) return;
    x = FloatVector.fromArray(S, w, wIdx + ldw);
    x.sub(c10.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + ldw);
    x = FloatVector.fromArray(S, w, wIdx + ldw + L);
    x.sub(c11.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + ldw + L);
    if (rows < 3) return;
    x = FloatVector.fromArray(S, w, wIdx + 2 * ldw);
    x.sub(c20.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 2 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 2 * ldw + L);
    x.sub(c21.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 2 * ldw + L);
    if (rows < 4) return;
    x = FloatVector.fromArray(S, w, wIdx + 3 * ldw);
    x.sub(c30.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 3 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 3 * ldw + L);
    x.sub(c31.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 3 * ldw + L);
  }

  /** {@link #kernel} for a full tile, applying SGD's update to W from the accumulators (see {@link #sgemmRowsSgd}). */
  private static void kernelSgd(int kc, float[] ap, int aBase, float[] bp, int bBase, int ldb, float[] w, int wIdx,
      int ldw, float lr, float wd, float sign) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    FloatVector c40 = FloatVector.zero(S), c41 = FloatVector.zero(S);
    FloatVector c50 = FloatVector.zero(S), c51 = FloatVector.zero(S);
    FloatVector c60 = FloatVector.zero(S), c61 = FloatVector.zero(S);
    FloatVector c70 = FloatVector.zero(S), c71 = FloatVector.zero(S);
    FloatVector c80 = FloatVector.zero(S), c81 = FloatVector.zero(S);
    FloatVector c90 = FloatVector.zero(S), c91 = FloatVector.zero(S);
    FloatVector ca0 = FloatVector.zero(S), ca1 = FloatVector.zero(S);
    FloatVector cb0 = FloatVector.zero(S), cb1 = FloatVector.zero(S);
    for (int p = 0, bi = bBase; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bp, bi);
      FloatVector b1 = FloatVector.fromArray(S, bp, bi + L);
      int ai = aBase + p * MR;
      FloatVector av = FloatVector.broadcast(S, ap[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, ap[ai + 1]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, ap[ai + 2]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, ap[ai + 3]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, ap[ai + 4]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, ap[ai + 5]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, ap[ai + 6]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, ap[ai + 7]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, ap[ai + 8]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, ap[ai + 9]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, ap[ai + 10]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, ap[ai + 11]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    FloatVector lrv = FloatVector.broadcast(S, lr);
    FloatVector wdv = FloatVector.broadcast(S, wd);
    FloatVector sgv = FloatVector.broadcast(S, sign);
    // written out per row: a helper taking the accumulators would box them (see kernel)
    FloatVector x;
    x = FloatVector.fromArray(S, w, wIdx + 0 * ldw);
    x.sub(c00.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 0 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 0 * ldw + L);
    x.sub(c01.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 0 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 1 * ldw);
    x.sub(c10.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 1 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 1 * ldw + L);
    x.sub(c11.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 1 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 2 * ldw);
    x.sub(c20.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 2 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 2 * ldw + L);
    x.sub(c21.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 2 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 3 * ldw);
    x.sub(c30.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 3 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 3 * ldw + L);
    x.sub(c31.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 3 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 4 * ldw);
    x.sub(c40.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 4 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 4 * ldw + L);
    x.sub(c41.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 4 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 5 * ldw);
    x.sub(c50.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 5 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 5 * ldw + L);
    x.sub(c51.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 5 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 6 * ldw);
    x.sub(c60.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 6 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 6 * ldw + L);
    x.sub(c61.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 6 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 7 * ldw);
    x.sub(c70.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 7 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 7 * ldw + L);
    x.sub(c71.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 7 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 8 * ldw);
    x.sub(c80.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 8 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 8 * ldw + L);
    x.sub(c81.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 8 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 9 * ldw);
    x.sub(c90.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 9 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 9 * ldw + L);
    x.sub(c91.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 9 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 10 * ldw);
    x.sub(ca0.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 10 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 10 * ldw + L);
    x.sub(ca1.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 10 * ldw + L);
    x = FloatVector.fromArray(S, w, wIdx + 11 * ldw);
    x.sub(cb0.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 11 * ldw);
    x = FloatVector.fromArray(S, w, wIdx + 11 * ldw + L);
    x.sub(cb1.mul(sgv).add(x.mul(wdv)).mul(lrv)).intoArray(w, wIdx + 11 * ldw + L);
  }

  /**
   * Columns j0..j1 of C (m rows, ldc apart) to or from their transpose ct (row j - j0 holds column j, rows ldt
   * apart): into ct when {@code toCt}, else from it. An exact copy either way, 16 x 16 blocks in registers where
   * {@link Transpose16} applies.
   */
  private static void transposeInto(float[] c, int cOff, int ldc, int m, int j0, int j1, float[] ct, int ldt,
      boolean toCt) {
    int n = j1 - j0;
    int m16 = Transpose16.APPLIES ? m / 16 * 16 : 0;
    int n16 = Transpose16.APPLIES ? n / 16 * 16 : 0;
    for (int i = 0; i < m16; i += 16) {
      for (int j = 0; j < n16; j += 16) {
        if (toCt) Transpose16.transpose(c, cOff + i * ldc + j0 + j, ldc, ct, j * ldt + i, ldt, 0f);
        else Transpose16.transpose(ct, j * ldt + i, ldt, c, cOff + i * ldc + j0 + j, ldc, 0f);
      }
    }
    for (int i = 0; i < m; i++) { // the edges: columns past n16 of every row, all columns of rows past m16
      int ci = cOff + i * ldc + j0;
      for (int j = i < m16 ? n16 : 0; j < n; j++) {
        if (toCt) ct[j * ldt + i] = c[ci + j];
        else c[ci + j] = ct[j * ldt + i];
      }
    }
  }

  /**
   * Floats from one packed B micro-panel to the next. With MR = 4, kc rows plus one spare row, so
   * the panels do not all start in the same L1 set (kc * NR floats is a multiple of 4 KiB) while
   * packB writes a row into each of them in turn; the AVX-512 path keeps its measured layout.
   */
  private static int panelStride(int kc) {
    return MR == 12 ? kc * NR : kc * NR + NR;
  }

  private static int roundUp(int x, int multiple) {
    return (x + multiple - 1) / multiple * multiple;
  }
}
