package dev.ember.backend.cpu;

import dev.ember.backend.View;
import dev.ember.tensor.DType;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * {@link dev.ember.backend.Backend#allFinite}: one read of each element, no allocation, exact (a sum of squares
 * would also flag finite float32 values past 1e19). Views larger than {@link #CHUNK} are split over the threads.
 */
final class Finite {
  /** 256K elements (1 MiB of float32, ~25 us of this loop) per task: less is not worth a hand-off. */
  private static final int CHUNK = 1 << 18;

  private Finite() {}

  static boolean all(View c) {
    int n = Math.toIntExact(c.numel());
    int off = c.offset();
    boolean f32 = c.dtype() == DType.F32;
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

  // An IEEE value is NaN or infinite exactly when its exponent bits are all ones; adding one to the
  // lowest exponent bit then carries into the sign bit, which no finite value's sum reaches. The OR of
  // these sums is negative iff some element is not finite: integer AND, ADD and OR only, which C2
  // vectorizes when the floats are read as ints through a MemorySegment (0.09-0.2 ns per float on the
  // development host against 1-1.5 ns for a float sum of x * 0, which it keeps in order).

  private static boolean finite(float[] a, int off, int n) {
    MemorySegment s = MemorySegment.ofArray(a);
    int acc = 0;
    for (long i = off, end = (long) off + n; i < end; i++) {
      acc |= (s.getAtIndex(ValueLayout.JAVA_INT, i) & 0x7f800000) + 0x00800000;
    }
    return acc >= 0;
  }

  private static boolean finite(double[] a, int off, int n) {
    MemorySegment s = MemorySegment.ofArray(a);
    long acc = 0;
    for (long i = off, end = (long) off + n; i < end; i++) {
      acc |= (s.getAtIndex(ValueLayout.JAVA_LONG, i) & 0x7ff0000000000000L) + 0x0010000000000000L;
    }
    return acc >= 0;
  }
}
