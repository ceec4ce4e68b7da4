package dev.ember.bench;

import dev.ember.autograd.Autograd;
import dev.ember.autograd.Checkpointing;
import dev.ember.nn.CheckpointSequential;
import dev.ember.nn.CheckpointSequential.Range;
import dev.ember.nn.Embedding;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.UnaryOperator;

/**
 * What gradient checkpointing per layer saves and costs on two training workloads, each run with and without it
 * in this one JVM (rounds alternate between the two, so that the host's swings fall on both alike):
 * <ul>
 *   <li>{@code transformer}: the training suite's transformer (embedding 256, two post-norm encoder layers of
 *       d_model 256, 4 heads, ff 1024, a linear head; batch 16, T 128, causal mask, AdamW), each encoder layer
 *       checkpointed;
 *   <li>{@code mlp}: the seed MLP 1024-1024-1024-1024-10 with ReLU at batch 256 (SGD with momentum), each
 *       Linear+ReLU pair checkpointed.
 * </ul>
 * Per workload and mode one JSON line: {@code saved_mb}, what the graph keeps for backward at the loss
 * ({@link Autograd#savedBytes}); {@code pool_mb}, the buffers the step's memory scope had to hold at once (its
 * pool after two steps from an empty pool: arrays are reused by exact length, so this is the step's peak of
 * pooled buffers, activations, temporaries and gradients, parameters and optimizer state excluded);
 * {@code ms_per_step}, the median over the rounds of the mean step time, with its forward (to the loss) and
 * backward parts ({@code forward_ms}, {@code backward_ms}: the recomputation is in the backward); and whether one step's parameter
 * gradients were bitwise those without checkpointing.
 *
 * <pre>
 * CheckpointMemory [--workload transformer|mlp|all] [--steps N] [--rounds R] [--threads N]
 *   defaults: all, 3 steps per round, 5 rounds after one warm-up round
 * </pre>
 */
public final class CheckpointMemory {
  private CheckpointMemory() {}

  /** One workload: its model, its optimizer, and a step's loss with or without checkpointing. */
  private record Workload(String name, String caseName, Module model, Optimizer opt,
      BiFunction<Integer, Boolean, Tensor> loss) {}

  public static void main(String[] args) {
    String which = "all";
    int steps = 3;
    int rounds = 5;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--workload" -> which = args[++i];
        case "--steps" -> steps = Integer.parseInt(args[++i]);
        case "--rounds" -> rounds = Integer.parseInt(args[++i]);
        case "--threads" -> Device.CPU.backend().setThreads(Integer.parseInt(args[++i]));
        default -> {
          System.err.println("CheckpointMemory: unknown option " + args[i]
              + "\nusage: CheckpointMemory [--workload transformer|mlp|all] [--steps N] [--rounds R] [--threads N]");
          System.exit(2);
        }
      }
    }
    List<Workload> ws = new ArrayList<>();
    if (which.equals("all") || which.equals("transformer")) ws.add(transformer());
    if (which.equals("all") || which.equals("mlp")) ws.add(mlp());
    if (ws.isEmpty()) {
      System.err.println("CheckpointMemory: unknown workload " + which + " (transformer, mlp or all)");
      System.exit(2);
    }
    for (Workload w : ws) measure(w, steps, rounds, System.out);
  }

  private static void measure(Workload w, int steps, int rounds, PrintStream out) {
    boolean same = sameGradients(w);
    long[] saved = new long[2];
    long[] pool = new long[2];
    for (int mode = 0; mode < 2; mode++) {
      boolean ckpt = mode == 1;
      MemoryScope.trimPool();
      for (int s = 0; s < 2; s++) {
        try (MemoryScope step = MemoryScope.open()) {
          w.opt().zeroGrad();
          Tensor l = w.loss().apply(s, ckpt);
          saved[mode] = Autograd.savedBytes(l);
          l.backward();
          w.opt().step();
        }
      }
      pool[mode] = MemoryScope.pooledBytes();
    }
    double[][] ms = new double[2][rounds];
    double[][] fwd = new double[2][rounds];
    double[][] bwd = new double[2][rounds];
    int batch = 0;
    for (int r = -1; r < rounds; r++) { // round -1 warms up
      for (int mode = 0; mode < 2; mode++) {
        long t0 = System.nanoTime();
        long f = 0;
        long b = 0;
        for (int s = 0; s < steps; s++) {
          try (MemoryScope step = MemoryScope.open()) {
            w.opt().zeroGrad();
            long a = System.nanoTime();
            Tensor l = w.loss().apply(batch++, mode == 1);
            long c = System.nanoTime();
            l.backward();
            b += System.nanoTime() - c;
            f += c - a;
            w.opt().step();
          }
        }
        if (r >= 0) {
          ms[mode][r] = (System.nanoTime() - t0) / 1e6 / steps;
          fwd[mode][r] = f / 1e6 / steps;
          bwd[mode][r] = b / 1e6 / steps;
        }
      }
    }
    for (int mode = 0; mode < 2; mode++) {
      out.printf(Locale.ROOT, "{\"category\":\"memory\",\"workload\":\"%s\",\"case\":\"%s%s\",\"saved_mb\":%.2f,"
              + "\"pool_mb\":%.2f,\"ms_per_step\":%.1f,\"forward_ms\":%.1f,\"backward_ms\":%.1f,\"rounds\":%d%s}%n",
          w.name(), w.caseName(), mode == 1 ? ", checkpoint per layer" : "", saved[mode] / 1e6, pool[mode] / 1e6,
          median(ms[mode]), median(fwd[mode]), median(bwd[mode]), rounds,
          mode == 1 ? ",\"bitwise_same_gradients\":" + same : "");
    }
    System.err.printf(Locale.ROOT, "%s: saved %.1f -> %.1f MB (%.0f%% less), pool %.1f -> %.1f MB (%.0f%% less),"
            + " step %.1f -> %.1f ms (%+.0f%%), gradients bitwise equal: %s%n", w.name(), saved[0] / 1e6,
        saved[1] / 1e6, 100.0 * (saved[0] - saved[1]) / saved[0], pool[0] / 1e6, pool[1] / 1e6,
        100.0 * (pool[0] - pool[1]) / pool[0], median(ms[0]), median(ms[1]),
        100 * (median(ms[1]) / median(ms[0]) - 1), same);
  }

  /** One batch's parameter gradients with and without checkpointing, compared bit for bit. */
  private static boolean sameGradients(Workload w) {
    List<float[]> plain = new ArrayList<>();
    for (int mode = 0; mode < 2; mode++) {
      w.model().zeroGrad(true);
      w.loss().apply(0, mode == 1).backward();
      List<Tensor> ps = w.model().parameters();
      for (int i = 0; i < ps.size(); i++) {
        float[] g = ps.get(i).grad().toFloatArray();
        if (mode == 0) plain.add(g);
        else if (!Arrays.equals(plain.get(i), g)) return false;
      }
    }
    w.model().zeroGrad(true);
    return true;
  }

  private static double median(double[] a) {
    double[] s = a.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  /** The training suite's transformer ({@code TrainingCases.transformer}), its encoder layers checkpointed. */
  private static Workload transformer() {
    int b = 16, t = 128, v = 256, d = 256;
    Generator g = new Generator(0);
    Embedding emb = new Embedding(v, d);
    TransformerEncoder enc = new TransformerEncoder(
        new TransformerEncoderLayer(d, 4, 1024, 0.0, "relu", 1e-5, true, false, true, g), 2);
    Linear head = new Linear(d, v, true, g);
    Sequential model = new Sequential(emb, enc, head); // a container for the parameters only
    model.train();
    Optimizer opt = new AdamW(model.parameters(), Map.of("lr", 1e-3, "weight_decay", 0.01));
    CrossEntropyLoss ce = new CrossEntropyLoss();
    Tensor mask = Transformer.generateSquareSubsequentMask(t);
    Tensor[] xs = new Tensor[8];
    Tensor[] ys = new Tensor[8];
    for (int i = 0; i < 8; i++) {
      Tensor s = Tensor.randint(g, 0, v, b, t + 1);
      xs[i] = s.narrow(1, 0, t).contiguous();
      ys[i] = s.narrow(1, 1, t).contiguous().reshape(-1);
    }
    return new Workload("transformer", "train b=16 T=128 adamw", model, opt, (k, ckpt) -> {
      Tensor h = emb.call(xs[k % 8]);
      for (int i = 0; i < enc.numLayers(); i++) {
        TransformerEncoderLayer layer = enc.layer(i);
        UnaryOperator<Tensor> block = x -> layer.forward(x, mask, null, false);
        h = ckpt ? Checkpointing.apply(block, h) : block.apply(h);
      }
      return ce.forward(head.call(h).reshape(-1, v), ys[k % 8]);
    });
  }

  /** The seed MLP at width 1024, batch 256, each Linear+ReLU pair checkpointed. */
  private static Workload mlp() {
    Generator g = new Generator(0);
    Sequential model = TrainingCases.seedModel(1024, g);
    Optimizer opt = TrainingCases.optimizer("sgd", model);
    CrossEntropyLoss ce = new CrossEntropyLoss();
    Tensor[] xs = new Tensor[4];
    Tensor[] ys = new Tensor[4];
    for (int i = 0; i < 4; i++) {
      xs[i] = Tensor.randn(g, 256, 1024);
      ys[i] = Tensor.randint(g, 0, 10, 256);
    }
    List<Range> pairs = List.of(new Range(0, 2), new Range(2, 4), new Range(4, 6));
    return new Workload("mlp", "seed h=1024 train b=256 sgd-mom", model, opt, (k, ckpt) ->
        ce.forward(ckpt ? CheckpointSequential.apply(model, pairs, xs[k % 4]) : model.forward(xs[k % 4]), ys[k % 4]));
  }
}
