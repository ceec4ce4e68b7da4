package dev.ember.backend.cpu;

import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;

/**
 * The row loops the convolution, pooling and resampling kernels are built from, over F32 or F64
 * storages. The dtype is dispatched once per row, not per element, so the loop structure of each
 * kernel is written once and the per-element loops below stay simple counted loops the JIT
 * vectorises where it can (unit strides).
 */
public final class Rows {
  private Rows() {}

  /** s[from, to) = 0. */
  public static void zero(Storage s, int from, int to) {
    if (to <= from) return;
    if (s.dtype() == DType.F32) java.util.Arrays.fill(s.floats(), from, to, 0f);
    else java.util.Arrays.fill(s.doubles(), from, to, 0.0);
  }

  /** s[from, to) = v. */
  public static void fill(Storage s, int from, int to, double v) {
    if (to <= from) return;
    if (s.dtype() == DType.F32) java.util.Arrays.fill(s.floats(), from, to, (float) v);
    else java.util.Arrays.fill(s.doubles(), from, to, v);
  }

  /** s[from, to) += v. */
  public static void add(Storage s, int from, int to, double v) {
    if (s.dtype() == DType.F32) {
      float[] a = s.floats();
      float f = (float) v;
      for (int i = from; i < to; i++) a[i] += f;
    } else {
      double[] a = s.doubles();
      for (int i = from; i < to; i++) a[i] += v;
    }
  }

  /** dst[d + i] = src[so + i * stride] for i in [0, n). */
  public static void gather(Storage src, int so, int stride, Storage dst, int d, int n) {
    if (n <= 0) return;
    if (stride == 1) {
      if (src.dtype() == DType.F32) System.arraycopy(src.floats(), so, dst.floats(), d, n);
      else System.arraycopy(src.doubles(), so, dst.doubles(), d, n);
      return;
    }
    if (src.dtype() == DType.F32) {
      float[] a = src.floats();
      float[] b = dst.floats();
      for (int i = 0; i < n; i++) b[d + i] = a[so + i * stride];
    } else {
      double[] a = src.doubles();
      double[] b = dst.doubles();
      for (int i = 0; i < n; i++) b[d + i] = a[so + i * stride];
    }
  }

  /** dst[d + i * stride] += src[so + i] for i in [0, n). */
  public static void scatterAdd(Storage src, int so, Storage dst, int d, int stride, int n) {
    if (n <= 0) return;
    if (src.dtype() == DType.F32) {
      float[] a = src.floats();
      float[] b = dst.floats();
      // unit stride through the vector row loops: C2 leaves this loop scalar (a and b may alias),
      // and summing the convolution weight-gradient partials this way was 1.4% of a VGG step
      if (stride == 1) RowKernels.F32.addRows(a, so, n, b, d, n, 1, n);
      else for (int i = 0; i < n; i++) b[d + i * stride] += a[so + i];
    } else {
      double[] a = src.doubles();
      double[] b = dst.doubles();
      if (stride == 1) for (int i = 0; i < n; i++) b[d + i] += a[so + i];
      else for (int i = 0; i < n; i++) b[d + i * stride] += a[so + i];
    }
  }

  /** dst[d + i] += alpha * src[so + i * stride] for i in [0, n). */
  public static void axpyGather(Storage dst, int d, Storage src, int so, int stride, double alpha, int n) {
    if (n <= 0) return;
    if (src.dtype() == DType.F32) {
      float[] a = src.floats();
      float[] b = dst.floats();
      float w = (float) alpha;
      if (stride == 1) for (int i = 0; i < n; i++) b[d + i] += w * a[so + i];
      else for (int i = 0; i < n; i++) b[d + i] += w * a[so + i * stride];
    } else {
      double[] a = src.doubles();
      double[] b = dst.doubles();
      if (stride == 1) for (int i = 0; i < n; i++) b[d + i] += alpha * a[so + i];
      else for (int i = 0; i < n; i++) b[d + i] += alpha * a[so + i * stride];
    }
  }

  /** dst[d + i * stride] += alpha * src[so + i] for i in [0, n). */
  public static void axpyScatter(Storage dst, int d, int stride, Storage src, int so, double alpha, int n) {
    if (n <= 0) return;
    if (src.dtype() == DType.F32) {
      float[] a = src.floats();
      float[] b = dst.floats();
      float w = (float) alpha;
      if (stride == 1) for (int i = 0; i < n; i++) b[d + i] += w * a[so + i];
      else for (int i = 0; i < n; i++) b[d + i * stride] += w * a[so + i];
    } else {
      double[] a = src.doubles();
      double[] b = dst.doubles();
      if (stride == 1) for (int i = 0; i < n; i++) b[d + i] += alpha * a[so + i];
      else for (int i = 0; i < n; i++) b[d + i * stride] += alpha * a[so + i];
    }
  }

  /** sum over i in [0, n) of a[ao + i] * b[bo + i * stride], accumulated in double. */
  public static double dot(Storage a, int ao, Storage b, int bo, int stride, int n) {
    double s = 0;
    if (a.dtype() == DType.F32) {
      float[] x = a.floats();
      float[] y = b.floats();
      for (int i = 0; i < n; i++) s += (double) x[ao + i] * y[bo + i * stride];
    } else {
      double[] x = a.doubles();
      double[] y = b.doubles();
      for (int i = 0; i < n; i++) s += x[ao + i] * y[bo + i * stride];
    }
    return s;
  }

  /** sum of s[from, from + n), accumulated in double. */
  public static double sum(Storage s, int from, int n) {
    double acc = 0;
    if (s.dtype() == DType.F32) {
      float[] x = s.floats();
      for (int i = 0; i < n; i++) acc += x[from + i];
    } else {
      double[] x = s.doubles();
      for (int i = 0; i < n; i++) acc += x[from + i];
    }
    return acc;
  }
}
