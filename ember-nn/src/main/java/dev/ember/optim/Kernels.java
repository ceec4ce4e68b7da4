package dev.ember.optim;

import dev.ember.backend.cpu.Parallel;

/**
 * Chunked loops for the fused update kernels. A tensor is cut into chunks of {@link #CHUNK}
 * elements whatever the thread count, so elementwise updates and the partial sums of reductions
 * (combined in chunk order) are bitwise the same on 1 or N threads. Tensors of one chunk or less
 * run on the calling thread.
 *
 * <p>The loop bodies are plain counted loops over {@code float[]}/{@code double[]} with the
 * option branches hoisted out; C2 compiles them to SIMD code (packed FMA, sqrt, div, min/max),
 * which already runs at memory speed for these 3-5 streams per element.
 */
final class Kernels {
  /** 32K elements: 128 KiB per f32 stream, large enough to amortise a task, small enough to spread 1M over 32 tasks. */
  static final int CHUNK = 1 << 15;

  private Kernels() {}

  /** An elementwise body over {@code [lo, hi)}. */
  @FunctionalInterface
  interface Range {
    void run(int lo, int hi);
  }

  /** A reduction body adding its partial sums over {@code [lo, hi)} into {@code acc}. */
  @FunctionalInterface
  interface RangeSums {
    void run(int lo, int hi, double[] acc);
  }

  /** Runs {@code body} over {@code [0, n)} in fixed chunks, in parallel when there are several. */
  static void forRange(int n, Range body) {
    if (n <= CHUNK) {
      if (n > 0) body.run(0, n);
      return;
    }
    int tasks = Parallel.chunks(n, CHUNK);
    Parallel.forEach(tasks, t -> body.run(t * CHUNK, Math.min(n, (t + 1) * CHUNK)));
  }

  /** {@code k} sums over {@code [0, n)}: per-chunk partials combined in chunk order. */
  static double[] sums(int n, int k, RangeSums body) {
    double[] total = new double[k];
    if (n <= CHUNK) {
      if (n > 0) body.run(0, n, total);
      return total;
    }
    int tasks = Parallel.chunks(n, CHUNK);
    double[][] partial = new double[tasks][k];
    Parallel.forEach(tasks, t -> body.run(t * CHUNK, Math.min(n, (t + 1) * CHUNK), partial[t]));
    for (double[] p : partial) {
      for (int j = 0; j < k; j++) total[j] += p[j];
    }
    return total;
  }

  /** The maximum of per-chunk results (for infinity norms); NaN wins. */
  static double max(int n, RangeSums body) {
    if (n <= CHUNK) {
      double[] acc = new double[1];
      if (n > 0) body.run(0, n, acc);
      return acc[0];
    }
    int tasks = Parallel.chunks(n, CHUNK);
    double[][] partial = new double[tasks][1];
    Parallel.forEach(tasks, t -> body.run(t * CHUNK, Math.min(n, (t + 1) * CHUNK), partial[t]));
    double m = 0;
    for (double[] p : partial) m = p[0] > m || Double.isNaN(p[0]) ? p[0] : m;
    return m;
  }
}
