package dev.ember.bench;

import dev.ember.backend.cpu.Parallel;
import dev.ember.nn.Sequential;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.Optimizer;
import dev.ember.tensor.Deferred;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * Where a training step of the seed MLP (1024-h-h-h-10, the training suite's definition) spends its time:
 * zero_grad, forward with the loss, backward and the optimizer step, each timed around its call. With several
 * optimizers, each gets its own model and the rounds alternate between them in this one JVM, so that the
 * host's swings (20-30% here from minute to minute) fall on all of them alike. {@code --split-step} also times
 * the part of the step that computes the deferred weight gradients (a wide layer's dY^T X, which the optimizers
 * take block by block): after a backward, the GEMMs alone into a sink that reads one element per block.
 * {@code --floor} times the step's memory floor: one read-modify-write pass, on the same pool, over as many
 * floats as the model has parameters in each of the arrays the optimizer rewrites (the parameters and SGD
 * momentum's buffer, or the parameters and Adam's two moments), with a few multiply-adds per element. An
 * optimizer step over a model far past the caches cannot take less; the gradient, which the deferred GEMM hands
 * over in cache, is not counted.
 *
 * <pre>
 * StepPhases [--hidden H] [--batch B] [--optim O[,O...]] [--steps N] [--rounds R] [--split-step] [--floor]
 *   defaults: hidden 2048 (seed_medium), batch 32, optim sgd, steps 30 per round, rounds 10; O: sgd, adam, adamw
 * </pre>
 *
 * stdout: one JSON object per optimizer, medians over the rounds of each phase's mean ms per step:
 * {@code {"category":"step-phases","workload":"seed_h2048","case":"train b=32 adamw","unit":"ms","zero_grad",
 * "forward","backward","step","total","step_gemm","step_floor","deferred","rounds"}} ({@code step_gemm} null without
 * {@code --split-step}, {@code step_floor} without {@code --floor}; {@code deferred} counts the parameters whose
 * gradient was deferred). stderr: a table with each median and its min-max.
 */
public final class StepPhases {
  private static final String[] PHASES = {"zero_grad", "forward", "backward", "step", "total", "step_gemm", "step_floor"};
  private static final List<String> OPTIMIZERS = List.of("sgd", "adam", "adamw");
  /** The options that take a value. */
  private static final List<String> VALUED = List.of("--hidden", "--batch", "--steps", "--rounds", "--optim");

  private StepPhases() {}

  /** What to run. */
  record Options(int hidden, int batch, List<String> optims, int steps, int rounds, boolean splitStep, boolean floor) {}

  /** One optimizer's medians (and min, max) over the rounds, in {@link #PHASES} order; step_gemm, step_floor NaN when not timed. */
  record Result(String optim, double[] median, double[] min, double[] max, int deferred, int rounds) {}

  public static void main(String[] args) {
    Options o;
    try {
      o = parse(args);
    } catch (IllegalArgumentException e) {
      System.err.println(e.getMessage());
      System.exit(2);
      return;
    }
    List<Result> results = run(o);
    print(o, results, System.out, System.err);
  }

  static Options parse(String[] args) {
    int hidden = 2048;
    int batch = 32;
    int steps = 30;
    int rounds = 10;
    boolean split = false;
    boolean floor = false;
    List<String> optims = List.of("sgd");
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--split-step")) {
        split = true;
        continue;
      }
      if (a.equals("--floor")) {
        floor = true;
        continue;
      }
      if (i + 1 >= args.length || !VALUED.contains(a)) {
        throw new IllegalArgumentException(VALUED.contains(a)
            ? "StepPhases: " + a + " needs a value"
            : "StepPhases: unknown option '" + a + "' (options: --hidden, --batch, --optim, --steps, --rounds, --split-step, --floor)");
      }
      String v = args[++i];
      switch (a) {
        case "--hidden" -> hidden = BenchArgs.positiveInt("StepPhases", a, v);
        case "--batch" -> batch = BenchArgs.positiveInt("StepPhases", a, v);
        case "--steps" -> steps = BenchArgs.positiveInt("StepPhases", a, v);
        case "--rounds" -> rounds = BenchArgs.positiveInt("StepPhases", a, v);
        default -> {
          optims = List.of(v.split(",", -1));
          for (String name : optims) {
            if (!OPTIMIZERS.contains(name)) {
              throw new IllegalArgumentException("StepPhases: unknown optimizer '" + name + "' (one of " + OPTIMIZERS + ")");
            }
          }
        }
      }
    }
    return new Options(hidden, batch, optims, steps, rounds, split, floor);
  }

  /** Runs two warm-up rounds, then {@code o.rounds()} timed ones, alternating the optimizers within each. */
  static List<Result> run(Options o) {
    int n = o.optims().size();
    Sequential[] models = new Sequential[n];
    Optimizer[] opts = new Optimizer[n];
    for (int v = 0; v < n; v++) {
      models[v] = TrainingCases.seedModel(o.hidden(), new Generator(0));
      opts[v] = TrainingCases.optimizer(o.optims().get(v), models[v]);
    }
    Generator g = new Generator(1);
    Tensor x = Tensor.randn(g, o.batch(), 1024);
    Tensor y = Tensor.randint(g, 0, 10, o.batch());
    CrossEntropyLoss loss = new CrossEntropyLoss();
    double[][][] per = new double[n][PHASES.length][o.rounds()];
    int[] deferred = new int[n];
    float[][][] state = new float[n][][];
    for (int v = 0; v < n && o.floor(); v++) {
      state[v] = new float[streams(o.optims().get(v))][Math.toIntExact(models[v].numParameters(false))];
    }
    for (int r = -2; r < o.rounds(); r++) {
      for (int v = 0; v < n; v++) {
        long[] sum = new long[4];
        for (int s = 0; s < o.steps(); s++) {
          try (MemoryScope scope = MemoryScope.open()) {
            long t0 = System.nanoTime();
            opts[v].zeroGrad();
            long t1 = System.nanoTime();
            Tensor l = loss.forward(models[v].call(x), y);
            long t2 = System.nanoTime();
            l.backward();
            long t3 = System.nanoTime();
            opts[v].step();
            long t4 = System.nanoTime();
            sum[0] += t1 - t0;
            sum[1] += t2 - t1;
            sum[2] += t3 - t2;
            sum[3] += t4 - t3;
          }
        }
        double gemm = Double.NaN;
        if (o.splitStep()) {
          List<Deferred> ds = deferredGradients(models[v], opts[v], loss, x, y);
          deferred[v] = ds.size();
          gemm = timeGemms(ds, o.steps());
          opts[v].zeroGrad();
        }
        double floor = o.floor() ? timeRewrite(state[v], o.steps()) : Double.NaN;
        if (r < 0) continue;
        double total = 0;
        for (int p = 0; p < 4; p++) {
          per[v][p][r] = sum[p] / 1e6 / o.steps();
          total += per[v][p][r];
        }
        per[v][4][r] = total;
        per[v][5][r] = gemm;
        per[v][6][r] = floor;
      }
    }
    List<Result> out = new ArrayList<>();
    for (int v = 0; v < n; v++) {
      double[] med = new double[PHASES.length], min = new double[PHASES.length], max = new double[PHASES.length];
      for (int p = 0; p < PHASES.length; p++) {
        double[] s = per[v][p].clone();
        Arrays.sort(s);
        med[p] = s[s.length / 2];
        min[p] = s[0];
        max[p] = s[s.length - 1];
      }
      out.add(new Result(o.optims().get(v), med, min, max, deferred[v], o.rounds()));
    }
    return out;
  }

  /** After a forward and backward, the gradients of {@code model}'s parameters that backward left deferred. */
  private static List<Deferred> deferredGradients(Sequential model, Optimizer opt, CrossEntropyLoss loss, Tensor x, Tensor y) {
    opt.zeroGrad();
    loss.forward(model.call(x), y).backward();
    List<Deferred> ds = new ArrayList<>();
    for (Tensor p : model.parameters()) {
      Deferred d = p.grad() == null ? null : p.grad().storage().deferred();
      if (d != null) ds.add(d);
    }
    return ds;
  }

  private static volatile float sink;

  /** Mean ms of computing every deferred gradient once, block by block, each block read once. */
  private static double timeGemms(List<Deferred> ds, int reps) {
    float[] acc = new float[1];
    long t0 = System.nanoTime();
    for (int i = 0; i < reps; i++) {
      for (Deferred d : ds) d.computeBlocks((lo, hi, values, off) -> acc[0] += values[off]);
    }
    long t1 = System.nanoTime();
    sink = acc[0];
    return (t1 - t0) / 1e6 / reps;
  }

  /** Arrays an optimizer's step reads and rewrites per parameter: the parameter and SGD momentum's buffer, or Adam's two moments too. */
  static int streams(String optim) {
    return optim.equals("sgd") ? 2 : 3;
  }

  private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
  /** Floats per task of {@link #rewrite}: fixed, like the optimizers' own chunks. */
  private static final int CHUNK = 1 << 16;

  /** Mean ms of a {@link #rewrite} pass over {@code arrays}. */
  private static double timeRewrite(float[][] arrays, int reps) {
    long t0 = System.nanoTime();
    for (int i = 0; i < reps; i++) rewrite(arrays);
    return (System.nanoTime() - t0) / 1e6 / reps;
  }

  /**
   * One pass over two or three arrays of one length, each element read and written once: a[j] = a[j] / 2 + a[j+1] / 4
   * for all but the last array, which becomes last / 2 + 1/4 (values stay finite however many passes run).
   */
  static void rewrite(float[][] arrays) {
    int n = arrays[0].length;
    int k = arrays.length;
    Parallel.forEach(Parallel.chunks(n, CHUNK), t -> {
      int lo = t * CHUNK;
      int hi = Math.min(n, lo + CHUNK);
      int i = lo;
      for (int end = lo + S.loopBound(hi - lo); i < end; i += S.length()) {
        FloatVector next = FloatVector.fromArray(S, arrays[0], i);
        for (int j = 0; j < k; j++) {
          FloatVector cur = next;
          FloatVector add = j + 1 < k ? (next = FloatVector.fromArray(S, arrays[j + 1], i)).mul(0.25f)
              : FloatVector.broadcast(S, 0.25f);
          cur.mul(0.5f).add(add).intoArray(arrays[j], i);
        }
      }
      for (; i < hi; i++) {
        for (int j = 0; j < k; j++) arrays[j][i] = arrays[j][i] * 0.5f + (j + 1 < k ? arrays[j + 1][i] * 0.25f : 0.25f);
      }
    });
  }

  static void print(Options o, List<Result> results, PrintStream out, PrintStream err) {
    err.printf(Locale.ROOT, "seed MLP 1024-%d-%d-%d-10, batch %d, %d steps per round, %d rounds (medians [min-max], ms per step)%n",
        o.hidden(), o.hidden(), o.hidden(), o.batch(), o.steps(), o.rounds());
    for (Result r : results) {
      StringBuilder json = new StringBuilder();
      json.append(String.format(Locale.ROOT, "{\"category\":\"step-phases\",\"workload\":\"seed_h%d\",\"case\":\"train b=%d %s\",\"unit\":\"ms\"",
          o.hidden(), o.batch(), r.optim()));
      StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "%-6s", r.optim()));
      for (int p = 0; p < PHASES.length; p++) {
        boolean timed = !Double.isNaN(r.median()[p]);
        json.append(",\"").append(PHASES[p]).append("\":").append(timed ? String.format(Locale.ROOT, "%.4f", r.median()[p]) : "null");
        if (timed) {
          line.append(String.format(Locale.ROOT, "  %s %.2f [%.2f-%.2f]", PHASES[p], r.median()[p], r.min()[p], r.max()[p]));
        }
      }
      json.append(",\"deferred\":").append(o.splitStep() ? Integer.toString(r.deferred()) : "null");
      json.append(",\"rounds\":").append(r.rounds()).append('}');
      out.println(json);
      err.println(line);
    }
  }
}
