package dev.ember.bench;

import dev.ember.optim.ParamGroup;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.ConstantLR;
import dev.ember.optim.schedule.CosineAnnealingLR;
import dev.ember.optim.schedule.CosineAnnealingWarmRestarts;
import dev.ember.optim.schedule.CyclicLR;
import dev.ember.optim.schedule.ExponentialLR;
import dev.ember.optim.schedule.LRScheduler;
import dev.ember.optim.schedule.LambdaLR;
import dev.ember.optim.schedule.LinearLR;
import dev.ember.optim.schedule.LinearWarmup;
import dev.ember.optim.schedule.MultiStepLR;
import dev.ember.optim.schedule.OneCycleLR;
import dev.ember.optim.schedule.PolynomialLR;
import dev.ember.optim.schedule.ReduceLROnPlateau;
import dev.ember.optim.schedule.SequentialLR;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The {@code schedulers} category: the cost of one learning-rate schedule {@code step()} in us per
 * call, mirrored by bench/peers/pytorch_ops.py {@code --suite schedulers}. Each schedule drives an
 * SGD(lr 0.1, momentum 0.9) optimizer with {@value #GROUPS} parameter groups of one small tensor
 * each (the step writes every group's lr; cyclic and one-cycle also its momentum). The settings are
 * the same on both sides:
 *
 * <ul>
 *   <li>step: StepLR(step_size 30, gamma 0.1); multi_step: MultiStepLR([30, 80, 120], 0.1);
 *       exponential: ExponentialLR(0.999); cosine_annealing: CosineAnnealingLR(T_max 1000, 0);
 *       cosine_warm_restarts: CosineAnnealingWarmRestarts(T_0 100, T_mult 2, 0);
 *       linear: LinearLR(1/3, 1, 1000); constant: ConstantLR(1/3, 1000); polynomial:
 *       PolynomialLR(1000, 2); lambda: LambdaLR(t -> 0.99^t);
 *   <li>one_cycle: OneCycleLR(max_lr 0.1, total_steps 10^9) (the step counter must stay below
 *       total_steps; the many calls of a measurement would run past a realistic one);
 *       cyclic: CyclicLR(0.001, 0.1, step_size_up 2000), triangular, momentum cycled;
 *   <li>sequential: SequentialLR([LinearLR(0.1, 1, 100), CosineAnnealingLR(1000)], [100]);
 *       linear_warmup: Ember's LinearWarmup(CosineAnnealingLR(1000), 100, 0.1), whose values are
 *       those of that SequentialLR, so PyTorch's side of it is the SequentialLR;
 *   <li>reduce_on_plateau: ReduceLROnPlateau(defaults).step(metric) with a constant metric (each
 *       step is a bad epoch, the lr falls every 11 steps until the change is below eps).
 * </ul>
 *
 * <p>The existing optim/cosine_annealing case (one group) stays in the optim category.
 */
final class ScheduleCases {
  static final int GROUPS = 4;
  private static final String CASE = "step " + GROUPS + " groups";

  private ScheduleCases() {}

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    out.add(sched("step", o -> new StepLR(o, 30, 0.1)));
    out.add(sched("multi_step", o -> new MultiStepLR(o, new int[] {30, 80, 120}, 0.1)));
    out.add(sched("exponential", o -> new ExponentialLR(o, 0.999)));
    out.add(sched("cosine_annealing", o -> new CosineAnnealingLR(o, 1000, 0.0)));
    out.add(sched("cosine_warm_restarts", o -> new CosineAnnealingWarmRestarts(o, 100, 2, 0.0)));
    out.add(sched("linear", o -> new LinearLR(o, 1.0 / 3, 1.0, 1000)));
    out.add(sched("constant", o -> new ConstantLR(o, 1.0 / 3, 1000)));
    out.add(sched("polynomial", o -> new PolynomialLR(o, 1000, 2.0)));
    out.add(sched("lambda", o -> new LambdaLR(o, t -> Math.pow(0.99, t))));
    out.add(sched("one_cycle", o -> new OneCycleLR(o, 0.1, 1_000_000_000L)));
    out.add(sched("cyclic", o -> new CyclicLR(o, 0.001, 0.1, 2000)));
    out.add(sched("sequential", o -> new SequentialLR(o,
        List.of(new LinearLR(o, 0.1, 1.0, 100), new CosineAnnealingLR(o, 1000, 0.0)), new int[] {100})));
    out.add(sched("linear_warmup", o -> new LinearWarmup(new CosineAnnealingLR(o, 1000, 0.0), 100, 0.1)));
    ReduceLROnPlateau plateau = new ReduceLROnPlateau(optimizer());
    out.add(BenchCase.latency("reduce_on_plateau", CASE, "latency_us", "us/call", 1e6, () -> plateau.step(1.0)));
    return out;
  }

  /** SGD(lr 0.1, momentum 0.9) over {@link #GROUPS} groups of one [4] parameter each. */
  static SGD optimizer() {
    List<ParamGroup> groups = new ArrayList<>();
    for (int i = 0; i < GROUPS; i++) groups.add(ParamGroup.of(Tensor.zeros(4).requiresGrad(true)));
    return new SGD(groups, Map.of("lr", 0.1, "momentum", 0.9));
  }

  private static BenchCase sched(String workload, Function<SGD, LRScheduler> make) {
    LRScheduler s = make.apply(optimizer());
    return BenchCase.latency(workload, CASE, "latency_us", "us/call", 1e6, s::step);
  }
}
