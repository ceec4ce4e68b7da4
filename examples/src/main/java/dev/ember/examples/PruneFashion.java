package dev.ember.examples;

import dev.ember.autograd.Grad;
import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.data.TensorDataset;
import dev.ember.metrics.Accuracy;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Linear;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.nn.prune.Prune;
import dev.ember.optim.Adam;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Pruning LeNet-5 on Fashion-MNIST (issue #36's measurement). A LeNet-5 is trained (Adam 1e-3, batch 128, seed 0,
 * 2 epochs by default), then three copies of it are fine-tuned for the same epochs (1 by default, a fresh Adam 1e-3,
 * the same batch order):
 * <ul>
 *   <li>{@code dense}: unpruned, the control (what the extra epoch gives without pruning);
 *   <li>{@code global80}: {@link Prune#globalUnstructured} of 80% over the weights of all five conv/linear layers,
 *       fine-tuned through the masks, then {@link Prune#remove};
 *   <li>{@code structured50}: {@link Prune#lnStructured} (L1, dim 0) of half the output channels of both
 *       convolutions and half the neurons of both hidden Linear layers, each followed by {@link Prune#shrinkOutputs}
 *       (conv 1-3-8 channels, Linear 200-60-42-10), then fine-tuned: a smaller model, not zeros.
 * </ul>
 * Test accuracy is printed after training, after pruning and after fine-tuning. Then the trained model and the shrunk
 * one classify the test set at batch 128 without the tape, alternating in rounds (the order rotating), and the
 * median milliseconds per batch and the speedup are printed.
 *
 * <p>Run from the repository root (every argument optional; {@code -} for DATA_DIR searches as {@link FashionCnn}):
 * <pre>
 * scripts/mvn -q -pl examples -am test-compile exec:exec -Dexample=PruneFashion -Dargs="EPOCHS FINETUNE_EPOCHS LIMIT DATA_DIR SEED ROUNDS"
 * </pre>
 * The last lines are {@code key=value}: {@code baseline_accuracy}, {@code dense_accuracy}, {@code
 * global80_accuracy}, {@code global80_sparsity}, {@code structured50_accuracy}, {@code structured50_params}, {@code
 * baseline_ms}, {@code structured50_ms} and {@code structured50_speedup}.
 */
public final class PruneFashion {
  /** The layers whose outputs structured pruning removes, in the order they run (not the classifier's output). */
  public static final List<String> STRUCTURED = List.of("features.0", "features.3", "classifier.1", "classifier.3");

  private PruneFashion() {}

  public static void main(String[] args) throws IOException {
    int epochs = args.length > 0 ? Integer.parseInt(args[0]) : 2;
    int fineTune = args.length > 1 ? Integer.parseInt(args[1]) : 1;
    int limit = args.length > 2 ? Integer.parseInt(args[2]) : 60_000;
    Path dataDir = args.length > 3 && !args[3].equals("-") ? Path.of(args[3]) : null;
    int seed = args.length > 4 ? Integer.parseInt(args[4]) : 0;
    int rounds = args.length > 5 ? Integer.parseInt(args[5]) : 15;

    FashionMnist.Split split = FashionMnist.load(FashionMnist.locate(dataDir));
    TensorDataset trainSet = first(split.train(), limit);
    TensorDataset testSet = split.test();
    DataLoader test = new DataLoader(testSet, BatchConfig.sequential(1000));
    System.out.printf(Locale.ROOT, "train %d images, test %d; LeNet-5 %d epochs, fine-tuning %d, seed %d%n",
        trainSet.size(), testSet.size(), epochs, fineTune, seed);

    Generator.manualSeed(seed);
    Module base = Models.lenet5(10);
    fit(base, trainSet, seed, epochs);
    double acc = accuracy(base, test);
    Map<String, Tensor> trained = snapshot(base);
    System.out.printf(Locale.ROOT, "trained: accuracy %.4f, %d parameters%n", acc, params(base));

    Module dense = copy(trained);
    fit(dense, trainSet, seed + 1, fineTune);
    double denseAcc = accuracy(dense, test);
    System.out.printf(Locale.ROOT, "dense + %d epoch(s): accuracy %.4f%n", fineTune, denseAcc);

    Module global = copy(trained);
    List<Prune.Target> targets = new ArrayList<>();
    for (Module m : global.modules()) {
      if (m instanceof Conv2d || m instanceof Linear) targets.add(Prune.target(m, "weight"));
    }
    Prune.globalUnstructured(targets, 0.8);
    double globalPruned = accuracy(global, test);
    fit(global, trainSet, seed + 1, fineTune);
    for (Prune.Target t : targets) Prune.remove(t.module(), t.name());
    double globalAcc = accuracy(global, test);
    double sparsity = weightSparsity(targets);
    System.out.printf(Locale.ROOT, "global 80%% unstructured: accuracy %.4f after pruning, %.4f after fine-tuning; "
        + "sparsity of the pruned weights %.4f; per layer %s%n", globalPruned, globalAcc, sparsity, layerSparsity(targets));

    Module small = shrink(copy(trained), 0.5);
    double smallPruned = accuracy(small, test);
    fit(small, trainSet, seed + 1, fineTune);
    double smallAcc = accuracy(small, test);
    System.out.printf(Locale.ROOT, "structured 50%% + shrink: accuracy %.4f after pruning, %.4f after fine-tuning; "
        + "%d parameters (%.1f%%)%n", smallPruned, smallAcc, params(small), 100.0 * params(small) / params(base));

    double[] ms = inferenceMs(base, small, testSet, rounds);
    System.out.printf(Locale.ROOT, "inference b=128 (median of %d rounds): trained %.3f ms, shrunk %.3f ms%n", rounds,
        ms[0], ms[1]);

    System.out.printf(Locale.ROOT, "baseline_accuracy=%.4f%n", acc);
    System.out.printf(Locale.ROOT, "dense_accuracy=%.4f%n", denseAcc);
    System.out.printf(Locale.ROOT, "global80_accuracy=%.4f%n", globalAcc);
    System.out.printf(Locale.ROOT, "global80_sparsity=%.4f%n", sparsity);
    System.out.printf(Locale.ROOT, "structured50_accuracy=%.4f%n", smallAcc);
    System.out.printf(Locale.ROOT, "structured50_params=%d%n", params(small));
    System.out.printf(Locale.ROOT, "baseline_ms=%.3f%n", ms[0]);
    System.out.printf(Locale.ROOT, "structured50_ms=%.3f%n", ms[1]);
    System.out.printf(Locale.ROOT, "structured50_speedup=%.3f%n", ms[0] / ms[1]);
  }

  /**
   * {@code model} (LeNet-5) with the fraction {@code amount} of the outputs of each layer of {@link #STRUCTURED}
   * removed by {@link Prune#shrinkStructured} (L1 norm along dim 0, the mask made permanent, the kept channels
   * shrunk), layer by layer (shrinking one rebuilds the next one's input side). In
   * place; returns {@code model}.
   */
  public static Module shrink(Module model, double amount) {
    for (String name : STRUCTURED) {
      Prune.shrinkStructured(model, name, amount, 1);
    }
    return model;
  }

  /** Adam 1e-3, batch 128 shuffled by {@code seed}, cross entropy. */
  private static void fit(Module model, TensorDataset data, int seed, int epochs) {
    DataLoader train = new DataLoader(data, BatchConfig.shuffled(128, seed));
    Trainer.builder().maxEpochs(epochs).build()
        .fit(model, F::crossEntropy, new Adam(model.parameters(), 1e-3), train, null);
  }

  private static double accuracy(Module model, DataLoader test) {
    return Trainer.evaluate(model, null, test, List.of(new Accuracy())).get("accuracy");
  }

  /** A copy of the state dict (the tensors cloned), so later training of the model leaves it as it is. */
  private static Map<String, Tensor> snapshot(Module model) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    try (Grad ignored = Grad.off()) {
      model.stateDict().forEach((k, v) -> out.put(k, v.clone()));
    }
    return out;
  }

  /** A fresh LeNet-5 holding {@code state}. */
  private static Module copy(Map<String, Tensor> state) {
    Module m = Models.lenet5(10);
    m.loadStateDict(state);
    return m;
  }

  private static long params(Module model) {
    long n = 0;
    for (Tensor p : model.parameters()) n += p.numel();
    return n;
  }

  private static double weightSparsity(List<Prune.Target> targets) {
    long zeros = 0;
    long all = 0;
    for (Prune.Target t : targets) {
      long n = t.module().param(t.name()).numel();
      zeros += Math.round(Prune.sparsity(t.module(), t.name()) * n);
      all += n;
    }
    return (double) zeros / all;
  }

  private static String layerSparsity(List<Prune.Target> targets) {
    StringBuilder sb = new StringBuilder("[");
    for (Prune.Target t : targets) {
      if (sb.length() > 1) sb.append(", ");
      sb.append(String.format(Locale.ROOT, "%.2f", Prune.sparsity(t.module(), t.name())));
    }
    return sb.append("]").toString();
  }

  /**
   * Median milliseconds per batch of 128 test images for {@code a} and {@code b} in eval mode without the tape:
   * {@code rounds} rounds, each running both models over the same 10 batches in turn, the order alternating.
   */
  static double[] inferenceMs(Module a, Module b, TensorDataset test, int rounds) {
    a.eval();
    b.eval();
    int n = Math.min(10, Math.max(1, test.size() / 128));
    List<Tensor> batches = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      int size = Math.min(128, test.size() - i * 128);
      batches.add(test.inputs().narrow(0, i * 128, size).contiguous());
    }
    Module[] models = {a, b};
    double[][] ms = new double[2][rounds];
    try (Grad ignored = Grad.off()) {
      for (int w = 0; w < 5; w++) for (Module m : models) run(m, batches); // warm-up
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 2; k++) {
          int v = (r + k) % 2;
          long t0 = System.nanoTime();
          run(models[v], batches);
          ms[v][r] = (System.nanoTime() - t0) / 1e6 / batches.size();
        }
      }
    }
    return new double[] {median(ms[0]), median(ms[1])};
  }

  private static void run(Module m, List<Tensor> batches) {
    for (Tensor x : batches) {
      try (MemoryScope call = MemoryScope.open()) {
        m.call(x);
      }
    }
  }

  private static double median(double[] v) {
    double[] s = v.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }

  private static TensorDataset first(TensorDataset d, int n) {
    int k = Math.min(n, d.size());
    return new TensorDataset(d.inputs().narrow(0, 0, k), d.targets().narrow(0, 0, k));
  }
}
