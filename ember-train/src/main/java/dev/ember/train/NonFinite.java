package dev.ember.train;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.Tensor;
import java.util.Map;

/**
 * The finiteness check of gradients behind {@link Trainer.Builder#skipNonFiniteSteps} and
 * {@link TrainContext#firstNonFiniteGradient()}: one read of each gradient, no allocation.
 * {@code x * 0} is 0 for every finite x and NaN for NaN and both infinities, so a sum of such
 * products is 0 exactly when all elements are finite, whatever their size (a sum of squares would
 * also flag finite gradients past 1e19 in float32). Four sums hide the add latency; tensors larger
 * than {@link #CHUNK} are split over the threads.
 */
final class NonFinite {
  /** 64K elements (256 KiB of float32) per task. */
  private static final int CHUNK = 1 << 16;

  private NonFinite() {}

  /** The name of the first parameter (in the map's order) whose gradient holds a NaN or an infinity, or null. */
  static String firstNonFiniteGradient(Map<String, Tensor> named) {
    for (var e : named.entrySet()) {
      Tensor g = e.getValue().grad();
      if (g != null && !allFinite(g)) return e.getKey();
    }
    return null;
  }

  /**
   * Whether every element of {@code t} is finite (integer tensors always are). A deferred
   * gradient (a wide layer's dY^T X) is computed here once, and the optimizer then reads it.
   */
  static boolean allFinite(Tensor t) {
    if (!t.dtype().isFloatingPoint()) return true;
    Tensor c = t.isContiguous() ? t : t.contiguous();
    int n = Math.toIntExact(c.numel());
    int off = c.offset();
    boolean f32 = c.dtype() == dev.ember.tensor.DType.F32;
    float[] fs = f32 ? c.storage().floats() : null;
    double[] ds = f32 ? null : c.storage().doubles();
    if (n <= CHUNK) return f32 ? finite(fs, off, n) : finite(ds, off, n);
    int tasks = Parallel.chunks(n, CHUNK);
    boolean[] ok = new boolean[tasks];
    Parallel.forEach(tasks, k -> {
      int lo = k * CHUNK;
      int len = Math.min(n - lo, CHUNK);
      ok[k] = f32 ? finite(fs, off + lo, len) : finite(ds, off + lo, len);
    });
    for (boolean b : ok) if (!b) return false;
    return true;
  }

  private static boolean finite(float[] a, int off, int n) {
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = off;
    int end = off + n;
    for (; i + 3 < end; i += 4) {
      s0 += a[i] * 0f;
      s1 += a[i + 1] * 0f;
      s2 += a[i + 2] * 0f;
      s3 += a[i + 3] * 0f;
    }
    for (; i < end; i++) s0 += a[i] * 0f;
    return s0 + s1 + s2 + s3 == 0f;
  }

  private static boolean finite(double[] a, int off, int n) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = off;
    int end = off + n;
    for (; i + 3 < end; i += 4) {
      s0 += a[i] * 0.0;
      s1 += a[i + 1] * 0.0;
      s2 += a[i + 2] * 0.0;
      s3 += a[i + 3] * 0.0;
    }
    for (; i < end; i++) s0 += a[i] * 0.0;
    return s0 + s1 + s2 + s3 == 0.0;
  }
}
