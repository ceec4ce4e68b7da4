package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;

/** Plain-Java float kernels: the reference every faster kernel set is tested against. */
public final class ScalarFloatKernels implements FloatKernels {
  @Override
  public String name() {
    return "cpu-scalar";
  }

  @Override
  public void unary(UnaryOp op, float p, float[] x, int xo, float[] out, int oo, int n) {
    ScalarKernels.unary(op, p, x, xo, out, oo, n);
  }

  @Override
  public void binary(BinaryOp op, float[] a, int ao, float[] b, int bo, float[] out, int oo, int n) {
    ScalarKernels.binary(op, a, ao, b, bo, out, oo, n);
  }

  @Override
  public void binaryScalarRight(BinaryOp op, float[] a, int ao, float s, float[] out, int oo, int n) {
    ScalarKernels.binaryScalarRight(op, a, ao, s, out, oo, n);
  }

  @Override
  public void binaryScalarLeft(BinaryOp op, float s, float[] b, int bo, float[] out, int oo, int n) {
    ScalarKernels.binaryScalarLeft(op, s, b, bo, out, oo, n);
  }

  @Override
  public void unaryBackward(UnaryOp op, float[] g, int go, float[] ref, int ro, float[] out, int oo, int n) {
    ScalarKernels.unaryBackward(op, g, go, ref, ro, out, oo, n);
  }

  @Override
  public float sum(float[] x, int xo, int n) {
    return ScalarKernels.sum(x, xo, n);
  }

  @Override
  public float max(float[] x, int xo, int n) {
    return ScalarKernels.max(x, xo, n);
  }

  @Override
  public float min(float[] x, int xo, int n) {
    return ScalarKernels.min(x, xo, n);
  }

  @Override
  public void softmaxRows(float[] x, int xo, float[] out, int oo, int rows, int cols, boolean log) {
    ScalarKernels.softmaxRows(x, xo, out, oo, rows, cols, log);
  }

  @Override
  public void compare(BinaryOp op, float[] a, int ao, float[] b, int bo, boolean bScalar, byte[] out, int oo, int n) {
    ScalarKernels.compare(op, a, ao, 1, b, bo, bScalar ? 0 : 1, out, oo, 1, n);
  }

  @Override
  public void where(byte[] c, int co, float[] a, int ao, boolean aScalar, float[] b, int bo, boolean bScalar,
      float[] out, int oo, int n) {
    ScalarKernels.where(c, co, 1, a, ao, aScalar ? 0 : 1, b, bo, bScalar ? 0 : 1, out, oo, 1, n);
  }

  @Override
  public void addTransposed(float[] a, int ao, float[] b, int bo, int ldb, float[] out, int oo, int rows, int cols) {
    ScalarKernels.addTransposed(a, ao, b, bo, ldb, out, oo, rows, cols);
  }

  @Override
  public void argExtremeRows(boolean max, float[] x, int xo, int rows, int cols, long[] out, int oo) {
    ScalarKernels.argExtremeRows(max, x, xo, rows, cols, out, oo);
  }

  @Override
  public void sgemm(boolean transA, boolean transB, int m, int n, int k, float alpha,
      float[] a, int aOff, int lda, float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc) {
    ScalarGemm.sgemm(transA, transB, m, n, k, alpha, a, aOff, lda, b, bOff, ldb, beta, c, cOff, ldc);
  }
}
