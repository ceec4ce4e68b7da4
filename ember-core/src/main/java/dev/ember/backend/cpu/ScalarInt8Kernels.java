package dev.ember.backend.cpu;

/** Plain-Java {@link Int8Kernels}: the reference the vector kernels are tested against. */
public final class ScalarInt8Kernels implements Int8Kernels {
  /** Panel width of the scalar packed product (any positive width works; 16 matches AVX-512's float lanes). */
  private static final int PANEL = 16;

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

  @Override
  public int panelWidth() {
    return PANEL;
  }

  @Override
  public void panelDot(float[] a, int aOff, int rows, int k, byte[] bp, int bpOff, int[] acc, int accOff, int ldAcc) {
    for (int r = 0; r < rows; r++) {
      for (int c = 0; c < PANEL; c++) {
        int s = 0;
        for (int p = 0; p < k; p++) s += (int) a[aOff + r * k + p] * bp[bpOff + p * PANEL + c];
        acc[accOff + r * ldAcc + c] = s;
      }
    }
  }

  @Override
  public void quantize(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax, byte[] out,
      int outOff) {
    quantizeScalar(x, off, n, scale, zeroPoint, qmin, qmax, out, outOff);
  }

  /** The scalar quantization loop (also the vector kernel's tail and its path to the NaN error). */
  public static void quantizeScalar(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax,
      byte[] out, int outOff) {
    float inv = 1.0f / scale;
    for (int i = 0; i < n; i++) {
      float t = x[off + i] * inv;
      if (t != t) {
        throw new IllegalArgumentException("quantize: NaN has no quantized value (element " + (off + i) + ", scale="
            + scale + ", zero_point=" + zeroPoint + ")");
      }
      double r = Math.rint(t) + zeroPoint;   // float -> double is exact; rint rounds half to even as nearbyint
      out[outOff + i] = (byte) (r <= qmin ? qmin : r >= qmax ? qmax : (int) r);
    }
  }

  @Override
  public float[] minMax(float[] x, int off, int n) {
    float lo = Float.POSITIVE_INFINITY;
    float hi = Float.NEGATIVE_INFINITY;
    for (int i = off; i < off + n; i++) {
      lo = Math.min(lo, x[i]);
      hi = Math.max(hi, x[i]);
    }
    return new float[] {lo, hi};
  }
}
