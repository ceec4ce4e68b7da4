package dev.ember.backend.cpu.vector;

import dev.ember.backend.cpu.HalfOperand;
import dev.ember.backend.cpu.Parallel;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * SGEMM for op(A) of at most {@link #MAX_M} rows (batch-1 inference, a few samples), without
 * packing: each element of B is used at most {@code m} times, so copying B into panels (what
 * {@link VectorGemm} does to reuse it across many rows) would cost more than the product. With
 * op(B) = B^T every C element is a dot product of an A row with a contiguous row of b; otherwise
 * each row of C is a sum of rows of b scaled by A's entries.
 *
 * <p>Determinism: C is split into fixed column blocks whatever the thread count, and every element
 * is summed in one fixed order by the one task that owns it.
 */
final class SkinnyGemm {
  static final int MAX_M = 4;
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  /** Columns of C per task: 64 dot products (B^T), or 4 vectors of a row (B). */
  private static final int DOT_BLOCK = 64;
  private static final int AXPY_BLOCK = 4 * L;
  /** Below this many multiply-adds the pool hand-off costs more than it saves. */
  private static final long SERIAL_WORK = 1L << 16;

  private SkinnyGemm() {}

  static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, null, bOff, ldb, beta, c, cOff, ldc);
  }

  /**
   * {@link #sgemm} with B given as half bits ({@code bh}, b then null) or as floats: each task widens the block of B
   * it reads (its rows of B^T, or its columns of every row of B) into a per-thread buffer and runs on that.
   */
  static void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff,
      int ldc) {
    float[] ar = a;
    int arOff = aOff;
    int ars = lda;
    if (transA) { // op(A) rows are columns of a: copy them out once (m * k floats)
      ar = new float[m * k];
      for (int p = 0; p < k; p++) {
        for (int i = 0; i < m; i++) ar[i * k + p] = a[aOff + p * lda + i];
      }
      arOff = 0;
      ars = k;
    }
    final float[] fa = ar;
    final int fo = arOff;
    final int fs = ars;
    int block = transB ? DOT_BLOCK : AXPY_BLOCK;
    int tasks = (n + block - 1) / block;
    java.util.function.IntConsumer run = bh == null
        ? t -> task(transB, t, block, m, n, k, alpha, fa, fo, fs, b, bOff, ldb, beta, c, cOff, ldc)
        : t -> halfTask(transB, t, block, m, n, k, alpha, fa, fo, fs, bh, bOff, ldb, beta, c, cOff, ldc);
    if ((long) m * n * k < SERIAL_WORK) {
      for (int t = 0; t < tasks; t++) run.accept(t);
    } else {
      Parallel.forEach(tasks, run);
    }
  }

  /** Per-thread home of a task's widened block of a half B. */
  private static final ThreadLocal<float[][]> WIDENED = ThreadLocal.withInitial(() -> new float[1][0]);

  /** {@link #task} on a half B: its block widened, then the float task on it, offsets chosen to read it there. */
  private static void halfTask(boolean transB, int t, int block, int m, int n, int k, float alpha, float[] a, int aOff,
      int lda, HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    int j0 = t * block;
    int w = Math.min(n, j0 + block) - j0;
    float[][] holder = WIDENED.get();
    if (holder[0].length < w * k) holder[0] = new float[w * k];
    float[] wb = holder[0];
    if (transB) { // rows j0..j0+w of b, k each: row j at wb[(j - j0) k]
      for (int j = 0; j < w; j++) bh.toFloats(bOff + (j0 + j) * ldb, wb, j * k, k);
      task(true, t, block, m, n, k, alpha, a, aOff, lda, wb, -j0 * k, k, beta, c, cOff, ldc);
    } else { // columns j0..j0+w of each of the k rows: b[p][j] at wb[p w + j - j0]
      for (int p = 0; p < k; p++) bh.toFloats(bOff + p * ldb + j0, wb, p * w, w);
      task(false, t, block, m, n, k, alpha, a, aOff, lda, wb, -j0, w, beta, c, cOff, ldc);
    }
  }

  private static void task(boolean transB, int t, int block, int m, int n, int k, float alpha, float[] a, int aOff,
      int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    int j0 = t * block;
    int j1 = Math.min(n, j0 + block);
    if (transB) {
      for (int i = 0; i < m; i++) dots(a, aOff + i * lda, k, b, bOff, ldb, j0, j1, alpha, beta, c, cOff + i * ldc);
    } else {
      for (int i = 0; i < m; i++) axpys(a, aOff + i * lda, k, b, bOff, ldb, j0, j1, alpha, beta, c, cOff + i * ldc);
    }
  }

  /**
   * c[j] = alpha * (a . b_row(j)) + beta * c[j] for j in [j0, j1), eight rows of b at a time, then four, then one.
   * Every row's sum runs in one order whatever block it falls in: lane l sums the products at p = l mod L in p
   * order, the lanes are added in lane order, then the products past the last whole vector.
   */
  private static void dots(float[] a, int ai, int k, float[] b, int bOff, int ldb, int j0, int j1, float alpha,
      float beta, float[] c, int ci) {
    int kv = k - k % L;
    int j = j0;
    float[] t = SUMS.get();
    // Eight rows: nine loads per eight FMAs, and the lanes summed from an array rather than by lane(l) extracts.
    // The MNIST MLP's 784 -> 128 layer at batch 1 (one thread, CPU time, fastest of 40 rounds alternating in one
    // JVM, loaded host): 7.1 -> 5.6 us, about the rate this host's L2 streams the weight (31 bytes a cycle at
    // 2.3 GHz); sixteen rows with a register transpose for the lane sums ran 6.5 us.
    for (; j + 8 <= j1; j += 8) {
      int r0 = bOff + j * ldb;
      FloatVector s0 = FloatVector.zero(S), s1 = FloatVector.zero(S), s2 = FloatVector.zero(S), s3 = FloatVector.zero(S);
      FloatVector s4 = FloatVector.zero(S), s5 = FloatVector.zero(S), s6 = FloatVector.zero(S), s7 = FloatVector.zero(S);
      for (int p = 0; p < kv; p += L) {
        FloatVector av = FloatVector.fromArray(S, a, ai + p);
        int q = r0 + p;
        s0 = av.fma(FloatVector.fromArray(S, b, q), s0);
        s1 = av.fma(FloatVector.fromArray(S, b, q + ldb), s1);
        s2 = av.fma(FloatVector.fromArray(S, b, q + 2 * ldb), s2);
        s3 = av.fma(FloatVector.fromArray(S, b, q + 3 * ldb), s3);
        s4 = av.fma(FloatVector.fromArray(S, b, q + 4 * ldb), s4);
        s5 = av.fma(FloatVector.fromArray(S, b, q + 5 * ldb), s5);
        s6 = av.fma(FloatVector.fromArray(S, b, q + 6 * ldb), s6);
        s7 = av.fma(FloatVector.fromArray(S, b, q + 7 * ldb), s7);
      }
      s0.intoArray(t, 0);
      s1.intoArray(t, L);
      s2.intoArray(t, 2 * L);
      s3.intoArray(t, 3 * L);
      s4.intoArray(t, 4 * L);
      s5.intoArray(t, 5 * L);
      s6.intoArray(t, 6 * L);
      s7.intoArray(t, 7 * L);
      for (int r = 0; r < 8; r++) {
        float d = t[r * L]; // in lane order: reduceLanes(ADD) rounds differently once compiled
        for (int l = 1; l < L; l++) d += t[r * L + l];
        int rr = r0 + r * ldb;
        for (int p = kv; p < k; p++) d = Math.fma(a[ai + p], b[rr + p], d);
        store(c, ci + j + r, d, alpha, beta);
      }
    }
    for (; j + 4 <= j1; j += 4) {
      int r0 = bOff + j * ldb;
      int r1 = r0 + ldb;
      int r2 = r1 + ldb;
      int r3 = r2 + ldb;
      FloatVector s0 = FloatVector.zero(S), s1 = FloatVector.zero(S), s2 = FloatVector.zero(S), s3 = FloatVector.zero(S);
      for (int p = 0; p < kv; p += L) {
        FloatVector av = FloatVector.fromArray(S, a, ai + p);
        s0 = av.fma(FloatVector.fromArray(S, b, r0 + p), s0);
        s1 = av.fma(FloatVector.fromArray(S, b, r1 + p), s1);
        s2 = av.fma(FloatVector.fromArray(S, b, r2 + p), s2);
        s3 = av.fma(FloatVector.fromArray(S, b, r3 + p), s3);
      }
      // in lane order: reduceLanes(ADD) rounds differently once compiled, so results would follow JIT state
      float d0 = s0.lane(0), d1 = s1.lane(0), d2 = s2.lane(0), d3 = s3.lane(0);
      for (int l = 1; l < L; l++) {
        d0 += s0.lane(l);
        d1 += s1.lane(l);
        d2 += s2.lane(l);
        d3 += s3.lane(l);
      }
      for (int p = kv; p < k; p++) {
        float av = a[ai + p];
        d0 = Math.fma(av, b[r0 + p], d0);
        d1 = Math.fma(av, b[r1 + p], d1);
        d2 = Math.fma(av, b[r2 + p], d2);
        d3 = Math.fma(av, b[r3 + p], d3);
      }
      store(c, ci + j, d0, alpha, beta);
      store(c, ci + j + 1, d1, alpha, beta);
      store(c, ci + j + 2, d2, alpha, beta);
      store(c, ci + j + 3, d3, alpha, beta);
    }
    for (; j < j1; j++) {
      int r = bOff + j * ldb;
      FloatVector s = FloatVector.zero(S);
      for (int p = 0; p < kv; p += L) s = FloatVector.fromArray(S, a, ai + p).fma(FloatVector.fromArray(S, b, r + p), s);
      float d = s.lane(0); // in lane order: reduceLanes(ADD) rounds differently once compiled
      for (int l = 1; l < L; l++) d += s.lane(l);
      for (int p = kv; p < k; p++) d = Math.fma(a[ai + p], b[r + p], d);
      store(c, ci + j, d, alpha, beta);
    }
  }

  private static void store(float[] c, int idx, float d, float alpha, float beta) {
    float v = alpha * d;
    c[idx] = beta == 0 ? v : Math.fma(c[idx], beta, v);
  }

  /** c[j0:j1] = alpha * sum_p a[p] * b_row(p)[j0:j1] + beta * c[j0:j1]. */
  private static void axpys(float[] a, int ai, int k, float[] b, int bOff, int ldb, int j0, int j1, float alpha,
      float beta, float[] c, int ci) {
    int j = j0;
    float[] t = SUMS.get();
    if (j1 - j0 == 4 * L) {
      FloatVector s0 = FloatVector.zero(S), s1 = FloatVector.zero(S), s2 = FloatVector.zero(S), s3 = FloatVector.zero(S);
      for (int p = 0, r = bOff + j0; p < k; p++, r += ldb) {
        FloatVector av = FloatVector.broadcast(S, a[ai + p]);
        s0 = av.fma(FloatVector.fromArray(S, b, r), s0);
        s1 = av.fma(FloatVector.fromArray(S, b, r + L), s1);
        s2 = av.fma(FloatVector.fromArray(S, b, r + 2 * L), s2);
        s3 = av.fma(FloatVector.fromArray(S, b, r + 3 * L), s3);
      }
      s0.intoArray(t, 0);
      s1.intoArray(t, L);
      s2.intoArray(t, 2 * L);
      s3.intoArray(t, 3 * L);
      storeRow(t, c, ci + j0, 4 * L, alpha, beta);
      return;
    }
    for (; j + L <= j1; j += L) {
      FloatVector s = FloatVector.zero(S);
      for (int p = 0, r = bOff + j; p < k; p++, r += ldb) s = FloatVector.broadcast(S, a[ai + p]).fma(FloatVector.fromArray(S, b, r), s);
      s.intoArray(t, 0);
      storeRow(t, c, ci + j, L, alpha, beta);
    }
    for (; j < j1; j++) {
      float d = 0f;
      for (int p = 0, r = bOff + j; p < k; p++, r += ldb) d = Math.fma(a[ai + p], b[r], d);
      store(c, ci + j, d, alpha, beta);
    }
  }

  /** Per-thread home of finished sums: a row's on their way to C (see storeRow), or eight rows' lanes (dots). */
  private static final ThreadLocal<float[]> SUMS = ThreadLocal.withInitial(() -> new float[8 * L]);

  /**
   * c[idx..idx+n) = alpha t[0..n) + beta c[idx..idx+n) (beta 0 ignores c), n a multiple of the vector length.
   * The sums come through an array, not as vector arguments: a helper taking a vector is fast only where C2
   * inlines it (see VMath).
   */
  private static void storeRow(float[] t, float[] c, int idx, int n, float alpha, float beta) {
    for (int i = 0; i < n; i += L) {
      FloatVector v = FloatVector.fromArray(S, t, i).mul(alpha);
      if (beta != 0) v = FloatVector.fromArray(S, c, idx + i).fma(FloatVector.broadcast(S, beta), v);
      v.intoArray(c, idx + i);
    }
  }
}
