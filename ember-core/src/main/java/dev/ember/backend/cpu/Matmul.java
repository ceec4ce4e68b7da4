package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.RowSink;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;

/**
 * Batched matmul on rank-3 operands. A transposed operand (unit stride on its first matrix axis)
 * is passed to GEMM as such, so A^T B and A B^T never materialise the transpose; any other
 * layout is copied to contiguous first. With a float32 output, either operand may be BF16 or F16:
 * GEMM reads its bits and widens them as it packs ({@link FloatKernels#sgemmHalf}).
 */
final class Matmul {
  private Matmul() {}

  static void run(FloatKernels k, View a, View b, View out, float beta) {
    int batch = a.shapeRef()[0];
    int m = a.shapeRef()[1];
    int kk = a.shapeRef()[2];
    int n = b.shapeRef()[2];
    if (batch == 0 || m == 0 || n == 0) return;
    if (kk == 0) {
      if (beta == 0) {
        Device.CPU.backend().fill(out, 0);
      } else if (beta != 1) { // an empty sum: out = beta * out
        StridedView scale = StridedView.allocate(out.dtype());
        Device.CPU.backend().fill(scale, beta);
        Device.CPU.backend().binary(BinaryOp.MUL, out, StridedView.expand(scale, out.shapeRef()), out);
      }
      return;
    }
    View a2 = gemmable(a, out.dtype());
    View b2 = gemmable(b, out.dtype());
    HalfOperand ah = half(a2);
    HalfOperand bh = half(b2);
    boolean ta = isTransposed(a2);
    boolean tb = isTransposed(b2);
    int lda = ld(a2, ta);
    int ldb = ld(b2, tb);
    int ldc = out.stridesRef()[1];
    int sa = a2.stridesRef()[0];
    int sb = b2.stridesRef()[0];
    int sc = out.stridesRef()[0];
    // One GEMM per batch element. Small products spread over the batch; large ones thread inside GEMM.
    // Attention's per-head products (16 x 4 heads of 128 x 64 x 128) threaded inside GEMM ran at
    // 62 GFLOP/s on two threads (two hand-offs per product, 72 + 56 rows), spread at ~90.
    // A batch that splits evenly over the threads is spread up to 16M multiply-adds a product: at T = 256 (8 heads of
    // 256 x 64 x 256, 4M each) threading inside GEMM made attention's fwd+bwd scale 1.4x from one to two threads
    // where T = 128 and 512 scaled ~2x.
    long work = (long) m * n * kk;
    boolean spreadBatches = batch > 1 && (work < (batch >= 4 ? 1L << 22 : 64L * 64 * 64)
        || batch % Parallel.threads() == 0 && work < 1L << 24);
    java.util.function.IntConsumer one = i -> {
      int ao = a2.offset() + i * sa;
      int bo = b2.offset() + i * sb;
      int co = out.offset() + i * sc;
      if (ah != null || bh != null) {
        k.sgemmHalf(ta, tb, m, n, kk, 1f, ah == null ? a2.storage().floats() : null, ah, ao, lda,
            bh == null ? b2.storage().floats() : null, bh, bo, ldb, beta, out.storage().floats(), co, ldc);
      } else if (out.dtype() == DType.F32) {
        k.sgemm(ta, tb, m, n, kk, 1f, a2.storage().floats(), ao, lda, b2.storage().floats(), bo, ldb,
            beta, out.storage().floats(), co, ldc);
      } else {
        ScalarGemm.dgemm(ta, tb, m, n, kk, 1.0, a2.storage().doubles(), ao, lda, b2.storage().doubles(), bo, ldb,
            beta, out.storage().doubles(), co, ldc);
      }
    };
    if (spreadBatches) {
      Parallel.forEach(batch, one);
    } else {
      for (int i = 0; i < batch; i++) one.accept(i);
    }
  }

  /**
   * {@link dev.ember.backend.Backend#matmulWeightRows} for float32 x [m, k], w [n, k] and out [m, n] with unit
   * column strides ({@link FloatKernels#sgemmWeightRows}); false, having done nothing, for any other dtype or
   * layout.
   */
  static boolean weightRows(FloatKernels k, View x, View w, View out, float beta) {
    if (x.dtype() != DType.F32 || w.dtype() != DType.F32 || out.dtype() != DType.F32 || x.rank() != 2 || w.rank() != 2
        || out.rank() != 2) {
      return false;
    }
    int m = x.shapeRef()[0];
    int kk = x.shapeRef()[1];
    int n = w.shapeRef()[0];
    if (m == 0 || n == 0 || kk == 0 || !rowMajor(x) || !rowMajor(w) || !rowMajor(out)) return false;
    k.sgemmWeightRows(m, n, kk, x.storage().floats(), x.offset(), x.stridesRef()[0], w.storage().floats(), w.offset(),
        w.stridesRef()[0], beta, out.storage().floats(), out.offset(), out.stridesRef()[0]);
    return true;
  }

  /**
   * {@link dev.ember.backend.Backend#matmulRowsSgd} for float32 a^T b (a a transposed view, b row-major) into a
   * contiguous float32 w ({@link FloatKernels#sgemmRowsSgd}); false, having done nothing, for anything else.
   */
  static boolean rowsSgd(FloatKernels k, View a, View b, View w, float lr, float wd, float sign) {
    if (a.dtype() != DType.F32 || b.dtype() != DType.F32 || w.dtype() != DType.F32 || a.rank() != 2 || b.rank() != 2
        || !w.isContiguous()) {
      return false;
    }
    int m = a.shapeRef()[0];
    int kk = a.shapeRef()[1];
    int n = b.shapeRef()[1];
    if (m == 0 || n == 0 || kk == 0 || w.numel() != (long) m * n || !rowMajor(b)) return false;
    View at = dev.ember.backend.StridedView.transpose(a, 0, 1); // a^T [k, m]: row-major when a is a transposed view
    if (!rowMajor(at)) return false;
    return k.sgemmRowsSgd(m, n, kk, at.storage().floats(), at.offset(), at.stridesRef()[0], b.storage().floats(),
        b.offset(), b.stridesRef()[0], w.storage().floats(), w.offset(), lr, wd, sign);
  }

  /** A 2-d view GEMM reads as a row-major matrix: unit column stride, rows at least a row apart. */
  private static boolean rowMajor(View t) {
    int[] s = t.stridesRef();
    int[] sh = t.shapeRef();
    return (s[1] == 1 || sh[1] == 1) && s[0] >= Math.max(1, sh[1]);
  }

  /** {@link dev.ember.backend.Backend#matmulRows} for 2-d float32 a [m, k] and b [k, n]: see {@link FloatKernels#sgemmRows}. */
  static void rows(FloatKernels k, View a, View b, RowSink sink) {
    int m = a.shapeRef()[0];
    int kk = a.shapeRef()[1];
    int n = b.shapeRef()[1];
    if (m == 0) return;
    View a2 = gemmable(StridedView.batchOfOne(a), DType.F32);
    View b2 = gemmable(StridedView.batchOfOne(b), DType.F32);
    boolean ta = isTransposed(a2);
    boolean tb = isTransposed(b2);
    k.sgemmRows(ta, tb, m, n, kk, a2.storage().floats(), a2.offset(), ld(a2, ta), b2.storage().floats(), b2.offset(),
        ld(b2, tb), sink);
  }

  /**
   * A layout GEMM reads directly (row-major or transposed matrices), or a contiguous copy: in {@code compute}
   * (the output's dtype) for a BF16/F16 operand, whose values widen exactly, so the product's bits are the same.
   */
  private static View gemmable(View t, DType compute) {
    int[] s = t.stridesRef();
    int[] sh = t.shapeRef();
    boolean rowMajor = s[2] == 1 || sh[2] == 1;
    boolean colMajor = s[1] == 1 || sh[1] == 1;
    if ((rowMajor && s[1] >= Math.max(1, sh[2])) || (colMajor && s[2] >= Math.max(1, sh[1]))) return t;
    StridedView c = StridedView.allocate(t.dtype().isHalf() ? compute : t.dtype(), sh);
    Device.CPU.backend().copy(t, c);
    return c;
  }

  /** A BF16/F16 operand's bits for {@link FloatKernels#sgemmHalf}, or null for a float32 one. */
  private static HalfOperand half(View t) {
    return t.dtype().isHalf() ? new HalfOperand(t.storage().halves(), t.dtype() == DType.BF16) : null;
  }

  private static boolean isTransposed(View t) {
    int[] s = t.stridesRef();
    int[] sh = t.shapeRef();
    boolean rowMajor = (s[2] == 1 || sh[2] == 1) && s[1] >= Math.max(1, sh[2]);
    return !rowMajor;
  }

  private static int ld(View t, boolean transposed) {
    int[] s = t.stridesRef();
    int[] sh = t.shapeRef();
    return transposed ? Math.max(s[2], Math.max(1, sh[1])) : Math.max(s[1], Math.max(1, sh[2]));
  }
}
