package dev.ember.bench;

import dev.ember.compile.Compiler;
import dev.ember.compile.TrainingStep;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Eager against compiled training steps ({@link Compiler#compileTraining}): the training category's mlp_mnist step
 * (784-128-10 ReLU, SGD lr 0.01, batch 32) and its transformer step (the TinyLM, AdamW, batch 16 x 128 tokens).
 * Each workload gets three identical models, one stepped eagerly, one through the compiled step and one through
 * the fused step ({@link TrainingStep#step(Tensor, Tensor, Optimizer)}: the optimizer's update fused in); the
 * rounds alternate between them in this JVM so that the host's swings fall on all alike. Each step is timed in
 * phases: eager's forward with the loss, backward, and optimizer step; the compiled step's run (forward, loss and
 * backward as one graph) and optimizer step; the fused step whole (as forward_backward, its step phase 0). No
 * timing is asserted anywhere: this prints.
 *
 * <pre>
 * CompiledStepBench [--workload mlp_mnist|transformer|all] [--steps N] [--rounds R]
 *   defaults: all, steps 50 per round for mlp_mnist (5 for the transformer), rounds 7 after 2 warm-up rounds
 * </pre>
 *
 * stdout: one JSON object per workload and mode, medians over the rounds of each phase's mean ms per step:
 * {@code {"category":"compile","workload":"mlp_mnist","case":"train b=32 sgd","mode":"compiled|fused","unit":"ms",
 * "forward_backward","step","total","total_min","speedup","speedup_min","joint","rounds"}} (speedup: eager's median
 * total over this mode's; speedup_min: the same of the fastest rounds, steadier on a busy host). stderr: a table
 * with min-max, and the compiled step's
 * explain() (its op counts, or the breaks that kept it from being one graph).
 */
public final class CompiledStepBench {
  private CompiledStepBench() {}

  /** One workload: two models built alike, their optimizers, the loss, the batches. */
  record Workload(String name, String caseName, Module eager, Module compiled, Module fused, Optimizer eagerOpt,
      Optimizer compiledOpt, Optimizer fusedOpt, BiFunction<Tensor, Tensor, Tensor> loss, Tensor[][] batches,
      int steps) {}

  static Workload mlpMnist(int steps) {
    Module[] m = new Module[3];
    Optimizer[] o = new Optimizer[3];
    for (int i = 0; i < 3; i++) {
      Generator g = new Generator(0);
      m[i] = new Sequential(new dev.ember.nn.Linear(784, 128, true, g), new dev.ember.nn.ReLU(),
          new dev.ember.nn.Linear(128, 10, true, g));
      o[i] = new SGD(m[i].parameters(), 0.01);
    }
    Generator g = new Generator(1);
    Tensor[][] batches = new Tensor[8][];
    for (int i = 0; i < batches.length; i++) batches[i] = new Tensor[] {Tensor.randn(g, 32, 784), Tensor.randint(g, 0, 10, 32)};
    CrossEntropyLoss ce = new CrossEntropyLoss();
    return new Workload("mlp_mnist", "train b=32 sgd", m[0], m[1], m[2], o[0], o[1], o[2], ce::forward, batches, steps);
  }

  static Workload transformer(int steps) {
    int b = 16;
    int t = 128;
    int v = 256;
    Tensor mask = Transformer.generateSquareSubsequentMask(t);
    Module[] m = new Module[3];
    Optimizer[] o = new Optimizer[3];
    for (int i = 0; i < 3; i++) {
      TrainingCases.TinyLm lm = new TrainingCases.TinyLm(v, 256, 4, 1024, 2, new Generator(0));
      lm.train();
      m[i] = new Masked(lm, mask);
      o[i] = new AdamW(m[i].parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
    }
    Generator g = new Generator(1);
    Tensor[][] batches = new Tensor[4][];
    for (int i = 0; i < batches.length; i++) {
      Tensor s = Tensor.randint(g, 0, v, b, t + 1);
      batches[i] = new Tensor[] {s.narrow(1, 0, t).contiguous(), s.narrow(1, 1, t).contiguous().reshape(-1)};
    }
    CrossEntropyLoss ce = new CrossEntropyLoss();
    return new Workload("transformer", "train b=16 T=128 adamw", m[0], m[1], m[2], o[0], o[1], o[2],
        (logits, y) -> ce.forward(logits.reshape(-1, v), y), batches, steps);
  }

  /** The TinyLM with its causal mask, as a one-input module. */
  static final class Masked extends Module {
    private final TrainingCases.TinyLm lm;
    private final Tensor mask;

    Masked(TrainingCases.TinyLm lm, Tensor mask) {
      this.lm = registerModule("lm", lm);
      this.mask = mask;
    }

    @Override
    public String name() {
      return "MaskedTinyLM";
    }

    @Override
    public Tensor forward(Tensor x) {
      return lm.forward(x, mask);
    }
  }

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, CompiledStepBench::runMain);
  }

  private static void runMain(String[] args) {
    String which = "all";
    int steps = -1;
    int rounds = 7;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = BenchArgs.value("CompiledStepBench", args, i++);
      switch (a) {
        case "--workload" -> {
          if (!List.of("all", "mlp_mnist", "transformer").contains(v)) {
            throw new BenchArgs.BadOption("CompiledStepBench: --workload must be mlp_mnist, transformer or all, got '"
                + v + "'");
          }
          which = v;
        }
        case "--steps" -> steps = BenchArgs.positiveInt("CompiledStepBench", a, v);
        case "--rounds" -> rounds = BenchArgs.positiveInt("CompiledStepBench", a, v);
        default -> throw BenchArgs.unknown("CompiledStepBench", a,
            "--workload mlp_mnist|transformer|all, --steps N, --rounds R");
      }
    }
    List<Workload> ws = new ArrayList<>();
    if (which.equals("all") || which.equals("mlp_mnist")) ws.add(mlpMnist(steps > 0 ? steps : 50));
    if (which.equals("all") || which.equals("transformer")) ws.add(transformer(steps > 0 ? steps : 5));
    for (Workload w : ws) run(w, rounds);
  }

  /** Times {@code w}, eager and compiled rounds alternating, and prints the medians. */
  static void run(Workload w, int rounds) {
    TrainingStep step = Compiler.compileTraining(w.compiled(), w.loss());
    TrainingStep fusedStep = Compiler.compileTraining(w.fused(), w.loss());
    double[][] eager = new double[rounds][];
    double[][] compiled = new double[rounds][];
    double[][] fused = new double[rounds][];
    for (int r = -2; r < rounds; r++) { // two warm-up rounds
      double[] e = eagerRound(w);
      double[] c = compiledRound(w, step);
      double[] f = fusedRound(w, fusedStep);
      if (r >= 0) {
        eager[r] = e;
        compiled[r] = c;
        fused[r] = f;
      }
    }
    System.err.println(step.explain());
    if (step.isJoint()) { // where the compiled step's time goes: ms per op kind over one step, after the rounds
      Tensor[] d = w.batches()[0];
      StringBuilder sb = new StringBuilder("compiled step by op (ms, one step):");
      try (MemoryScope scope = MemoryScope.open()) {
        w.compiledOpt().zeroGrad();
        step.profile(d[0], d[1]).forEach((op, ms) -> sb.append(String.format(Locale.ROOT, " %s %.3f", op, ms)));
        w.compiledOpt().zeroGrad();
      }
      System.err.println(sb);
    }
    String[] phases = {"forward_backward", "step", "total"};
    double[] me = medians(eager);
    double minEager = Arrays.stream(eager).mapToDouble(x -> x[2]).min().orElse(Double.NaN);
    for (String mode : new String[] {"eager", "compiled", "fused"}) {
      double[][] all = mode.equals("eager") ? eager : mode.equals("compiled") ? compiled : fused;
      double[] m = medians(all);
      StringBuilder json = new StringBuilder(String.format(Locale.ROOT,
          "{\"category\":\"compile\",\"workload\":\"%s\",\"case\":\"%s\",\"mode\":\"%s\",\"unit\":\"ms\"", w.name(),
          w.caseName(), mode));
      StringBuilder table = new StringBuilder(String.format(Locale.ROOT, "%-12s %-9s", w.name(), mode));
      for (int p = 0; p < phases.length; p++) {
        json.append(String.format(Locale.ROOT, ",\"%s\":%.4f", phases[p], m[p]));
        double lo = Double.MAX_VALUE;
        double hi = 0;
        for (double[] x : all) {
          lo = Math.min(lo, x[p]);
          hi = Math.max(hi, x[p]);
        }
        table.append(String.format(Locale.ROOT, "  %s %.3f (%.3f-%.3f)", phases[p], m[p], lo, hi));
      }
      double min = Arrays.stream(all).mapToDouble(x -> x[2]).min().orElse(Double.NaN);
      json.append(String.format(Locale.ROOT, ",\"total_min\":%.4f,\"speedup\":%.3f,\"speedup_min\":%.3f,"
          + "\"joint\":%s,\"rounds\":%d}", min, me[2] / m[2], minEager / min, step.isJoint(), all.length));
      System.out.println(json);
      System.err.println(table);
    }
  }

  /** Mean ms per step of forward+loss+backward, optimizer step, and the whole step, over one round. */
  private static double[] eagerRound(Workload w) {
    long fb = 0;
    long st = 0;
    for (int s = 0; s < w.steps(); s++) {
      Tensor[] d = w.batches()[s % w.batches().length];
      try (MemoryScope scope = MemoryScope.open()) { // the step's tensors back to the pool, as the Trainer does
        long t0 = System.nanoTime();
        w.eagerOpt().zeroGrad();
        Tensor l = w.loss().apply(w.eager().call(d[0]), d[1]);
        l.backward();
        long t1 = System.nanoTime();
        w.eagerOpt().step();
        long t2 = System.nanoTime();
        fb += t1 - t0;
        st += t2 - t1;
      }
    }
    return perStep(fb, st, w.steps());
  }

  private static double[] compiledRound(Workload w, TrainingStep step) {
    long fb = 0;
    long st = 0;
    for (int s = 0; s < w.steps(); s++) {
      Tensor[] d = w.batches()[s % w.batches().length];
      try (MemoryScope scope = MemoryScope.open()) {
        long t0 = System.nanoTime();
        w.compiledOpt().zeroGrad();
        step.run(d[0], d[1]);
        long t1 = System.nanoTime();
        w.compiledOpt().step();
        long t2 = System.nanoTime();
        fb += t1 - t0;
        st += t2 - t1;
      }
    }
    return perStep(fb, st, w.steps());
  }

  /** The fused step ({@link TrainingStep#step(Tensor, Tensor, Optimizer)}): all of it counts as forward_backward. */
  private static double[] fusedRound(Workload w, TrainingStep step) {
    long all = 0;
    for (int s = 0; s < w.steps(); s++) {
      Tensor[] d = w.batches()[s % w.batches().length];
      try (MemoryScope scope = MemoryScope.open()) {
        long t0 = System.nanoTime();
        step.step(d[0], d[1], w.fusedOpt());
        all += System.nanoTime() - t0;
      }
    }
    return perStep(all, 0, w.steps());
  }

  private static double[] perStep(long fb, long st, int steps) {
    return new double[] {fb / 1e6 / steps, st / 1e6 / steps, (fb + st) / 1e6 / steps};
  }

  private static double[] medians(double[][] rounds) {
    int phases = rounds[0].length;
    double[] m = new double[phases];
    for (int p = 0; p < phases; p++) {
      double[] v = new double[rounds.length];
      for (int r = 0; r < rounds.length; r++) v[r] = rounds[r][p];
      Arrays.sort(v);
      m[p] = v[v.length / 2];
    }
    return m;
  }
}
