package dev.ember.backend.cpu.vector;

import static jdk.incubator.vector.VectorOperators.GT;
import static jdk.incubator.vector.VectorOperators.MAX;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.cpu.Parallel;
import java.util.Arrays;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The float32 flash-attention forward on the Vector API (FlashAttention's algorithm, fused): for each
 * (batch element, block of queries) a task computes one [bq, bk] block of scores at a time with its own
 * register-tiled product, turns it into probabilities in place with a running max and sum per query row
 * (online softmax: one pass for the max, one for exp(s - max) and the row sum, exp vectorized), and
 * accumulates probabilities times values into a [bq, Ev] block that is rescaled when a row's max grows.
 * The block of scores never leaves L2; no GEMM call, packing of the query block per key block or
 * scalar pass over the scores remains from the generic tiled kernel (CpuAttention), which at T = 2048
 * ran slower than the plain path's GEMMs and softmax.
 *
 * <p>Layout: k is packed once per call into panels of {@link #NR} keys, [E][NR] each (zero-padded past S),
 * and v, when Ev is not a multiple of NR, into rows padded to a whole number of NR columns; the query block
 * is copied per task, times the scale, into rows padded to a multiple of 4. Key blocks are {@code bk}
 * rounded up to whole panels. Tasks are the same (batch, query block) pairs whatever the thread count, and
 * each row's sums run in a fixed order (a vector's lanes added in lane order, never reduceLanes(ADD), whose
 * rounding changes once C2 compiles it), so results are the same bits on any number of threads and in any JIT state.
 */
public final class VectorAttention {
  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  private static final int L = S.length();
  /** Columns of a register tile: keys in the score product, value columns in the output product. */
  static final int NR = 2 * L;

  private static final ThreadLocal<Workspace> WORKSPACE = ThreadLocal.withInitial(Workspace::new);

  private VectorAttention() {}

  /** Per-thread blocks, grown on demand and reused across calls. */
  private static final class Workspace {
    float[] q = new float[0];
    float[] scores = new float[0];
    float[] acc = new float[0];
    float[] max = new float[0];
    double[] sum = new double[0];

    void ensure(int rows, int e, int bk, int evPad) {
      if (q.length < rows * e) q = new float[rows * e];
      if (scores.length < rows * bk) scores = new float[rows * bk];
      if (acc.length < rows * evPad) acc = new float[rows * evPad];
      if (max.length < rows) {
        max = new float[rows];
        sum = new double[rows];
      }
    }
  }

  /** Whether {@link #forward} runs the problem: one without a mask or dropout. */
  public static boolean runs(AttentionKernels.Problem p) {
    return p.mask() == null && p.dropoutP() == 0;
  }

  /**
   * The forward of {@link AttentionKernels#forward} for contiguous float32 q [B, L, E], k [B, S, E],
   * v [B, S, Ev] at the given offsets: writes out [B, L, Ev] and lse [B * L]. Returns false, having done
   * nothing, for a problem with a mask or dropout, which the generic tiled kernel runs.
   */
  public static boolean forward(AttentionKernels.Problem p, float[] q, int qo, float[] k, int ko, float[] v, int vo,
      float[] out, int oo, double[] lse) {
    if (!runs(p)) return false;
    int e = p.e();
    int ev = p.ev();
    int s = p.s();
    int panels = (s + NR - 1) / NR;
    int evPad = roundUp(ev, NR);
    float[] kt = new float[p.batch() * panels * e * NR];
    float[] vp = ev == evPad ? null : new float[p.batch() * s * evPad];
    Parallel.forEach(p.batch(), b -> pack(p, k, ko, v, vo, kt, vp, b, panels, evPad));
    int bq = roundUp(p.bq(), 4);
    int bk = roundUp(p.bk(), NR);
    int blocks = Parallel.chunks(p.l(), bq);
    float[] vs = vp == null ? v : vp;
    int vBase = vp == null ? vo : 0;
    Parallel.forEach(p.batch() * blocks, t -> block(p, q, qo, kt, panels, vs, vBase, evPad, out, oo, lse,
        t / blocks, t % blocks * bq, bq, bk));
    return true;
  }

  /** Batch element b's keys as [E][NR] panels, and its values in rows of evPad when vp is non-null. */
  private static void pack(AttentionKernels.Problem p, float[] k, int ko, float[] v, int vo, float[] kt, float[] vp,
      int b, int panels, int evPad) {
    int e = p.e();
    int s = p.s();
    for (int j = 0; j < s; j++) {
      int src = ko + (b * s + j) * e;
      int dst = ((b * panels + j / NR) * e) * NR + j % NR;
      for (int c = 0; c < e; c++) kt[dst + c * NR] = k[src + c];
    }
    if (vp != null) {
      int ev = p.ev();
      for (int j = 0; j < s; j++) System.arraycopy(v, vo + (b * s + j) * ev, vp, (b * s + j) * evPad, ev);
    }
  }

  private static void block(AttentionKernels.Problem p, float[] q, int qo, float[] kt, int panels, float[] v, int vBase,
      int evPad, float[] out, int oo, double[] lse, int b, int i0, int bq, int bk) {
    int e = p.e();
    int ev = p.ev();
    int l = p.l();
    int s = p.s();
    int nq = Math.min(l, i0 + bq) - i0;
    int rows = roundUp(nq, 4);
    Workspace ws = WORKSPACE.get();
    ws.ensure(rows, e, bk, evPad);
    float[] qb = ws.q;
    float[] st = ws.scores;
    float[] acc = ws.acc;
    float[] m = ws.max;
    double[] sum = ws.sum;
    float scale = (float) p.scale();
    for (int r = 0; r < nq; r++) {
      int src = qo + (b * l + i0 + r) * e;
      for (int c = 0; c < e; c++) qb[r * e + c] = q[src + c] * scale;
    }
    Arrays.fill(qb, nq * e, rows * e, 0f);
    Arrays.fill(acc, 0, rows * evPad, 0f);
    Arrays.fill(m, 0, rows, Float.NEGATIVE_INFINITY);
    Arrays.fill(sum, 0, rows, 0);
    int vb = vBase + b * s * evPad; // v's rows are evPad apart, packed or not
    int jEnd = p.keyEnd(i0 + nq);
    for (int j0 = p.keyStart(i0) / bk * bk; j0 < jEnd; j0 += bk) {
      int nk = Math.min(s, j0 + bk) - j0;
      int nkPad = roundUp(nk, NR);
      for (int c0 = 0; c0 < nkPad; c0 += NR) { // scores = (scale q) k^T
        int panel = ((b * panels) + (j0 + c0) / NR) * e * NR;
        int r0 = 0;
        for (; r0 + 12 <= rows; r0 += 12) store12(e, qb, r0 * e, e, kt, panel, NR, st, r0 * bk + c0, bk);
        for (; r0 < rows; r0 += 4) store4(e, qb, r0 * e, e, kt, panel, NR, st, r0 * bk + c0, bk);
      }
      for (int r = 0; r < rows; r++) {
        int so = r * bk;
        int i = i0 + r;
        int lo = r < nq ? Math.max(0, Math.min(nk, p.keyStart(i) - j0)) : 0;
        int hi = r < nq ? Math.max(lo, Math.min(nk, p.keyEnd(i + 1) - j0)) : 0;
        if (lo >= hi) { // no visible key in this block (or a padding row): probabilities 0
          Arrays.fill(st, so, so + nkPad, 0f);
          continue;
        }
        Arrays.fill(st, so, so + lo, Float.NEGATIVE_INFINITY);
        Arrays.fill(st, so + hi, so + nkPad, Float.NEGATIVE_INFINITY);
        FloatVector mv = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        for (int c = so; c < so + nkPad; c += L) {
          FloatVector x = FloatVector.fromArray(S, st, c);
          mv = mv.blend(x, x.compare(GT, mv)); // compare and blend: a NaN score is skipped here, and exp keeps it
        }
        float mOld = m[r];
        float mNew = Math.max(mOld, mv.reduceLanes(MAX));
        if (mNew == Float.NEGATIVE_INFINITY) {
          Arrays.fill(st, so, so + nkPad, 0f);
          continue;
        }
        if (mNew != mOld) {
          float alpha = (float) Math.exp((double) mOld - mNew); // 0 when the row had no key yet
          for (int c = r * evPad; c < (r + 1) * evPad; c += L) {
            FloatVector.fromArray(S, acc, c).mul(alpha).intoArray(acc, c);
          }
          sum[r] *= alpha;
          m[r] = mNew;
        }
        // p = exp(s - max) in place and its sum (vectors in order, lanes in lane order): VMath's exp, whose lanes
        // below EXP_ZERO (-inf included) are exactly 0, as the polynomial from the low clamp gives them
        float rowSum = VMath.expShiftedSum(st, so, mNew, st, so, nkPad);
        sum[r] += rowSum;
      }
      for (int c0 = 0; c0 < evPad; c0 += NR) { // acc += p v
        int vo = vb + j0 * evPad + c0;
        int r0 = 0;
        for (; r0 + 12 <= rows; r0 += 12) add12(nk, st, r0 * bk, bk, v, vo, evPad, acc, r0 * evPad + c0, evPad);
        for (; r0 < rows; r0 += 4) add4(nk, st, r0 * bk, bk, v, vo, evPad, acc, r0 * evPad + c0, evPad);
      }
    }
    for (int r = 0; r < nq; r++) {
      int o = oo + (b * l + i0 + r) * ev;
      double d = sum[r];
      for (int c = 0; c < ev; c++) out[o + c] = (float) (acc[r * evPad + c] / d); // 0/0 = NaN: no key
      lse[b * l + i0 + r] = m[r] + Math.log(d);
    }
  }

  /**
   * c[12 x NR] = a[12 x kc] b[kc x NR]: a's rows {@code lda} apart, b's {@code ldb}, c's {@code ldc}. The
   * accumulators start from FloatVector.zero inside the method, as VectorGemm's kernels (C2 keeps them in
   * registers).
   */
  private static void store12(int kc, float[] a, int ao, int lda, float[] bm, int bo, int ldb, float[] c, int co,
      int ldc) {
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
    for (int p = 0, bi = bo; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bm, bi);
      FloatVector b1 = FloatVector.fromArray(S, bm, bi + L);
      int ai = ao + p;
      FloatVector av = FloatVector.broadcast(S, a[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, a[ai + lda]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, a[ai + 2 * lda]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, a[ai + 3 * lda]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, a[ai + 4 * lda]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, a[ai + 5 * lda]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, a[ai + 6 * lda]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, a[ai + 7 * lda]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, a[ai + 8 * lda]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, a[ai + 9 * lda]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, a[ai + 10 * lda]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, a[ai + 11 * lda]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    c00.intoArray(c, co); c01.intoArray(c, co + L);
    c10.intoArray(c, co + ldc); c11.intoArray(c, co + ldc + L);
    c20.intoArray(c, co + 2 * ldc); c21.intoArray(c, co + 2 * ldc + L);
    c30.intoArray(c, co + 3 * ldc); c31.intoArray(c, co + 3 * ldc + L);
    c40.intoArray(c, co + 4 * ldc); c41.intoArray(c, co + 4 * ldc + L);
    c50.intoArray(c, co + 5 * ldc); c51.intoArray(c, co + 5 * ldc + L);
    c60.intoArray(c, co + 6 * ldc); c61.intoArray(c, co + 6 * ldc + L);
    c70.intoArray(c, co + 7 * ldc); c71.intoArray(c, co + 7 * ldc + L);
    c80.intoArray(c, co + 8 * ldc); c81.intoArray(c, co + 8 * ldc + L);
    c90.intoArray(c, co + 9 * ldc); c91.intoArray(c, co + 9 * ldc + L);
    ca0.intoArray(c, co + 10 * ldc); ca1.intoArray(c, co + 10 * ldc + L);
    cb0.intoArray(c, co + 11 * ldc); cb1.intoArray(c, co + 11 * ldc + L);
  }

  /** {@link #store12} for 4 rows. */
  private static void store4(int kc, float[] a, int ao, int lda, float[] bm, int bo, int ldb, float[] c, int co,
      int ldc) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0, bi = bo; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bm, bi);
      FloatVector b1 = FloatVector.fromArray(S, bm, bi + L);
      int ai = ao + p;
      FloatVector av = FloatVector.broadcast(S, a[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, a[ai + lda]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, a[ai + 2 * lda]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, a[ai + 3 * lda]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    c00.intoArray(c, co); c01.intoArray(c, co + L);
    c10.intoArray(c, co + ldc); c11.intoArray(c, co + ldc + L);
    c20.intoArray(c, co + 2 * ldc); c21.intoArray(c, co + 2 * ldc + L);
    c30.intoArray(c, co + 3 * ldc); c31.intoArray(c, co + 3 * ldc + L);
  }

  /** c[12 x NR] += a[12 x kc] b[kc x NR], as {@link #store12}: the block's sum first, then added to c. */
  private static void add12(int kc, float[] a, int ao, int lda, float[] bm, int bo, int ldb, float[] c, int co,
      int ldc) {
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
    for (int p = 0, bi = bo; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bm, bi);
      FloatVector b1 = FloatVector.fromArray(S, bm, bi + L);
      int ai = ao + p;
      FloatVector av = FloatVector.broadcast(S, a[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, a[ai + lda]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, a[ai + 2 * lda]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, a[ai + 3 * lda]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
      av = FloatVector.broadcast(S, a[ai + 4 * lda]);
      c40 = av.fma(b0, c40); c41 = av.fma(b1, c41);
      av = FloatVector.broadcast(S, a[ai + 5 * lda]);
      c50 = av.fma(b0, c50); c51 = av.fma(b1, c51);
      av = FloatVector.broadcast(S, a[ai + 6 * lda]);
      c60 = av.fma(b0, c60); c61 = av.fma(b1, c61);
      av = FloatVector.broadcast(S, a[ai + 7 * lda]);
      c70 = av.fma(b0, c70); c71 = av.fma(b1, c71);
      av = FloatVector.broadcast(S, a[ai + 8 * lda]);
      c80 = av.fma(b0, c80); c81 = av.fma(b1, c81);
      av = FloatVector.broadcast(S, a[ai + 9 * lda]);
      c90 = av.fma(b0, c90); c91 = av.fma(b1, c91);
      av = FloatVector.broadcast(S, a[ai + 10 * lda]);
      ca0 = av.fma(b0, ca0); ca1 = av.fma(b1, ca1);
      av = FloatVector.broadcast(S, a[ai + 11 * lda]);
      cb0 = av.fma(b0, cb0); cb1 = av.fma(b1, cb1);
    }
    c00.add(FloatVector.fromArray(S, c, co)).intoArray(c, co);
    c01.add(FloatVector.fromArray(S, c, co + L)).intoArray(c, co + L);
    c10.add(FloatVector.fromArray(S, c, co + ldc)).intoArray(c, co + ldc);
    c11.add(FloatVector.fromArray(S, c, co + ldc + L)).intoArray(c, co + ldc + L);
    c20.add(FloatVector.fromArray(S, c, co + 2 * ldc)).intoArray(c, co + 2 * ldc);
    c21.add(FloatVector.fromArray(S, c, co + 2 * ldc + L)).intoArray(c, co + 2 * ldc + L);
    c30.add(FloatVector.fromArray(S, c, co + 3 * ldc)).intoArray(c, co + 3 * ldc);
    c31.add(FloatVector.fromArray(S, c, co + 3 * ldc + L)).intoArray(c, co + 3 * ldc + L);
    c40.add(FloatVector.fromArray(S, c, co + 4 * ldc)).intoArray(c, co + 4 * ldc);
    c41.add(FloatVector.fromArray(S, c, co + 4 * ldc + L)).intoArray(c, co + 4 * ldc + L);
    c50.add(FloatVector.fromArray(S, c, co + 5 * ldc)).intoArray(c, co + 5 * ldc);
    c51.add(FloatVector.fromArray(S, c, co + 5 * ldc + L)).intoArray(c, co + 5 * ldc + L);
    c60.add(FloatVector.fromArray(S, c, co + 6 * ldc)).intoArray(c, co + 6 * ldc);
    c61.add(FloatVector.fromArray(S, c, co + 6 * ldc + L)).intoArray(c, co + 6 * ldc + L);
    c70.add(FloatVector.fromArray(S, c, co + 7 * ldc)).intoArray(c, co + 7 * ldc);
    c71.add(FloatVector.fromArray(S, c, co + 7 * ldc + L)).intoArray(c, co + 7 * ldc + L);
    c80.add(FloatVector.fromArray(S, c, co + 8 * ldc)).intoArray(c, co + 8 * ldc);
    c81.add(FloatVector.fromArray(S, c, co + 8 * ldc + L)).intoArray(c, co + 8 * ldc + L);
    c90.add(FloatVector.fromArray(S, c, co + 9 * ldc)).intoArray(c, co + 9 * ldc);
    c91.add(FloatVector.fromArray(S, c, co + 9 * ldc + L)).intoArray(c, co + 9 * ldc + L);
    ca0.add(FloatVector.fromArray(S, c, co + 10 * ldc)).intoArray(c, co + 10 * ldc);
    ca1.add(FloatVector.fromArray(S, c, co + 10 * ldc + L)).intoArray(c, co + 10 * ldc + L);
    cb0.add(FloatVector.fromArray(S, c, co + 11 * ldc)).intoArray(c, co + 11 * ldc);
    cb1.add(FloatVector.fromArray(S, c, co + 11 * ldc + L)).intoArray(c, co + 11 * ldc + L);
  }

  /** {@link #add12} for 4 rows. */
  private static void add4(int kc, float[] a, int ao, int lda, float[] bm, int bo, int ldb, float[] c, int co,
      int ldc) {
    FloatVector c00 = FloatVector.zero(S), c01 = FloatVector.zero(S);
    FloatVector c10 = FloatVector.zero(S), c11 = FloatVector.zero(S);
    FloatVector c20 = FloatVector.zero(S), c21 = FloatVector.zero(S);
    FloatVector c30 = FloatVector.zero(S), c31 = FloatVector.zero(S);
    for (int p = 0, bi = bo; p < kc; p++, bi += ldb) {
      FloatVector b0 = FloatVector.fromArray(S, bm, bi);
      FloatVector b1 = FloatVector.fromArray(S, bm, bi + L);
      int ai = ao + p;
      FloatVector av = FloatVector.broadcast(S, a[ai]);
      c00 = av.fma(b0, c00); c01 = av.fma(b1, c01);
      av = FloatVector.broadcast(S, a[ai + lda]);
      c10 = av.fma(b0, c10); c11 = av.fma(b1, c11);
      av = FloatVector.broadcast(S, a[ai + 2 * lda]);
      c20 = av.fma(b0, c20); c21 = av.fma(b1, c21);
      av = FloatVector.broadcast(S, a[ai + 3 * lda]);
      c30 = av.fma(b0, c30); c31 = av.fma(b1, c31);
    }
    c00.add(FloatVector.fromArray(S, c, co)).intoArray(c, co);
    c01.add(FloatVector.fromArray(S, c, co + L)).intoArray(c, co + L);
    c10.add(FloatVector.fromArray(S, c, co + ldc)).intoArray(c, co + ldc);
    c11.add(FloatVector.fromArray(S, c, co + ldc + L)).intoArray(c, co + ldc + L);
    c20.add(FloatVector.fromArray(S, c, co + 2 * ldc)).intoArray(c, co + 2 * ldc);
    c21.add(FloatVector.fromArray(S, c, co + 2 * ldc + L)).intoArray(c, co + 2 * ldc + L);
    c30.add(FloatVector.fromArray(S, c, co + 3 * ldc)).intoArray(c, co + 3 * ldc);
    c31.add(FloatVector.fromArray(S, c, co + 3 * ldc + L)).intoArray(c, co + 3 * ldc + L);
  }

  private static int roundUp(int x, int multiple) {
    return (x + multiple - 1) / multiple * multiple;
  }
}
