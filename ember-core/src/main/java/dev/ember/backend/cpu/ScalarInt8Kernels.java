package dev.ember.backend.cpu;

/** Plain-Java {@link Int8Kernels}: the reference the vector kernels are tested against. */
public final class ScalarInt8Kernels implements Int8Kernels {
  @Override
  public void dotBlock(byte[] a, int row0, int rows, byte[] b, int j0, int j1, int k, int[] acc, int ldAcc) {
    for (int r = 0; r < rows; r++) {
      int ao = (row0 + r) * k;
      for (int j = j0; j < j1; j++) {
        int bo = j * k;
        int s = 0;
        for (int p = 0; p < k; p++) s += a[ao + p] * b[bo + p];
        acc[r * ldAcc + (j - j0)] = s;
      }
    }
  }
}
