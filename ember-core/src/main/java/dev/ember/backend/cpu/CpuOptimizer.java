package dev.ember.backend.cpu;

import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.View;
import dev.ember.tensor.Deferred;
import java.util.logging.Logger;

/**
 * The CPU's fused optimizer updates: dtype dispatch and chunked, threaded loops around the update rules of
 * {@link UpdateKernels}, {@link #F32} for float32 and {@link ScalarUpdateKernels#F64} for float64. The partial
 * sums of reductions run over chunks of {@link #CHUNK} elements whatever the thread count, combined in chunk order;
 * elementwise updates run in as many equal tasks as there are chunks (where a task ends changes no element).
 * Both are bitwise the same on 1 or N threads. Tensors of one chunk or less run on the calling thread.
 *
 * <p>The float32 loop bodies are {@link #F32}: the Vector API set when {@code jdk.incubator.vector}
 * is readable (loaded by name, as the core's CPU kernels are), else the plain-Java set; both give
 * the same bits (see {@link UpdateKernels}). {@code -Dember.kernels=scalar} forces the plain set.
 * The coefficients reach the loops in the parameter's dtype: for float32 the floats the optimizers have
 * always used (e.g. {@code (float) (1 - beta1)}).
 */
public final class CpuOptimizer implements OptimizerKernels {
  /** 32K elements: 128 KiB per f32 stream, large enough to amortise a task, small enough to spread 1M over 32 tasks. */
  static final int CHUNK = 1 << 15;

  private static final String VECTOR_KERNELS = "dev.ember.backend.cpu.vector.VectorUpdateKernels";

  /** The float32 update loops, chosen once per process. */
  static final UpdateKernels F32 = choose();

  private static final CpuOptimizer INSTANCE = new CpuOptimizer();

  private CpuOptimizer() {}

  /** The one instance (the loops it runs are chosen once per process). */
  public static CpuOptimizer instance() {
    return INSTANCE;
  }

  private static UpdateKernels choose() {
    if ("scalar".equals(System.getProperty("ember.kernels"))) return ScalarUpdateKernels.F32;
    UpdateKernels v = vectorOrNull();
    return v == null ? ScalarUpdateKernels.F32 : v;
  }

  /** The Vector API update loops, or null when the module is not readable (CpuBackends warns about that). */
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

  /** The loops for p's dtype. */
  private static UpdateKernels loops(Slot p) {
    return p.f != null ? F32 : ScalarUpdateKernels.F64;
  }

  /** The coefficient v in p's dtype: the float the float32 loops have always been given, or v itself. */
  private static double c(Slot p, double v) {
    return p.f != null ? (float) v : v;
  }

  private static Slot slotOrNull(View v) {
    return v == null ? null : new Slot(v);
  }

  // ------------------------------------------------------------------ updates

  @Override
  public void sgd(View param, View grad, double lr, double wd, double sign) {
    Slot p = new Slot(param);
    Deferred product = grad.storage().deferred();
    // a deferred float32 weight gradient: the update made from the GEMM's registers, the gradient never stored
    if (p.f != null && product != null && param.isContiguous()
        && product.sgdInto(param, (float) lr, (float) wd, (float) sign)) {
      return;
    }
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.sgd(p, g, lo, hi, c(p, lr), c(p, wd), c(p, sign)));
  }

  @Override
  public void sgdMomentum(View param, View grad, View buf, double lr, double wd, double sign, double keep, double add,
      boolean nesterov, double momentum) {
    Slot p = new Slot(param), b = new Slot(buf);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.sgdMomentum(p, g, b, lo, hi, c(p, lr), c(p, wd), c(p, sign), c(p, keep),
        c(p, add), nesterov, c(p, momentum)));
  }

  @Override
  public void adam(View param, View grad, View m, View v, View vmax, double sign, double l2, double decay, double b1,
      double b2, double eps, double stepSize, double invBc2Sqrt) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v), xs = slotOrNull(vmax);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.adam(p, g, ms, vs, xs, lo, hi, c(p, sign), c(p, l2), c(p, decay),
        c(p, b1), c(p, b2), c(p, 1 - b1), c(p, 1 - b2), c(p, eps), c(p, stepSize), c(p, invBc2Sqrt)));
  }

  @Override
  public void adamax(View param, View grad, View m, View u, double sign, double wd, double b1, double b2, double eps,
      double clr) {
    Slot p = new Slot(param), ms = new Slot(m), us = new Slot(u);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.adamax(p, g, ms, us, lo, hi, c(p, sign), c(p, wd), c(p, b1), c(p, b2),
        c(p, 1 - b1), c(p, eps), c(p, clr)));
  }

  @Override
  public void adadelta(View param, View grad, View s, View u, double sign, double wd, double rho, double eps,
      double lr) {
    Slot p = new Slot(param), ss = new Slot(s), us = new Slot(u);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.adadelta(p, g, ss, us, lo, hi, c(p, sign), c(p, wd), c(p, rho),
        c(p, 1 - rho), c(p, eps), c(p, lr)));
  }

  @Override
  public void adagrad(View param, View grad, View s, double sign, double wd, double eps, double clr) {
    Slot p = new Slot(param), ss = new Slot(s);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.adagrad(p, g, ss, lo, hi, c(p, sign), c(p, wd), c(p, eps), c(p, clr)));
  }

  @Override
  public void rmsprop(View param, View grad, View s, View a, View b, double sign, double wd, double alpha, double eps,
      double momentum, double lr) {
    Slot p = new Slot(param), ss = new Slot(s), as = slotOrNull(a), bs = slotOrNull(b);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.rmsprop(p, g, ss, as, bs, lo, hi, c(p, sign), c(p, wd), c(p, alpha),
        c(p, 1 - alpha), c(p, eps), c(p, momentum), c(p, lr)));
  }

  @Override
  public void nadam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double bc2,
      double eps, double cg, double cm) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.nadam(p, g, ms, vs, lo, hi, c(p, sign), c(p, wd), c(p, b1), c(p, b2),
        c(p, 1 - b1), c(p, 1 - b2), c(p, bc2), c(p, eps), c(p, cg), c(p, cm)));
  }

  @Override
  public void radam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double eps,
      double scale, boolean adaptive) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.radam(p, g, ms, vs, lo, hi, c(p, sign), c(p, wd), c(p, b1), c(p, b2),
        c(p, 1 - b1), c(p, 1 - b2), c(p, eps), c(p, scale), adaptive));
  }

  @Override
  public void lion(View param, View grad, View m, double sign, double decay, double lr, double b1, double b2) {
    Slot p = new Slot(param), ms = new Slot(m);
    UpdateKernels k = loops(p);
    forGradient(param, grad, (g, lo, hi) -> k.lion(p, g, ms, lo, hi, c(p, sign), c(p, decay), c(p, lr), c(p, b1),
        c(p, 1 - b1), c(p, b2), c(p, 1 - b2)));
  }

  @Override
  public double[] lambMoments(View param, View grad, View m, View v, double b1, double b2, double bc1, double bc2,
      double eps, double wd) {
    Slot p = new Slot(param), g = new Slot(grad), ms = new Slot(m), vs = new Slot(v);
    UpdateKernels k = loops(p);
    return sums((int) param.numel(), 2, (lo, hi, acc) -> k.lambMoments(p, g, ms, vs, lo, hi, c(p, b1), c(p, b2),
        c(p, 1 - b1), c(p, 1 - b2), c(p, bc1), c(p, bc2), c(p, eps), c(p, wd), acc));
  }

  @Override
  public void lambApply(View param, View m, View v, double bc1, double bc2, double eps, double wd, double scale) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    UpdateKernels k = loops(p);
    forRange((int) param.numel(), (lo, hi) -> k.lambApply(p, ms, vs, lo, hi, c(p, bc1), c(p, bc2), c(p, eps), c(p, wd),
        c(p, scale)));
  }

  @Override
  public void sophia(View param, View grad, View m, View h, double sign, double decay, double lr, double b1,
      double rhoBs) {
    Slot p = new Slot(param), ms = new Slot(m), hs = new Slot(h);
    UpdateKernels k = loops(p);
    // (1 - beta1) * sign is one product in the dtype: b1 * m + c1 * sign * g
    double sc1 = c(p, c(p, 1 - b1) * c(p, sign));
    forGradient(param, grad, (g, lo, hi) -> k.sophia(p, g, ms, hs, lo, hi, c(p, decay), c(p, lr), c(p, b1), sc1,
        c(p, rhoBs)));
  }

  @Override
  public void sophiaHessian(View h, View grad, double b2) {
    Slot hs = new Slot(h), g = new Slot(grad);
    UpdateKernels k = loops(hs);
    forRange((int) h.numel(), (lo, hi) -> k.sophiaEma(hs, g, lo, hi, c(hs, b2), c(hs, 1 - b2)));
  }

  @Override
  public double samSquares(View param, View grad, boolean adaptive) {
    Slot p = new Slot(param), g = new Slot(grad);
    UpdateKernels k = loops(p);
    return sums((int) param.numel(), 1, (lo, hi, acc) -> acc[0] += k.samSquares(p, g, lo, hi, adaptive))[0];
  }

  @Override
  public void samAscend(View param, View grad, double scale, boolean adaptive) {
    Slot p = new Slot(param), g = new Slot(grad);
    UpdateKernels k = loops(p);
    forRange((int) param.numel(), (lo, hi) -> k.samAscend(p, g, lo, hi, c(p, scale), adaptive));
  }

  // ------------------------------------------------------------------ norms (gradient clipping)

  @Override
  public double powerSum(View x, double p) {
    Slot s = new Slot(x);
    return sums((int) x.numel(), 1, (lo, hi, out) -> out[0] += powSum(s, lo, hi, p))[0];
  }

  @Override
  public double absMax(View x) {
    Slot s = new Slot(x);
    return max((int) x.numel(), (lo, hi, out) -> out[0] = absMax(s, lo, hi));
  }

  private static double absMax(Slot s, int lo, int hi) {
    double m = 0;
    if (s.f != null) {
      float fm = 0;
      for (int i = lo; i < hi; i++) {
        float a = Math.abs(s.f[s.off + i]);
        fm = a > fm || a != a ? a : fm;
      }
      m = fm;
    } else {
      for (int i = lo; i < hi; i++) {
        double a = Math.abs(s.d[s.off + i]);
        m = a > m || a != a ? a : m;
      }
    }
    return m;
  }

  private static double powSum(Slot s, int lo, int hi, double p) {
    double sum = 0;
    for (int i = lo; i < hi; i++) {
      double a = Math.abs(s.f != null ? s.f[s.off + i] : s.d[s.off + i]);
      sum += p == 2 ? a * a : p == 1 ? a : Math.pow(a, p);
    }
    return sum;
  }

  // ------------------------------------------------------------------ chunked loops

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
   * Runs an update {@code body} over all of {@code param}'s elements with its gradient {@code grad}.
   * A deferred gradient (a wide Linear weight's g^T x) is computed a block of rows at a time, and each
   * block is updated while it is in cache: the gradient is never written to memory and read back, and it
   * stays deferred for anyone who reads it later. Any other gradient runs in {@link #forRange}'s chunks.
   * The body is elementwise, so both give the same bits.
   */
  static void forGradient(View param, View grad, GradRange body) {
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
