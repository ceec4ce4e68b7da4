package dev.ember.backend.cpu.vector;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.RowSink;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.cpu.FloatKernels;
import dev.ember.backend.cpu.HalfOperand;
import dev.ember.backend.cpu.ScalarKernels;

/**
 * The Vector API kernel set. Loaded by name from {@code CpuBackends}, so no class that links
 * {@code jdk.incubator.vector} is touched when the module is absent.
 */
public final class VectorFloatKernels implements FloatKernels {
  @Override
  public String name() {
    return "cpu-vector";
  }

  @Override
  public void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n) {
    VectorKernels.unary(op, p, x, xo, out, oo, n);
  }

  @Override
  public void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    VectorKernels.binary(op, a, ao, b, bo, out, oo, n);
  }

  @Override
  public void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n) {
    VectorKernels.binaryScalarRight(op, a, ao, s, out, oo, n);
  }

  @Override
  public void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n) {
    VectorKernels.binaryScalarLeft(op, s, b, bo, out, oo, n);
  }

  @Override
  public void unaryBackward(UnaryOp op, float[] g, int go, float[] ref, int ro, float[] out, int oo, int n) {
    VectorKernels.unaryBackward(op, g, go, ref, ro, out, oo, n);
  }

  /** A class generated for the program's structure ({@link FusedCodegen}), cached. */
  @Override
  public dev.ember.backend.cpu.FusedKernel fused(dev.ember.backend.ElementwiseProgram program) {
    return FusedCodegen.kernel(program);
  }

  @Override
  public void lstmStep(float[] gates, int go, float[] cPrev, int cpo, float[] c, int co, float[] tanhC, int to,
      float[] h, int ho, int rows, int hs) {
    VectorRecurrent.lstmStep(gates, go, cPrev, cpo, c, co, tanhC, to, h, ho, rows, hs);
  }

  @Override
  public void lstmStepBackward(float[] act, int ao, float[] cPrev, int cpo, float[] tanhC, int to, float[] gh,
      int gho, float[] ghRec, int gro, float[] dc, int dco, float[] dGates, int dgo, int rows, int hs) {
    VectorRecurrent.lstmStepBackward(act, ao, cPrev, cpo, tanhC, to, gh, gho, ghRec, gro, dc, dco, dGates, dgo, rows,
        hs);
  }

  @Override
  public void gruStep(float[] xg, int xo, float[] hg, int hgo, float[] hPrev, int hpo, float[] hn, int hno,
      float[] h, int ho, int rows, int hs) {
    VectorRecurrent.gruStep(xg, xo, hg, hgo, hPrev, hpo, hn, hno, h, ho, rows, hs);
  }

  @Override
  public void gruStepBackward(float[] act, int ao, float[] hn, int hno, float[] hPrev, int hpo, float[] gh, int gho,
      float[] ghRec, int gro, float[] dx, int dxo, float[] dhg, int dhgo, float[] dhPrev, int dpo, int rows, int hs) {
    VectorRecurrent.gruStepBackward(act, ao, hn, hno, hPrev, hpo, gh, gho, ghRec, gro, dx, dxo, dhg, dhgo, dhPrev,
        dpo, rows, hs);
  }

  @Override
  public float sum(float[] x, int xo, int n) {
    return VectorKernels.sum(x, xo, n);
  }

  @Override
  public float max(float[] x, int xo, int n) {
    return VectorKernels.max(x, xo, n);
  }

  @Override
  public float min(float[] x, int xo, int n) {
    return VectorKernels.min(x, xo, n);
  }

  @Override
  public void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    VectorKernels.softmaxRows(x, xo, out, oo, rows, cols, log);
  }

  @Override
  public void compare(BinaryOp op, float[] a, int ao, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n) {
    VectorKernels.compare(op, a, ao, b, bo, bScalar, out, oo, n);
  }

  @Override
  public void where(byte[] c, int co, float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar,
      float[] out, int oo, int n) {
    VectorKernels.where(c, co, a, ao, aScalar, b, bo, bScalar, out, oo, n);
  }

  @Override
  public void addTransposed(float[] a, int ao, float[] b, int bo, int ldb, float[] out, int oo, int rows, int cols) {
    if (!Transpose16.APPLIES) {
      ScalarKernels.addTransposed(a, ao, b, bo, ldb, out, oo, rows, cols);
      return;
    }
    // out = a, then each whole 16 x 16 tile of b transposed and added in vector registers; the edges in scalar
    if (a != out || ao != oo) System.arraycopy(a, ao, out, oo, rows * cols); // both are rows x cols, contiguous
    int r16 = rows & ~15, c16 = cols & ~15;
    for (int r0 = 0; r0 < r16; r0 += 16) {
      for (int c0 = 0; c0 < c16; c0 += 16) Transpose16.transpose(b, bo + c0 * ldb + r0, ldb, out, oo + r0 * cols + c0, cols, 1f);
    }
    for (int r = 0; r < rows; r++) {
      int c = r < r16 ? c16 : 0;
      for (; c < cols; c++) out[oo + r * cols + c] += b[bo + c * ldb + r];
    }
  }

  @Override
  public void argExtremeRows(boolean max, float[] x, int xo, int rows, int cols, long[] out, int oo) {
    VectorKernels.argExtremeRows(max, x, xo, rows, cols, out, oo);
  }

  @Override
  public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    VectorGemm.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
  }

  @Override
  public void sgemmHalf(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, HalfOperand ah, int aOff, int lda, float[] b, HalfOperand bh, int bOff, int ldb,
      float beta, float[] c, int cOff, int ldc) {
    VectorGemm.sgemmHalf(transA, transB, m, n, k, alpha, a, ah, aOff, lda, b, bh, bOff, ldb, beta, c, cOff, ldc);
  }

  @Override
  public boolean attentionForward(dev.ember.backend.AttentionKernels.Problem p, float[] q, int qo, float[] k, int ko,
      float[] v, int vo, float[] out, int oo, double[] lse) {
    return VectorAttention.forward(p, q, qo, k, ko, v, vo, out, oo, lse);
  }

  @Override
  public boolean fusesAttention(dev.ember.backend.AttentionKernels.Problem p) {
    return VectorAttention.runs(p);
  }

  @Override
  public boolean sgemmRowsSgd(int m, int n, int k, float[] a, int aOff, int lda, float[] b, int bOff, int ldb,
      float[] w, int wOff, float lr, float wd, float sign) {
    return VectorGemm.sgemmRowsSgd(m, n, k, a, aOff, lda, b, bOff, ldb, w, wOff, lr, wd, sign);
  }

  @Override
  public void sgemmWeightRows(int m, int n, int k, float[] x, int xOff, int ldx, float[] w, int wOff, int ldw,
      float beta, float[] c, int cOff, int ldc) {
    if (!VectorGemm.sgemmWeightRows(m, n, k, x, xOff, ldx, w, wOff, ldw, beta, c, cOff, ldc)) {
      FloatKernels.super.sgemmWeightRows(m, n, k, x, xOff, ldx, w, wOff, ldw, beta, c, cOff, ldc);
    }
  }

  @Override
  public void sgemmRows(boolean transA, boolean transB, int m, int n, int k, float[] a, int aOff, int lda,
      float[] b, int bOff, int ldb, RowSink sink) {
    if (!VectorGemm.sgemmRows(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, sink)) {
      FloatKernels.super.sgemmRows(transA, transB, m, n, k, a, aOff, lda, b, bOff, ldb, sink);
    }
  }
}
