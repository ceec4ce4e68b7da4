package dev.ember.bench;

import dev.ember.optim.Adagrad;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Lion;
import dev.ember.optim.Optimizer;
import dev.ember.optim.RMSprop;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.CosineAnnealingLR;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The {@code optim} category: one {@code optimizer.step()} on a single f32 parameter tensor of 1M
 * and 16M elements whose gradient is set once (so the step is all that is timed), mirrored by
 * bench/peers/pytorch_ops.py {@code --suite optim}. Reported as GB/s of optimizer state touched,
 * 4 bytes per f32 element read or written by the update as specified:
 *
 * <ul>
 *   <li>sgd (momentum 0.9): reads p, g, b; writes p, b: 20 B/elem
 *   <li>adam, adamw (defaults, no amsgrad): reads p, g, m, v; writes p, m, v: 28 B/elem
 *   <li>rmsprop (defaults: no momentum, not centered): reads p, g, s; writes p, s: 20 B/elem
 *   <li>adagrad (defaults): reads p, g, s; writes p, s: 20 B/elem
 *   <li>lion (defaults): reads p, g, m; writes p, m: 20 B/elem (no PyTorch 1.13 equivalent: Ember only)
 * </ul>
 *
 * <p>The schedule case is the cost of one {@code CosineAnnealingLR.step()} (T_max = 1000) on an
 * optimizer with one parameter group, in microseconds per call.
 */
final class OptimCases {
  static final int[] SIZES = {1 << 20, 1 << 24};
  private static final int T_MAX = 1000;

  private OptimCases() {}

  /** An optimizer case: workload name, bytes of state touched per element, constructor. */
  private record Spec(String workload, int bytesPerElem, Function<List<Tensor>, Optimizer> make) {}

  private static final List<Spec> SPECS = List.of(
      new Spec("sgd", 20, ps -> new SGD(ps, Map.of("lr", 1e-3, "momentum", 0.9))),
      new Spec("adam", 28, ps -> new Adam(ps, 1e-3)),
      new Spec("adamw", 28, ps -> new AdamW(ps, 1e-3)),
      new Spec("rmsprop", 20, ps -> new RMSprop(ps, 1e-3)),
      new Spec("adagrad", 20, ps -> new Adagrad(ps, 1e-3)),
      new Spec("lion", 20, ps -> new Lion(ps, 1e-4)));

  static String caseName(int n) {
    return "step n=" + OpsCases.sizeName(n) + " f32";
  }

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    for (int n : SIZES) {
      for (Spec s : SPECS) out.add(step(s, n));
    }
    out.add(schedule());
    return out;
  }

  private static BenchCase step(Spec s, int n) {
    Runnable call = new Runnable() {
      private Optimizer opt;

      @Override
      public void run() {
        if (opt == null) {
          Generator gen = new Generator(0);
          Tensor p = Tensor.randn(gen, n).requiresGrad(true);
          p.setGrad(Tensor.randn(gen, n));
          opt = s.make().apply(List.of(p));
        }
        opt.step();
      }
    };
    return BenchCase.throughput(s.workload(), caseName(n), "gbps", "GB/s", (double) n * s.bytesPerElem() / 1e9, call);
  }

  private static BenchCase schedule() {
    Tensor p = Tensor.zeros(1).requiresGrad(true);
    SGD opt = new SGD(List.of(p), 0.1);
    CosineAnnealingLR sched = new CosineAnnealingLR(opt, T_MAX, 0.0);
    return BenchCase.latency("cosine_annealing", "schedule step T_max=" + T_MAX, "latency_us", "us/call", 1e6, sched::step);
  }
}
