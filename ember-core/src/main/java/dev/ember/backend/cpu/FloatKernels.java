package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.RowSink;
import dev.ember.backend.UnaryOp;

/**
 * The contiguous float32 kernels the CPU backend is built on: one implementation in plain Java
 * ({@link ScalarFloatKernels}, the reference and fallback) and one on the Vector API. Everything
 * strided, broadcast or threaded is handled above this level by {@link CpuBackend}.
 */
public interface FloatKernels {
  String name();

  void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n);

  void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n);

  void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n);

  void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n);

  /** The backward of RELU, TANH or SIGMOID from g and ref (x or the op's output): see Backend.unaryBackward. */
  void unaryBackward(UnaryOp op, float[] g, int go, float[] ref, int ro, float[] out, int oo, int n);

  /**
   * A kernel for {@code program} over contiguous float32 blocks (see {@link FusedKernel}). This form interprets
   * the program through this set's own loops; the Vector API set generates a class per program.
   */
  default FusedKernel fused(dev.ember.backend.ElementwiseProgram program) {
    return new FusedInterpreter(this, program);
  }

  /** out = 1 where {@code a op b} holds, else 0, for a comparison op; b is one value, b[bo], when bScalar. */
  void compare(BinaryOp op, float[] a, int ao, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n);

  /** out = c != 0 ? a : b; a (b) is one value, a[ao] (b[bo]), when aScalar (bScalar). */
  void where(byte[] c, int co, float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar, float[] out,
      int oo, int n);

  /**
   * out[oo + r cols + c] = a[ao + r cols + c] + b[bo + c ldb + r] for r &lt; rows, c &lt; cols: a row-major
   * [rows, cols] block plus a block stored column-major (a transposed view, e.g. a weight's gradient from
   * the backward of {@code x.matmul(w.t())}), taken in tiles so that both are read along cache lines.
   * out may be a.
   */
  void addTransposed(float[] a, int ao, float[] b, int bo, int ldb, float[] out, int oo, int rows, int cols);

  float sum(float[] x, int xo, int n);

  float max(float[] x, int xo, int n);

  float min(float[] x, int xo, int n);

  void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log);

  /**
   * For each of {@code rows} contiguous rows of {@code cols >= 1} elements, the index of its first
   * largest (max) or smallest element, or of its first NaN when it has one, into out[oo + r].
   */
  void argExtremeRows(boolean max, float[] x, int xo, int rows, int cols, long[] out, int oo);

  /**
   * The float32 attention forward ({@link dev.ember.backend.AttentionKernels#forward}) over contiguous q, k, v and
   * out at the given offsets, as one fused kernel, when this set has one for the problem: false, having done
   * nothing, otherwise (this form; CpuAttention then runs its generic tiled kernel).
   */
  default boolean attentionForward(dev.ember.backend.AttentionKernels.Problem p, float[] q, int qo, float[] k, int ko,
      float[] v, int vo, float[] out, int oo, double[] lse) {
    return false;
  }

  /** Whether {@link #attentionForward} runs the problem (rather than returning false). */
  default boolean fusesAttention(dev.ember.backend.AttentionKernels.Problem p) {
    return false;
  }

  /**
   * {@link dev.ember.backend.RecurrentKernels#lstmStep} over {@code rows} contiguous rows at the given offsets
   * (gates [rows, 4 hs], the others [rows, hs]). This form is {@link ScalarRecurrent}'s; the Vector API set's is
   * vectorized.
   */
  default void lstmStep(float[] gates, int go, float[] cPrev, int cpo, float[] c, int co, float[] tanhC, int to,
      float[] h, int ho, int rows, int hs) {
    ScalarRecurrent.lstmStep(gates, go, cPrev, cpo, c, co, tanhC, to, h, ho, rows, hs);
  }

  /** {@link dev.ember.backend.RecurrentKernels#lstmStepBackward} over {@code rows} rows (see {@link #lstmStep}). */
  default void lstmStepBackward(float[] act, int ao, float[] cPrev, int cpo, float[] tanhC, int to, float[] gh,
      int gho, float[] ghRec, int gro, float[] dc, int dco, float[] dGates, int dgo, int rows, int hs) {
    ScalarRecurrent.lstmStepBackward(act, ao, cPrev, cpo, tanhC, to, gh, gho, ghRec, gro, dc, dco, dGates, dgo, rows,
        hs);
  }

  /** {@link dev.ember.backend.RecurrentKernels#gruStep} over {@code rows} rows (xg, hg [rows, 3 hs]). */
  default void gruStep(float[] xg, int xo, float[] hg, int hgo, float[] hPrev, int hpo, float[] hn, int hno,
      float[] h, int ho, int rows, int hs) {
    ScalarRecurrent.gruStep(xg, xo, hg, hgo, hPrev, hpo, hn, hno, h, ho, rows, hs);
  }

  /** {@link dev.ember.backend.RecurrentKernels#gruStepBackward} over {@code rows} rows (see {@link #gruStep}). */
  default void gruStepBackward(float[] act, int ao, float[] hn, int hno, float[] hPrev, int hpo, float[] gh, int gho,
      float[] ghRec, int gro, float[] dx, int dxo, float[] dhg, int dhgo, float[] dhPrev, int dpo, int rows, int hs) {
    ScalarRecurrent.gruStepBackward(act, ao, hn, hno, hPrev, hpo, gh, gho, ghRec, gro, dx, dxo, dhg, dhgo, dhPrev,
        dpo, rows, hs);
  }

  /** Row-major C = alpha * op(A) op(B) + beta * C (see ScalarGemm for the argument convention). */
  void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc);

  /**
   * {@link #sgemm} with either operand (or both) read from BF16/F16 bit patterns: for each of A and B exactly one of
   * the float32 array ({@code a}, {@code b}) and the {@link HalfOperand} ({@code ah}, {@code bh}) is non-null, and
   * offsets and leading dimensions count elements of whichever it is. Every element of C has the bits sgemm gives
   * on the operands widened to float32 first. This form widens the half operands whole and calls sgemm; the
   * Vector API one widens them while it packs them, so a BF16 weight is read at half the bytes.
   */
  default void sgemmHalf(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, HalfOperand ah, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb,
      float beta, float[] c, int cOff, int ldc) {
    if (ah != null) {
      a = ah.widen(aOff, transA ? HalfOperand.span(k, m, lda) : HalfOperand.span(m, k, lda));
      aOff = 0;
    }
    if (bh != null) {
      b = bh.widen(bOff, transB ? HalfOperand.span(n, k, ldb) : HalfOperand.span(k, n, ldb));
      bOff = 0;
    }
    sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
  }

  /**
   * C = x W^T + beta C for x [m, k] and W [n, k] (row-major, rows ldx and ldw apart; C [m, n], rows ldc apart), with
   * the bits of {@code sgemm(false, true, m, n, k, 1, x, xOff, ldx, w, wOff, ldw, beta, c, cOff, ldc)}, scheduled
   * for a weight that is much larger than the batch (see {@link dev.ember.backend.Backend#matmulWeightRows}). This
   * form is that sgemm call.
   */
  /**
   * SGD's update of a contiguous weight w [m, n] (from wOff) by g = A^T B (a [k, m], rows lda apart; b [k, n], rows
   * ldb apart), g never stored: the bits of {@link #sgemmRows} handing g to the optimizer's sgd kernel (see
   * {@link dev.ember.backend.Backend#matmulRowsSgd}). Returns false, having done nothing, where it cannot: this form
   * always.
   */
  default boolean sgemmRowsSgd(int m, int n, int k, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
      float[] w, int wOff, float lr, float wd, float sign) {
    return false;
  }

  default void sgemmWeightRows(int m, int n, int k, float[] x, int xOff, int ldx, float[] w, int wOff, int ldw,
      float beta, float[] c, int cOff, int ldc) {
    sgemm(false, true, m, n, k, 1f, x, xOff, ldx, w, wOff, ldw, beta, c, cOff, ldc);
  }

  /**
   * op(A) op(B) (m x n, arguments as in {@link #sgemm}) handed to {@code sink} in blocks of rows, each element
   * with the bits sgemm at alpha 1 and beta 0 gives it (see {@link dev.ember.backend.Backend#matmulRows}).
   * This form computes the whole product first; the Vector API one keeps a block at a time.
   */
  default void sgemmRows(boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
      float[] b, int bOff, int ldb, RowSink sink) {
    float[] c = new float[m * n];
    sgemm(transA, transB, m, n, k, 1f, a, aOff, lda, b, bOff, ldb, 0f, c, 0, n);
    handOver(m, n, c, sink);
  }

  /**
   * Hands a whole m x n product to {@code sink} in blocks of about 32K elements, in parallel: the sink's
   * own work (an optimizer's update) is spread over the threads as if it were its own loop.
   */
  private static void handOver(int m, int n, float[] c, RowSink sink) {
    if (m == 0) return;
    int rows = Math.max(1, (1 << 15) / Math.max(1, n));
    Parallel.forEach((m + rows - 1) / rows, t -> {
      int r0 = t * rows;
      sink.rows(r0, Math.min(m, r0 + rows), c, r0 * n);
    });
  }
}
