package dev.ember.bench;

import dev.ember.data.BatchConfig;
import dev.ember.data.DataLoader;
import dev.ember.data.TensorDataset;
import dev.ember.nn.Linear;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.SGD;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Callback;
import dev.ember.train.Trainer;
import dev.ember.train.callbacks.CsvLogger;
import dev.ember.train.callbacks.EarlyStopping;
import dev.ember.train.callbacks.GradientMonitor;
import dev.ember.train.callbacks.HistogramLogger;
import dev.ember.train.callbacks.JsonLinesLogger;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.Profiling;
import dev.ember.train.callbacks.ProgressBar;
import dev.ember.train.callbacks.ReduceLROnPlateauCallback;
import dev.ember.train.callbacks.TerminateOnNaN;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * The {@code callbacks} category (Ember only: PyTorch has no trainer to compare with): what each
 * built-in callback adds to a training step run through {@link Trainer}. The step is the MLP
 * 784-128-10 (ReLU) at batch {@value #BATCH} with SGD(lr 0.01) and cross entropy; one call is
 * {@code fit} over one epoch of {@value #STEPS} batches of fixed random data (not shuffled), so
 * per-epoch work (a CSV row, a checkpoint at epoch end) is spread over {@value #STEPS} steps.
 *
 * <ul>
 *   <li>{@code trainer/step mlp ...}: us per step without callbacks, timed as the other categories;
 *   <li>{@code <callback>/added per step}: us per step that the callback adds, and {@code
 *       <callback>/added per step, %} the same relative to the step without it. These are paired
 *       measurements: each repeat alternates fits without and with the callback (order flipped every
 *       pair, about {@value #PAIR_SECONDS} s in all) on the same model and data, and reports the
 *       difference of the summed times. Noise can make a small overhead come out negative.
 * </ul>
 *
 * Callbacks write into one temporary folder, removed when the JVM exits; ProgressBar and Profiling
 * print to a discarding stream. Settings: progress_bar (plain lines, 30 s or 10% of an epoch),
 * csv_logger and json_lines_logger (json_lines_logger also a line every 10 batches),
 * gradient_monitor (norms every step), terminate_on_nan, early_stopping (on the epoch loss,
 * patience 1000), reduce_lr_on_plateau (epoch loss, factor 0.5, patience 10), histogram_logger
 * (every 50 steps, 30 bins), profiling (JSON summary at train end), model_checkpoint (every 50
 * steps, last 2 kept) and default_set: what {@code ember train} installs, CsvLogger, Profiling,
 * ModelCheckpoint at each epoch end keeping 3, and a ProgressBar.
 */
final class CallbackCases {
  static final int BATCH = 32;
  static final int STEPS = 100;
  static final double PAIR_SECONDS = 1.0;
  static final String STEP_CASE = "step mlp 784-128-10 b=" + BATCH + " sgd";
  static final String ADDED = "added per step";
  static final String ADDED_PCT = "added per step, %";
  private static final PrintStream DISCARD = new PrintStream(OutputStream.nullOutputStream());
  private static Path tmp;

  private CallbackCases() {}

  /** The model, optimizer and data every case of one JVM trains; built on first use. */
  private static final class Setup {
    private static Setup instance;
    final Sequential model;
    final SGD opt;
    final DataLoader data;

    private Setup() {
      Generator g = new Generator(0);
      model = new Sequential(new Linear(784, 128, true, g), new ReLU(), new Linear(128, 10, true, g));
      opt = new SGD(model.parameters(), 0.01);
      Tensor x = Tensor.randn(g, BATCH * STEPS, 784);
      Tensor y = Tensor.randint(g, 0, 10, BATCH * STEPS);
      data = new DataLoader(new TensorDataset(x, y), new BatchConfig(BATCH, false, false, 0), 0);
    }

    static synchronized Setup get() {
      if (instance == null) instance = new Setup();
      return instance;
    }

    /** One epoch of {@link #STEPS} steps through {@code trainer}; returns the seconds it took. */
    double fit(Trainer trainer) {
      long t = System.nanoTime();
      trainer.fit(model, F::crossEntropy, opt, data, null);
      return (System.nanoTime() - t) / 1e9;
    }
  }

  /** The callback sets measured, by workload name; each builds its callbacks writing into the given folder. */
  static Map<String, Function<Path, List<Callback>>> sets() {
    Map<String, Function<Path, List<Callback>>> m = new LinkedHashMap<>();
    m.put("progress_bar", d -> List.of(new ProgressBar(DISCARD, false)));
    m.put("csv_logger", d -> List.of(new CsvLogger(d.resolve("metrics.csv"))));
    m.put("json_lines_logger", d -> List.of(new JsonLinesLogger(d.resolve("log.jsonl"), 10)));
    m.put("gradient_monitor", d -> List.of(new GradientMonitor(1, false)));
    m.put("terminate_on_nan", d -> List.of(new TerminateOnNaN()));
    m.put("early_stopping", d -> List.of(new EarlyStopping("loss", "min", 1000)));
    m.put("reduce_lr_on_plateau", d -> List.of(new ReduceLROnPlateauCallback("loss", "min", 0.5, 10, 0.0)));
    m.put("histogram_logger", d -> List.of(new HistogramLogger(d.resolve("histograms.jsonl"), 50, 30)));
    m.put("profiling", d -> List.of(new Profiling(DISCARD, d.resolve("profile.json"))));
    m.put("model_checkpoint", d -> List.of(new ModelCheckpoint(d.resolve("ckpt"), 0, 50, 2)));
    m.put("default_set", d -> List.of(new CsvLogger(d.resolve("metrics.csv")),
        new Profiling(DISCARD, d.resolve("profile.json")), new ModelCheckpoint(d.resolve("checkpoints"), 1, 0, 3),
        new ProgressBar(DISCARD, false)));
    return m;
  }

  static List<BenchCase> cases() {
    List<BenchCase> out = new ArrayList<>();
    out.add(BenchCase.latency("trainer", STEP_CASE, "latency_us", "us/step", 1e6 / STEPS,
        () -> Setup.get().fit(plain())));
    sets().forEach((name, make) -> overhead(out, name, make));
    return out;
  }

  /** One epoch through a trainer with {@code callbacks}; returns its seconds. */
  static double fitOnce(List<Callback> callbacks) {
    return Setup.get().fit(Trainer.builder().maxEpochs(1).callbacks(callbacks).build());
  }

  private static Trainer plain() {
    return Trainer.builder().maxEpochs(1).build();
  }

  /**
   * Adds the two paired cases of one callback set: added us/step and added %. Both read one
   * measurement per repeat: the first case measures and leaves the pair for the second, which
   * measures itself only when run alone (--only).
   */
  private static void overhead(List<BenchCase> out, String workload, Function<Path, List<Callback>> make) {
    Paired p = new Paired(workload, make);
    out.add(BenchCase.probe(workload, ADDED, "added_us_per_step", "us/step", true, () -> {
      double[] m = p.measure();
      p.pending.add(m);
      return m[0];
    }));
    out.add(BenchCase.probe(workload, ADDED_PCT, "added_percent", "%", true, () -> {
      double[] m = p.pending.poll();
      return (m != null ? m : p.measure())[1];
    }));
  }

  /** Alternating fits without and with a callback set. */
  private static final class Paired {
    final String workload;
    final Function<Path, List<Callback>> make;
    final ArrayDeque<double[]> pending = new ArrayDeque<>();
    private Trainer with;
    private Trainer without;

    Paired(String workload, Function<Path, List<Callback>> make) {
      this.workload = workload;
      this.make = make;
    }

    /** One repeat: {added us/step, added %}; warms both trainers up on first use. */
    double[] measure() {
      Setup s = Setup.get();
      if (with == null) {
        without = plain();
        with = Trainer.builder().maxEpochs(1).callbacks(make.apply(dir(workload))).build();
        s.fit(without);
        s.fit(with);
      }
      double base = 0;
      double plus = 0;
      int pairs = 0;
      long t0 = System.nanoTime();
      while (pairs < 2 || (System.nanoTime() - t0) / 1e9 < PAIR_SECONDS) {
        if (pairs % 2 == 0) {
          base += s.fit(without);
          plus += s.fit(with);
        } else {
          plus += s.fit(with);
          base += s.fit(without);
        }
        pairs++;
      }
      return new double[] {(plus - base) / ((double) pairs * STEPS) * 1e6, (plus - base) / base * 100};
    }
  }

  /** A fresh folder for one callback set inside this JVM's temporary folder (deleted at exit). */
  static synchronized Path dir(String name) {
    try {
      if (tmp == null) {
        tmp = Files.createTempDirectory("ember-bench-callbacks");
        Path root = tmp;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(root)));
      }
      return Files.createDirectories(tmp.resolve(name));
    } catch (IOException e) {
      throw new UncheckedIOException("callbacks: cannot create a temporary folder for " + name, e);
    }
  }

  static void deleteTree(Path root) {
    if (!Files.exists(root)) return;
    try (Stream<Path> s = Files.walk(root)) {
      for (Path p : s.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
    } catch (IOException e) {
      System.err.println("callbacks: could not remove " + root + ": " + e.getMessage());
    }
  }
}
