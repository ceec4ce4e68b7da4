package dev.ember.optim;

import dev.ember.backend.cpu.Parallel;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.Tensor;
import java.util.logging.Logger;

/**
 * Chunked loops for the fused update kernels. The partial sums of reductions run over chunks of
 * {@link #CHUNK} elements whatever the thread count, combined in chunk order; elementwise updates run
 * in as many equal tasks as there are chunks (where a task ends changes no element). Both are bitwise
 * the same on 1 or N threads. Tensors of one chunk or less run on the calling thread.
 *
 * <p>The float32 loop bodies are {@link #F32}: the Vector API set when {@code jdk.incubator.vector}
 * is readable (loaded by name, as the core's CPU kernels are), else the plain-Java set; both give
 * the same bits (see {@link UpdateKernels}). {@code -Dember.kernels=scalar} forces the plain set.
 * The float64 loops stay plain Java in each optimizer.
 */
final class Kernels {
  /** 32K elements: 128 KiB per f32 stream, large enough to amortise a task, small enough to spread 1M over 32 tasks. */
  static final int CHUNK = 1 << 15;

  private static final String VECTOR_KERNELS = "dev.ember.optim.VectorUpdateKernels";

  /** The float32 update loops used by the optimizers, chosen once per process. */
  static final UpdateKernels F32 = choose();

  private Kernels() {}

  private static UpdateKernels choose() {
    if ("scalar".equals(System.getProperty("ember.kernels"))) return new ScalarUpdateKernels();
    UpdateKernels v = vectorOrNull();
    return v == null ? new ScalarUpdateKernels() : v;
  }

  /** The Vector API update loops, or null when the module is not readable (the core's CpuBackends warns about that). */
  static UpdateKernels vectorOrNull() {
    if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return null;
    try {
      return (UpdateKernels) Class.forName(VECTOR_KERNELS).getDeclaredConstructor().newInstance();
    } catch (ReflectiveOperationException | LinkageError e) {
      Logger.getLogger("dev.ember").warning("ember: could not load the Vector API optimizer kernels (" + e
          + "); using scalar loops");
      return null;
    }
  }

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

  /** An elementwise body over {@code [lo, hi)} reading the gradient from {@code g}. */
  @FunctionalInterface
  interface GradRange {
    void run(Slot g, int lo, int hi);
  }

  /**
   * Runs an update {@code body} over all of {@code param}'s elements with its gradient {@code grad}; an optimizer
   * that calls it {@linkplain Optimizer#takesGradientsInBlocks takes gradients in blocks}.
   * A deferred gradient (a wide Linear weight's g^T x) is computed a block of rows at a time, and each
   * block is updated while it is in cache: the gradient is never written to memory and read back, and it
   * stays deferred for anyone who reads it later. Any other gradient runs in {@link #forRange}'s chunks.
   * The body is elementwise, so both give the same bits.
   */
  static void forGradient(Tensor param, Tensor grad, GradRange body) {
    Deferred product = grad.storage().deferred();
    if (product != null) {
      product.computeBlocks((lo, hi, values, off) -> body.run(new Slot(values, off - lo), lo, hi));
      return;
    }
    Slot g = new Slot(grad);
    forRange((int) param.numel(), (lo, hi) -> body.run(g, lo, hi));
  }

  /**
   * Runs the elementwise {@code body} over {@code [0, n)} in parallel when it spans more than one chunk:
   * as many tasks as there are {@link #CHUNK}s, of equal sizes (see {@link #bound}). The body is
   * elementwise, so where the task boundaries fall does not change any bits.
   */
  static void forRange(int n, Range body) {
    if (n <= CHUNK) {
      if (n > 0) body.run(0, n);
      return;
    }
    int tasks = Parallel.chunks(n, CHUNK);
    Parallel.forEach(tasks, t -> body.run(bound(n, tasks, t), bound(n, tasks, t + 1)));
  }

  /**
   * Start of task {@code t} of {@code tasks} equal tasks over {@code n} elements, on a 64-byte line. Equal
   * tasks split a tensor into equal halves on two threads (the pool gives each thread a contiguous run of
   * tasks), which is how the GEMMs split a layer's weight: the rows a thread reads in the forward and
   * whose gradient it computes are then the rows it updates, and none of them moves to the other core's
   * cache. Fixed 32K chunks put the MNIST MLP's 784 x 128 weight (100,352 floats) 65,536 against 34,816.
   */
  static int bound(int n, int tasks, int t) {
    return t >= tasks ? n : (int) ((long) n * t / tasks) & ~15;
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
