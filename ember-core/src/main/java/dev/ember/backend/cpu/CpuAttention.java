package dev.ember.backend.cpu;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.StridedView;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import java.util.Arrays;

/**
 * The tiled, memory-efficient attention kernels (FlashAttention's algorithm): queries are taken in
 * blocks of {@code bq} rows and keys in blocks of {@code bk}; only one [bq, bk] block of scores
 * exists at a time. The forward keeps a running max and a running sum of exponentials per query
 * row (online softmax), rescaling the partial output whenever the max grows, and saves only the
 * logsumexp of each row. The backward recomputes each block's probabilities from that logsumexp.
 * Key blocks that lie wholly outside the causal or sliding-window band are never visited.
 *
 * <p>The block products (scores, probabilities times values, and the five products of the
 * backward) run on the backend's GEMM in the inputs' dtype; the softmax bookkeeping between them
 * is scalar code over one block. Inputs are contiguous q [B, L, E], k [B, S, E], v [B, S, Ev].
 * Work is split into tasks whose boundaries depend only on the shapes (a (batch, query block) in
 * the forward, a batch element in the backward), so results do not depend on the thread count.
 *
 * <p>A float32 forward without mask or dropout runs as the kernel set's fused kernel instead
 * ({@link FloatKernels#attentionForward}; on the Vector API, its own register-tiled products and a
 * vectorized online softmax), where the set has one.
 */
final class CpuAttention implements AttentionKernels {
  private final CpuBackend be;

  CpuAttention(CpuBackend be) {
    this.be = be;
  }

  /** The mask's values, F64, indexed by {@link Mask#index}; null without a mask. */
  private static double[] maskData(Problem p) {
    return p.mask() == null ? null : p.mask().data().storage().doubles();
  }

  @Override
  public boolean fusedForward(Problem p, DType dtype) {
    return dtype == DType.F32 && be.floatKernels().fusesAttention(p);
  }

  /**
   * Float32, per batch element on the pool: sgemm into a per-thread [L, S] block (256 KB at L = S = 256, in L2),
   * the band's -inf, softmaxRows in place, sgemm with v into out: the calls, arguments and row order of the plain
   * path's batched matmul (one sgemm per batch element), band mask and softmax (rows independent), so the same
   * bits. At B=1 H=8 T=256 D=64 on one thread the composition took ~1.85 ms (CPU time, load 4-6): ~0.66 each
   * product, ~0.38 the softmax over 2 MB of scores; this ~1.77 (A/B medians 1.92 -> 1.78), and at T=512
   * 7.7 -> 7.2. Fewer batch elements than threads keep the composition, whose GEMMs and softmax then use the threads.
   */
  @Override
  public boolean runsPlainForward(Problem p, DType dtype) {
    return p.mask() == null && p.dropoutP() == 0 && p.batch() >= Parallel.threads() && dtype == DType.F32;
  }

  @Override
  public void plainForward(Problem p, View q, View k, View v, View out) {
    if (!runsPlainForward(p, q.dtype()) || k.dtype() != DType.F32 || v.dtype() != DType.F32
        || out.dtype() != DType.F32) {
      throw new IllegalArgumentException("scaled_dot_product_attention: plain forward kernel for float32 without mask "
          + "or dropout, got " + q.dtype().torchName() + " q, " + k.dtype().torchName() + " k, "
          + v.dtype().torchName() + " v, " + out.dtype().torchName() + " out" + (p.mask() != null ? ", a mask" : "")
          + (p.dropoutP() > 0 ? ", dropout" : "") + " and " + p.batch() + " batch elements on "
          + Parallel.threads() + " threads");
    }
    FloatKernels fk = be.floatKernels();
    int l = p.l();
    int s = p.s();
    int e = p.e();
    int ev = p.ev();
    float[] qa = q.storage().floats();
    float[] ka = k.storage().floats();
    float[] va = v.storage().floats();
    float[] oa = out.storage().floats();
    boolean band = p.causal() || p.window() >= 0;
    Parallel.forEach(p.batch(), b -> {
      float[] sc = scoreBlock(l * s);
      fk.sgemm(false, true, l, s, e, 1f, qa, q.offset() + b * l * e, e, ka, k.offset() + b * s * e, e, 0f, sc, 0, s);
      if (band) {
        for (int i = 0; i < l; i++) {
          for (int j = 0; j < s; j++) if (!p.allowed(i, j)) sc[i * s + j] = Float.NEGATIVE_INFINITY;
        }
      }
      fk.softmaxRows(sc, 0, sc, 0, l, s, false);
      fk.sgemm(false, false, l, ev, s, 1f, sc, 0, s, va, v.offset() + b * s * ev, ev, 0f, oa,
          out.offset() + b * l * ev, ev);
    });
  }

  /** Up to this many floats (4 MB), a thread keeps its score block between calls; a larger one is per call. */
  private static final int KEPT_BLOCK = 1 << 20;

  private static final ThreadLocal<float[][]> SCORE_BLOCK = ThreadLocal.withInitial(() -> new float[][] {new float[0]});

  private static float[] scoreBlock(int n) {
    if (n > KEPT_BLOCK) return new float[n];
    float[][] held = SCORE_BLOCK.get();
    if (held[0].length < n) held[0] = new float[n];
    return held[0];
  }

  @Override
  public void forward(Problem p, View q, View k, View v, View out, double[] lse) {
    if (q.dtype() == DType.F32 && k.dtype() == DType.F32 && v.dtype() == DType.F32 && out.dtype() == DType.F32
        && be.floatKernels().attentionForward(p, q.storage().floats(), q.offset(), k.storage().floats(), k.offset(),
            v.storage().floats(), v.offset(), out.storage().floats(), out.offset(), lse)) {
      return; // the kernel set's fused forward (Vector API: VectorAttention)
    }
    double[] md = maskData(p);
    int blocks = Parallel.chunks(p.l(), p.bq());
    Parallel.forEach(p.batch() * blocks, t -> forwardBlock(p, md, q, k, v, out, lse, t / blocks, t % blocks * p.bq()));
  }

  private void forwardBlock(Problem p, double[] md, View q, View k, View v, View out, double[] lse, int b,
      int i0) {
    int ev = p.ev();
    int nq = Math.min(p.l(), i0 + p.bq()) - i0;
    View qb = rows(q, b, i0, nq);
    View acc = StridedView.allocate(q.dtype(), 1, nq, ev);
    Storage as = acc.storage();
    View sBuf = StridedView.allocate(q.dtype(), nq * p.bk());
    View pBuf = StridedView.allocate(q.dtype(), nq * p.bk());
    Storage ss = sBuf.storage();
    Storage ps = pBuf.storage();
    // float32: the same double arithmetic on the arrays (same bits), not a getDouble/setDouble per element,
    // which at T = 2048 (8 heads) cost ~160 of the forward's 189 ms.
    boolean f32 = q.dtype() == DType.F32;
    float[] sf = f32 ? ss.floats() : null;
    float[] pf = f32 ? ps.floats() : null;
    float[] af = f32 ? as.floats() : null;
    double[] m = new double[nq];
    double[] sum = new double[nq];
    Arrays.fill(m, Double.NEGATIVE_INFINITY);
    int jEnd = p.keyEnd(i0 + nq);
    for (int j0 = p.keyStart(i0) / p.bk() * p.bk(); j0 < jEnd; j0 += p.bk()) {
      int nk = Math.min(p.s(), j0 + p.bk()) - j0;
      View sView = block(sBuf, nq, nk, p.bk());
      View pView = block(pBuf, nq, nk, p.bk());
      be.matmul(qb, StridedView.transpose(rows(k, b, j0, nk), 1, 2), sView, false); // q k^T
      for (int r = 0; r < nq; r++) {
        int i = i0 + r;
        int so = r * p.bk();
        double blockMax = sf != null ? scores(p, md, sf, so, nk, b, i, j0) : scores(p, md, ss, so, nk, b, i, j0);
        double newMax = Math.max(m[r], blockMax);
        if (newMax == Double.NEGATIVE_INFINITY) continue; // nothing visible yet in this row: exp gives 0s
        if (sf != null) {
          for (int jj = so; jj < so + nk; jj++) sf[jj] = (float) (sf[jj] - newMax);
        } else {
          for (int jj = 0; jj < nk; jj++) ss.setDouble(so + jj, ss.getDouble(so + jj) - newMax);
        }
        double alpha = Math.exp(m[r] - newMax); // 0 when m was -inf
        if (alpha != 1) {
          if (af != null) {
            for (int c = r * ev; c < (r + 1) * ev; c++) af[c] = (float) (af[c] * alpha);
          } else {
            for (int c = 0; c < ev; c++) as.setDouble(r * ev + c, as.getDouble(r * ev + c) * alpha);
          }
        }
        sum[r] *= alpha;
        m[r] = newMax;
      }
      be.unary(UnaryOp.EXP, 0, sView, pView); // the block's probabilities (unnormalised), vectorized
      for (int r = 0; r < nq; r++) {
        int so = r * p.bk();
        double rowSum = 0;
        if (pf != null) {
          for (int jj = so; jj < so + nk; jj++) rowSum += pf[jj];
        } else {
          for (int jj = 0; jj < nk; jj++) rowSum += ps.getDouble(so + jj);
        }
        sum[r] += rowSum;
        if (p.dropoutP() > 0) {
          for (int jj = 0; jj < nk; jj++) ps.setDouble(so + jj, ps.getDouble(so + jj) * p.keep(b, i0 + r, j0 + jj));
        }
      }
      be.matmul(pView, rows(v, b, j0, nk), acc, true); // acc += P v
    }
    Storage os = out.storage();
    for (int r = 0; r < nq; r++) {
      int oo = (b * p.l() + i0 + r) * ev;
      if (f32) {
        float[] of = os.floats();
        for (int c = 0; c < ev; c++) of[oo + c] = (float) (af[r * ev + c] / sum[r]); // 0/0 = NaN: no key
      } else {
        for (int c = 0; c < ev; c++) os.setDouble(oo + c, as.getDouble(r * ev + c) / sum[r]);
      }
      lse[b * p.l() + i0 + r] = m[r] + Math.log(sum[r]);
    }
  }

  /** dmask gets the mask's gradient at the mask's own broadcast positions. */
  @Override
  public void backward(Problem p, View q, View k, View v, View out, double[] lse, View dout, View dq, View dk,
      View dv, double[] dmask) {
    View[] grads = {dq, dk, dv};
    double[] md = maskData(p);
    // a task owns one batch element's dq, dk, dv; a mask gradient is shared across the batch (the
    // mask broadcasts), so then the tasks run in order on this thread
    if (dmask != null) {
      for (int b = 0; b < p.batch(); b++) backwardBatch(p, md, q, k, v, out, lse, dout, grads, dmask, b);
    } else {
      Parallel.forEach(p.batch(), b -> backwardBatch(p, md, q, k, v, out, lse, dout, grads, null, b));
    }
  }

  private void backwardBatch(Problem p, double[] md, View q, View k, View v, View out, double[] lse,
      View dout, View[] grads, double[] dmask, int b) {
    int l = p.l();
    int ev = p.ev();
    Storage os = out.storage();
    Storage gs = dout.storage();
    View sBuf = StridedView.allocate(q.dtype(), p.bq() * p.bk());
    View pBuf = StridedView.allocate(q.dtype(), p.bq() * p.bk());
    View dpBuf = StridedView.allocate(q.dtype(), p.bq() * p.bk());
    Storage ss = sBuf.storage();
    Storage ps = pBuf.storage();
    Storage dps = dpBuf.storage();
    // float32: the same double arithmetic on the arrays (same bits) rather than Storage's per-element accessors
    boolean f32 = q.dtype() == DType.F32;
    float[] sf = f32 ? ss.floats() : null;
    float[] pf = f32 ? ps.floats() : null;
    float[] dpf = f32 ? dps.floats() : null;
    boolean f32Rows = f32 && dout.dtype() == DType.F32 && out.dtype() == DType.F32;
    float[] gf = f32Rows ? gs.floats() : null;
    float[] of = f32Rows ? os.floats() : null;
    boolean plainF32 = f32 && dmask == null && p.dropoutP() == 0;
    double[] dRow = new double[p.bq()];
    for (int i0 = 0; i0 < l; i0 += p.bq()) {
      int nq = Math.min(l, i0 + p.bq()) - i0;
      for (int r = 0; r < nq; r++) { // D_i = dO_i . O_i = sum_j P_ij dP_ij
        double d = 0;
        int oo = (b * l + i0 + r) * ev;
        if (gf != null) {
          for (int c = 0; c < ev; c++) d += (double) gf[dout.offset() + oo + c] * of[oo + c];
        } else {
          for (int c = 0; c < ev; c++) d += gs.getDouble(dout.offset() + oo + c) * os.getDouble(oo + c);
        }
        dRow[r] = d;
      }
      View qb = rows(q, b, i0, nq);
      View dob = rows(dout, b, i0, nq);
      View dqb = rows(grads[0], b, i0, nq);
      int jEnd = p.keyEnd(i0 + nq);
      for (int j0 = p.keyStart(i0) / p.bk() * p.bk(); j0 < jEnd; j0 += p.bk()) {
        int nk = Math.min(p.s(), j0 + p.bk()) - j0;
        View kb = rows(k, b, j0, nk);
        View vb = rows(v, b, j0, nk);
        View sView = block(sBuf, nq, nk, p.bk());
        View pView = block(pBuf, nq, nk, p.bk());
        View dpView = block(dpBuf, nq, nk, p.bk());
        be.matmul(qb, StridedView.transpose(kb, 1, 2), sView, false); // q k^T
        be.matmul(dob, StridedView.transpose(vb, 1, 2), dpView, false); // dO v^T: the gradient of the dropped P
        for (int r = 0; r < nq; r++) { // P = exp(scores - lse), recomputed; a row with no visible key is all 0
          int i = i0 + r;
          double li = lse[b * l + i];
          int so = r * p.bk();
          if (sf != null) {
            scores(p, md, sf, so, nk, b, i, j0);
            for (int jj = so; jj < so + nk; jj++) sf[jj] = li == Double.NEGATIVE_INFINITY ? (float) li : (float) (sf[jj] - li);
            continue;
          }
          scores(p, md, ss, so, nk, b, i, j0);
          for (int jj = 0; jj < nk; jj++) {
            ss.setDouble(so + jj, li == Double.NEGATIVE_INFINITY ? li : ss.getDouble(so + jj) - li);
          }
        }
        be.unary(UnaryOp.EXP, 0, sView, pView);
        for (int r = 0; r < nq; r++) {
          int i = i0 + r;
          int so = r * p.bk();
          if (plainF32) { // no dropout (keep = 1) and no mask gradient: dS = P (dP - D) scaled, P stays as it is
            double dr = dRow[r];
            double scale = p.scale();
            for (int jj = so; jj < so + nk; jj++) sf[jj] = (float) (pf[jj] * (dpf[jj] - dr) * scale);
            continue;
          }
          for (int jj = 0; jj < nk; jj++) {
            int j = j0 + jj;
            double pij = ps.getDouble(so + jj);
            double keep = p.keep(b, i, j);
            double ds = pij * (dps.getDouble(so + jj) * keep - dRow[r]);
            if (dmask != null && pij != 0) dmask[p.mask().index(b, i, j)] += ds;
            ps.setDouble(so + jj, pij * keep);
            ss.setDouble(so + jj, ds * p.scale()); // the scores are no longer needed: reuse for dS
          }
        }
        be.matmul(StridedView.transpose(pView, 1, 2), dob, rows(grads[2], b, j0, nk), true); // dv += P^T dO
        be.matmul(sView, kb, dqb, true); // dq += dS k
        be.matmul(StridedView.transpose(sView, 1, 2), qb, rows(grads[1], b, j0, nk), true); // dk += dS^T q
      }
    }
  }

  /**
   * Turns row {@code so} of a block of raw products q.k (keys j0 .. j0 + nk - 1, query i) into
   * scores in place: scale * qk + mask, and -inf outside the causal/window band (a contiguous
   * range of keys per query). Returns the row's largest score. {@code md} is the mask's data (null: no
   * mask).
   */
  private static double scores(Problem p, double[] md, Storage ss, int so, int nk, int b, int i, int j0) {
    int lo = Math.max(0, Math.min(nk, p.keyStart(i) - j0));
    int hi = Math.max(lo, Math.min(nk, p.keyEnd(i + 1) - j0));
    double max = Double.NEGATIVE_INFINITY;
    double scale = p.scale();
    Mask mask = p.mask();
    for (int jj = 0; jj < lo; jj++) ss.setDouble(so + jj, Double.NEGATIVE_INFINITY);
    for (int jj = lo; jj < hi; jj++) {
      double x = ss.getDouble(so + jj) * scale;
      if (mask != null) x += md[mask.index(b, i, j0 + jj)];
      ss.setDouble(so + jj, x);
      max = Math.max(max, x);
    }
    for (int jj = hi; jj < nk; jj++) ss.setDouble(so + jj, Double.NEGATIVE_INFINITY);
    return max;
  }

  /**
   * {@link #scores(Problem, double[], Storage, int, int, int, int, int)} on a float32 block's array: the same
   * arithmetic.
   */
  private static double scores(Problem p, double[] md, float[] s, int so, int nk, int b, int i, int j0) {
    int lo = Math.max(0, Math.min(nk, p.keyStart(i) - j0));
    int hi = Math.max(lo, Math.min(nk, p.keyEnd(i + 1) - j0));
    double max = Double.NEGATIVE_INFINITY;
    double scale = p.scale();
    Mask mask = p.mask();
    Arrays.fill(s, so, so + lo, Float.NEGATIVE_INFINITY);
    for (int jj = lo; jj < hi; jj++) {
      double x = s[so + jj] * scale;
      if (mask != null) x += md[mask.index(b, i, j0 + jj)];
      s[so + jj] = (float) x;
      max = Math.max(max, x);
    }
    Arrays.fill(s, so + hi, so + nk, Float.NEGATIVE_INFINITY);
    return max;
  }

  /** Rows [start, start + len) of batch element b of a contiguous [B, R, C] tensor, as a [1, len, C] view. */
  private static View rows(View t, int b, int start, int len) {
    int r = t.shapeRef()[1];
    int c = t.shapeRef()[2];
    return StridedView.of(t.storage(), new int[] {1, len, c}, new int[] {len * c, c, 1},
        t.offset() + (b * r + start) * c);
  }

  /** A [1, nq, nk] view of a scratch buffer whose rows are {@code stride} apart. */
  private static View block(View buf, int nq, int nk, int stride) {
    return StridedView.of(buf.storage(), new int[] {1, nq, nk}, new int[] {nq * stride, stride, 1}, 0);
  }

  @Override
  public void bandMask(Problem p, View out) {
    byte[] a = out.storage().bools();
    int o = out.offset();
    for (int i = 0; i < p.l(); i++) {
      for (int j = 0; j < p.s(); j++) a[o + i * p.s() + j] = (byte) (p.allowed(i, j) ? 1 : 0);
    }
  }

  @Override
  public void dropoutKeep(Problem p, View out) {
    Storage st = out.storage();
    int o = out.offset();
    for (int b = 0; b < p.batch(); b++) {
      for (int i = 0; i < p.l(); i++) for (int j = 0; j < p.s(); j++) st.setDouble(o++, p.keep(b, i, j));
    }
  }
}
