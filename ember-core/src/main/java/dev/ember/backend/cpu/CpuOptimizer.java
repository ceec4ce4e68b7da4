package dev.ember.backend.cpu;

import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.View;
import dev.ember.tensor.Deferred;
import java.util.logging.Logger;

/**
 * The CPU's fused optimizer updates: dtype dispatch and chunked, threaded loops around the update rules of
 * {@link UpdateKernels} (float32) and {@link ScalarUpdateKernels.F64} (float64). The partial sums of
 * reductions run over chunks of {@link #CHUNK} elements whatever the thread count, combined in chunk order;
 * elementwise updates run in as many equal tasks as there are chunks (where a task ends changes no element).
 * Both are bitwise the same on 1 or N threads. Tensors of one chunk or less run on the calling thread.
 *
 * <p>The float32 loop bodies are {@link #F32}: the Vector API set when {@code jdk.incubator.vector}
 * is readable (loaded by name, as the core's CPU kernels are), else the plain-Java set; both give
 * the same bits (see {@link UpdateKernels}). {@code -Dember.kernels=scalar} forces the plain set.
 * The coefficients reach the float32 loops as the floats the optimizers have always used (e.g.
 * {@code (float) (1 - beta1)}).
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
    if ("scalar".equals(System.getProperty("ember.kernels"))) return new ScalarUpdateKernels();
    UpdateKernels v = vectorOrNull();
    return v == null ? new ScalarUpdateKernels() : v;
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

  private static boolean f32(Slot s) {
    return s.f != null;
  }

  private static Slot slotOrNull(View v) {
    return v == null ? null : new Slot(v);
  }

  // ------------------------------------------------------------------ updates

  @Override
  public void sgd(View param, View grad, double lr, double wd, double sign) {
    Slot p = new Slot(param);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) F32.sgd(p, g, lo, hi, (float) lr, (float) wd, (float) sign);
      else ScalarUpdateKernels.F64.sgd(p, g, lo, hi, lr, wd, sign);
    });
  }

  @Override
  public void sgdMomentum(View param, View grad, View buf, double lr, double wd, double sign, double keep, double add,
      boolean nesterov, double momentum) {
    Slot p = new Slot(param), b = new Slot(buf);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.sgdMomentum(p, g, b, lo, hi, (float) lr, (float) wd, (float) sign, (float) keep, (float) add, nesterov,
            (float) momentum);
      } else {
        ScalarUpdateKernels.F64.sgdMomentum(p, g, b, lo, hi, lr, wd, sign, keep, add, nesterov, momentum);
      }
    });
  }

  @Override
  public void adam(View param, View grad, View m, View v, View vmax, double sign, double l2, double decay, double b1,
      double b2, double eps, double stepSize, double invBc2Sqrt) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v), xs = slotOrNull(vmax);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.adam(p, g, ms, vs, xs, lo, hi, (float) sign, (float) l2, (float) decay, (float) b1, (float) b2,
            (float) (1 - b1), (float) (1 - b2), (float) eps, (float) stepSize, (float) invBc2Sqrt);
      } else {
        ScalarUpdateKernels.F64.adam(p, g, ms, vs, xs, lo, hi, sign, l2, decay, b1, b2, eps, stepSize, invBc2Sqrt);
      }
    });
  }

  @Override
  public void adamax(View param, View grad, View m, View u, double sign, double wd, double b1, double b2, double eps,
      double clr) {
    Slot p = new Slot(param), ms = new Slot(m), us = new Slot(u);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.adamax(p, g, ms, us, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1), (float) eps,
            (float) clr);
      } else {
        ScalarUpdateKernels.F64.adamax(p, g, ms, us, lo, hi, sign, wd, b1, b2, eps, clr);
      }
    });
  }

  @Override
  public void adadelta(View param, View grad, View s, View u, double sign, double wd, double rho, double eps,
      double lr) {
    Slot p = new Slot(param), ss = new Slot(s), us = new Slot(u);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.adadelta(p, g, ss, us, lo, hi, (float) sign, (float) wd, (float) rho, (float) (1 - rho), (float) eps,
            (float) lr);
      } else {
        ScalarUpdateKernels.F64.adadelta(p, g, ss, us, lo, hi, sign, wd, rho, eps, lr);
      }
    });
  }

  @Override
  public void adagrad(View param, View grad, View s, double sign, double wd, double eps, double clr) {
    Slot p = new Slot(param), ss = new Slot(s);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) F32.adagrad(p, g, ss, lo, hi, (float) sign, (float) wd, (float) eps, (float) clr);
      else ScalarUpdateKernels.F64.adagrad(p, g, ss, lo, hi, sign, wd, eps, clr);
    });
  }

  @Override
  public void rmsprop(View param, View grad, View s, View a, View b, double sign, double wd, double alpha, double eps,
      double momentum, double lr) {
    Slot p = new Slot(param), ss = new Slot(s), as = slotOrNull(a), bs = slotOrNull(b);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.rmsprop(p, g, ss, as, bs, lo, hi, (float) sign, (float) wd, (float) alpha, (float) (1 - alpha), (float) eps,
            (float) momentum, (float) lr);
      } else {
        ScalarUpdateKernels.F64.rmsprop(p, g, ss, as, bs, lo, hi, sign, wd, alpha, eps, momentum, lr);
      }
    });
  }

  @Override
  public void nadam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double bc2,
      double eps, double cg, double cm) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.nadam(p, g, ms, vs, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1),
            (float) (1 - b2), (float) bc2, (float) eps, (float) cg, (float) cm);
      } else {
        ScalarUpdateKernels.F64.nadam(p, g, ms, vs, lo, hi, sign, wd, b1, b2, bc2, eps, cg, cm);
      }
    });
  }

  @Override
  public void radam(View param, View grad, View m, View v, double sign, double wd, double b1, double b2, double eps,
      double scale, boolean adaptive) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.radam(p, g, ms, vs, lo, hi, (float) sign, (float) wd, (float) b1, (float) b2, (float) (1 - b1),
            (float) (1 - b2), (float) eps, (float) scale, adaptive);
      } else {
        ScalarUpdateKernels.F64.radam(p, g, ms, vs, lo, hi, sign, wd, b1, b2, eps, scale, adaptive);
      }
    });
  }

  @Override
  public void lion(View param, View grad, View m, double sign, double decay, double lr, double b1, double b2) {
    Slot p = new Slot(param), ms = new Slot(m);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        F32.lion(p, g, ms, lo, hi, (float) sign, (float) decay, (float) lr, (float) b1, (float) (1 - b1), (float) b2,
            (float) (1 - b2));
      } else {
        ScalarUpdateKernels.F64.lion(p, g, ms, lo, hi, sign, decay, lr, b1, b2);
      }
    });
  }

  @Override
  public double[] lambMoments(View param, View grad, View m, View v, double b1, double b2, double bc1, double bc2,
      double eps, double wd) {
    Slot p = new Slot(param), g = new Slot(grad), ms = new Slot(m), vs = new Slot(v);
    return sums((int) param.numel(), 2, (lo, hi, acc) -> {
      if (f32(p)) {
        F32.lambMoments(p, g, ms, vs, lo, hi, (float) b1, (float) b2, (float) (1 - b1), (float) (1 - b2), (float) bc1,
            (float) bc2, (float) eps, (float) wd, acc);
      } else {
        ScalarUpdateKernels.F64.lambMoments(p, g, ms, vs, lo, hi, b1, b2, bc1, bc2, eps, wd, acc);
      }
    });
  }

  @Override
  public void lambApply(View param, View m, View v, double bc1, double bc2, double eps, double wd, double scale) {
    Slot p = new Slot(param), ms = new Slot(m), vs = new Slot(v);
    forRange((int) param.numel(), (lo, hi) -> {
      if (f32(p)) F32.lambApply(p, ms, vs, lo, hi, (float) bc1, (float) bc2, (float) eps, (float) wd, (float) scale);
      else ScalarUpdateKernels.F64.lambApply(p, ms, vs, lo, hi, bc1, bc2, eps, wd, scale);
    });
  }

  @Override
  public void sophia(View param, View grad, View m, View h, double sign, double decay, double lr, double b1,
      double rhoBs) {
    Slot p = new Slot(param), ms = new Slot(m), hs = new Slot(h);
    forGradient(param, grad, (g, lo, hi) -> {
      if (f32(p)) {
        // (1 - beta1) * sign is one float product, as in the loop it replaces: b1 * m + c1 * sign * g
        float sc1 = (float) (1 - b1) * (float) sign;
        F32.sophia(p, g, ms, hs, lo, hi, (float) decay, (float) lr, (float) b1, sc1, (float) rhoBs);
      } else {
        ScalarUpdateKernels.F64.sophia(p, g, ms, hs, lo, hi, sign, decay, lr, b1, rhoBs);
      }
    });
  }

  @Override
  public void sophiaHessian(View h, View grad, double b2) {
    Slot hs = new Slot(h), g = new Slot(grad);
    forRange((int) h.numel(), (lo, hi) -> {
      if (f32(hs)) F32.sophiaEma(hs, g, lo, hi, (float) b2, (float) (1 - b2));
      else ScalarUpdateKernels.F64.sophiaEma(hs, g, lo, hi, b2);
    });
  }

  @Override
  public double samSquares(View param, View grad, boolean adaptive) {
    Slot p = new Slot(param), g = new Slot(grad);
    return sums((int) param.numel(), 1, (lo, hi, acc) -> acc[0] += f32(p)
        ? F32.samSquares(p, g, lo, hi, adaptive) : ScalarUpdateKernels.F64.samSquares(p, g, lo, hi, adaptive))[0];
  }

  @Override
  public void samAscend(View param, View grad, double scale, boolean adaptive) {
    Slot p = new Slot(param), g = new Slot(grad);
    forRange((int) param.numel(), (lo, hi) -> {
      if (f32(p)) F32.samAscend(p, g, lo, hi, (float) scale, adaptive);
      else ScalarUpdateKernels.F64.samAscend(p, g, lo, hi, scale, adaptive);
    });
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
