package dev.ember.backend;

/**
 * The tiled, memory-efficient attention kernels (FlashAttention's algorithm) over contiguous q [B, L, E],
 * k [B, S, E], v [B, S, Ev] of one floating dtype: only one [bq, bk] block of scores exists at a time, the
 * forward keeps a logsumexp per query row, and the backward recomputes each block's probabilities from it.
 * Work splits depend only on the shapes, so results do not depend on the thread count.
 */
public interface AttentionKernels {
  /**
   * Everything one attention call needs besides the tensors' data: batch (B), query and key lengths (L, S),
   * embedding dims (E, Ev), the score scale, causality, a sliding window (-1 for none), the tiled path's
   * block sizes, an optional additive mask, and the dropout probability with its seed.
   *
   * @param batch B, the flattened leading dims
   * @param l query length L
   * @param s key length S
   * @param e query/key embedding dim E
   * @param ev value embedding dim Ev
   * @param scale factor applied to q.k
   * @param causal whether query i sees only keys j &lt;= i
   * @param window sliding window w &gt;= 0, or -1 for none
   * @param bq query rows per block
   * @param bk keys per block
   * @param mask additive mask, or null
   * @param dropoutP attention dropout probability
   * @param dropSeed seed of the counter-based dropout draws
   */
  record Problem(int batch, int l, int s, int e, int ev, double scale, boolean causal, int window, int bq, int bk,
      Mask mask, double dropoutP, long dropSeed) {

    /** First key a query block [i0, i1) can see. */
    public int keyStart(int i0) {
      return window >= 0 ? Math.max(0, i0 - window) : 0;
    }

    /** One past the last key a query block [i0, i1) can see. */
    public int keyEnd(int i1) {
      if (causal) return Math.min(s, i1);
      if (window >= 0) return Math.min(s, i1 + window);
      return s;
    }

    /** Whether query i may see key j under causality and the window. */
    public boolean allowed(int i, int j) {
      if (causal && j > i) return false;
      if (window >= 0 && (j < i - window || (!causal && j > i + window))) return false;
      return true;
    }

    /** 0 when dropped, else 1 / (1 - p); 1 without dropout. */
    public double keep(int b, int i, int j) {
      if (dropoutP == 0) return 1;
      if (dropoutP >= 1) return 0;
      long idx = ((long) b * l + i) * s + j;
      return uniform(dropSeed, idx) < dropoutP ? 0 : 1 / (1 - dropoutP);
    }

    /**
     * The counter-based uniform in [0, 1) that defines attention dropout: SplitMix64 of (seed, index), so any
     * path (and any backend) can recompute a dropout decision.
     */
    public static double uniform(long seed, long index) {
      long z = seed + (index + 1) * 0x9E3779B97F4A7C15L;
      z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
      z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
      z ^= z >>> 31;
      return (z >>> 11) * 0x1.0p-53;
    }
  }

  /**
   * An additive F64 mask broadcast to [B, L, S] through strides: value(b, i, j) is element
   * {@link #index(int, int, int)} of {@code data}'s storage ({@code base} already includes data's offset).
   *
   * @param data the mask's values, F64
   * @param base per batch element, the storage index of (i, j) = (0, 0)
   * @param si storage stride along queries
   * @param sj storage stride along keys
   */
  record Mask(View data, int[] base, int si, int sj) {
    /** The storage index of the mask's value for (b, i, j). */
    public int index(int b, int i, int j) {
      return base[b] + i * si + j * sj;
    }
  }

  /**
   * Whether {@link #forward} runs the problem on {@code dtype} inputs as one fused kernel that beats the plain
   * composition of GEMMs and a softmax from a few hundred queries and keys up (the CPU's float32 kernel on the
   * Vector API, without mask or dropout), so that a caller may take it where memory alone would not call for it.
   */
  default boolean fusedForward(Problem p, dev.ember.tensor.DType dtype) {
    return false;
  }

  /**
   * Whether {@link #plainForward} runs the problem on {@code dtype} inputs: one without mask or dropout, where the
   * backend has such a kernel (callers ask first: the default kernel only throws).
   */
  default boolean runsPlainForward(Problem p, dev.ember.tensor.DType dtype) {
    return false;
  }

  /**
   * The plain path's forward when no gradient will follow, for a problem {@link #runsPlainForward} accepts: for each
   * batch element of contiguous q [B, L, E] (scaled already, as the plain path scales it), k [B, S, E] and
   * v [B, S, Ev], scores = q k^T, those outside the causal or window band -inf, softmax along the keys, then times v
   * into out [B, L, Ev] (contiguous, every element): the same bits as the composition of batched matmuls, band mask
   * and softmax, but with one element's [L, S] scores at a time, which stay in cache, instead of all B of them
   * written and read back by each op in turn.
   */
  default void plainForward(Problem p, View q, View k, View v, View out) {
    throw new IllegalStateException("scaled_dot_product_attention: plainForward called for a problem that "
        + "runsPlainForward declines (this backend has no such kernel; callers compose the ops instead)");
  }

  /**
   * Writes out [B, L, Ev] (q's dtype, contiguous, every element) and lse [B * L], the logsumexp of each row's
   * scores (-inf for a row with no visible key, whose output is NaN).
   */
  void forward(Problem p, View q, View k, View v, View out, double[] lse);

  /**
   * Adds the gradients of q, k and v into dq, dk, dv (contiguous, zero-filled, q's dtype) from the upstream
   * gradient dout (contiguous) and the forward's out and lse, and the mask's gradient into dmask (indexed as
   * {@link Mask#index}) when non-null.
   */
  void backward(Problem p, View q, View k, View v, View out, double[] lse, View dout, View dq, View dk, View dv,
      double[] dmask);

  // ================================================================== logsumexp in a view

  /**
   * {@link #forward} with the rows' logsumexps written into {@code lse} (contiguous F64, B * L elements) instead of
   * a host array, so that a device backend keeps them on the device for {@link #backwardFrom}. The default runs
   * {@link #forward} and stores the array into the view (for backends whose memory the host can write).
   */
  default void forwardInto(Problem p, View q, View k, View v, View out, View lse) {
    requireF64(lse, (long) p.batch() * p.l(), "forwardInto", "lse");
    double[] a = new double[p.batch() * p.l()];
    forward(p, q, k, v, out, a);
    for (int i = 0; i < a.length; i++) lse.storage().setDouble(lse.offset() + i, a[i]);
  }

  /**
   * {@link #backward} with the forward's logsumexps in a view ({@code lse}, as {@link #forwardInto} wrote it) and the
   * mask's gradient added into a view: {@code dmask} (or null) is contiguous F64 with as many elements as the mask's
   * data, and the gradient for (b, i, j) goes to its element {@link Mask#index}(b, i, j) minus the data's offset.
   * The default reads both views into arrays, runs {@link #backward} and writes dmask back.
   */
  default void backwardFrom(Problem p, View q, View k, View v, View out, View lse, View dout, View dq, View dk,
      View dv, View dmask) {
    requireF64(lse, (long) p.batch() * p.l(), "backwardFrom", "lse");
    double[] a = new double[p.batch() * p.l()];
    for (int i = 0; i < a.length; i++) a[i] = lse.storage().getDouble(lse.offset() + i);
    double[] dm = null;
    int shift = 0;
    if (dmask != null) {
      if (p.mask() == null) {
        throw new IllegalArgumentException("scaled_dot_product_attention: backwardFrom got a mask gradient view "
            + java.util.Arrays.toString(dmask.shapeRef()) + " for a problem without a mask");
      }
      requireF64(dmask, p.mask().data().numel(), "backwardFrom", "dmask");
      shift = p.mask().data().offset();
      dm = new double[shift + (int) dmask.numel()];
      for (int i = shift; i < dm.length; i++) dm[i] = dmask.storage().getDouble(dmask.offset() + i - shift);
    }
    backward(p, q, k, v, out, a, dout, dq, dk, dv, dm);
    if (dm != null) {
      for (int i = shift; i < dm.length; i++) dmask.storage().setDouble(dmask.offset() + i - shift, dm[i]);
    }
  }

  /** Checks that {@code view} is a contiguous F64 view of {@code count} elements, naming the method and argument. */
  static void requireF64(View view, long count, String method, String name) {
    if (view == null || view.dtype() != dev.ember.tensor.DType.F64 || !view.isContiguous()
        || view.numel() != count) {
      throw new IllegalArgumentException("scaled_dot_product_attention: " + method + " needs " + name
          + " as a contiguous float64 view of " + count + " elements, got " + (view == null ? "null"
          : view.dtype().torchName() + " " + java.util.Arrays.toString(view.shapeRef())
          + (view.isContiguous() ? "" : " (not contiguous)")));
    }
  }

  /**
   * out[i, j] = whether query i may see key j under causality and the window ({@link Problem#allowed}), for a
   * contiguous BOOL [L, S] view.
   */
  void bandMask(Problem p, View out);

  /**
   * out[b, i, j] = the dropout factor {@link Problem#keep}(b, i, j), 0 or 1 / (1 - p), for a contiguous floating
   * [B, L, S] view: the plain path's dropout, dropping what the tiled kernels drop.
   */
  void dropoutKeep(Problem p, View out);
}
