package dev.ember.cli;

import dev.ember.backend.cpu.Parallel;
import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchConfig;
import dev.ember.data.BatchIterator;
import dev.ember.data.DataLoader;
import dev.ember.data.FashionMnist;
import dev.ember.metrics.Accuracy;
import dev.ember.metrics.ConfusionMatrix;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.functional.F;
import dev.ember.nn.io.AtomicFiles;
import dev.ember.nn.io.SafeTensors;
import dev.ember.optim.Adam;
import dev.ember.optim.AdamW;
import dev.ember.optim.Optimizer;
import dev.ember.optim.SGD;
import dev.ember.optim.schedule.CosineAnnealingLR;
import dev.ember.optim.schedule.LRScheduler;
import dev.ember.optim.schedule.StepLR;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.History;
import dev.ember.train.Trainer;
import dev.ember.train.callbacks.CsvLogger;
import dev.ember.train.callbacks.ModelCheckpoint;
import dev.ember.train.callbacks.Profiling;
import dev.ember.train.callbacks.ProgressBar;
import dev.ember.train.report.HtmlReport;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * {@code ember train}: trains a model on Fashion-MNIST with the {@link Trainer} and leaves a run
 * folder with {@code metrics.csv}, {@code checkpoints/}, {@code model.safetensors},
 * {@code confusion_matrix.json}, {@code profile.json}, {@code run.properties} (the settings, for
 * {@code --resume}) and {@code report.html}. The last line printed is {@code test_accuracy=0.xxxx}.
 */
final class TrainCommand {
  private TrainCommand() {}

  /** The settings of a run; everything that decides its numbers is saved in run.properties. */
  static final class Settings {
    String model = "lenet";
    int epochs = -1;
    int batchSize = 128;
    String optimizer = "adam";
    double lr = 1e-3;
    String scheduler = "none";
    long seed = 0;
    int threads = 0;
    int workers = 1;
    long checkpointEvery = 0;
    int maxBadSteps = 3;                               // non-finite steps skipped in a row before stopping (0: off)
    Path out;
    Path resume;
    Path data;
    boolean quiet;

    int epochs() {
      return epochs > 0 ? epochs : model.equals("mlp") ? 10 : 5;
    }

    /** The settings that fix a run's numbers (threads and workers do not change results). */
    Properties saved() {
      Properties p = new Properties();
      p.setProperty("model", model);
      p.setProperty("epochs", Integer.toString(epochs()));
      p.setProperty("batch_size", Integer.toString(batchSize));
      p.setProperty("optimizer", optimizer);
      p.setProperty("lr", Double.toString(lr));
      p.setProperty("scheduler", scheduler);
      p.setProperty("seed", Long.toString(seed));
      p.setProperty("checkpoint_every", Long.toString(checkpointEvery));
      return p;
    }
  }

  static Settings parse(String[] args) {
    Settings s = new Settings();
    java.util.Set<String> given = new java.util.HashSet<>();
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (a.equals("--quiet")) {
        s.quiet = true;
        continue;
      }
      if (i + 1 >= args.length) throw new IllegalArgumentException("option " + a + " needs a value (see ./ember help)");
      String v = args[++i];
      given.add(a);
      switch (a) {
        case "--model" -> s.model = oneOf(a, v, "mlp", "lenet", "convnet");
        case "--epochs" -> s.epochs = positive(a, v);
        case "--batch-size" -> s.batchSize = positive(a, v);
        case "--optimizer" -> s.optimizer = oneOf(a, v, "adam", "adamw", "sgd");
        case "--lr" -> s.lr = positiveDouble(a, v);
        case "--scheduler" -> s.scheduler = oneOf(a, v, "none", "cosine", "step");
        case "--seed" -> s.seed = parseLong(a, v);
        case "--threads" -> s.threads = positive(a, v);
        case "--workers" -> s.workers = nonNegative(a, v);
        case "--checkpoint-every" -> s.checkpointEvery = nonNegative(a, v);
        case "--max-bad-steps" -> s.maxBadSteps = nonNegative(a, v);
        case "--out" -> s.out = Path.of(v);
        case "--resume" -> s.resume = Path.of(v);
        case "--data" -> s.data = Path.of(v);
        default -> throw new IllegalArgumentException("unknown option " + a + " (see ./ember help)");
      }
    }
    if (s.resume != null) {
      if (s.out != null && !s.out.equals(s.resume)) {
        throw new IllegalArgumentException("--resume continues the run in its own folder; drop --out or make it the same folder");
      }
      Properties p = new Properties();
      Path props = s.resume.resolve("run.properties");
      try (var in = Files.newBufferedReader(props, StandardCharsets.UTF_8)) {
        p.load(in);
      } catch (IOException e) {
        throw new IllegalArgumentException("--resume " + s.resume + ": cannot read " + props + " (" + e.getMessage()
            + "); is it the folder of an earlier ./ember train run?");
      }
      for (String fixed : List.of("--model", "--batch-size", "--optimizer", "--lr", "--scheduler", "--seed")) {
        if (given.contains(fixed)) {
          throw new IllegalArgumentException("--resume takes " + fixed.substring(2) + " from the run being resumed; drop " + fixed);
        }
      }
      s.model = p.getProperty("model");
      s.batchSize = Integer.parseInt(p.getProperty("batch_size"));
      s.optimizer = p.getProperty("optimizer");
      s.lr = Double.parseDouble(p.getProperty("lr"));
      s.scheduler = p.getProperty("scheduler");
      s.seed = Long.parseLong(p.getProperty("seed"));
      if (s.epochs < 0) s.epochs = Integer.parseInt(p.getProperty("epochs"));
      if (!given.contains("--checkpoint-every")) s.checkpointEvery = Long.parseLong(p.getProperty("checkpoint_every"));
      s.out = s.resume;
    }
    if (s.out == null) {
      s.out = Path.of("runs", s.model + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
    return s;
  }

  static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
    Settings s = parse(args);
    if (s.threads > 0) Parallel.setThreads(s.threads);
    Path dir = s.out;
    Files.createDirectories(dir);
    Path dataDir = FashionMnist.locate(s.data);
    FashionMnist.Split data = FashionMnist.load(dataDir);
    if (s.resume == null) {
      java.io.StringWriter w = new java.io.StringWriter();
      s.saved().store(w, "ember train settings (read by --resume)");
      AtomicFiles.write(dir.resolve("run.properties"), w.toString());
    }

    Generator.manualSeed(s.seed);
    Module model = model(s.model);
    Optimizer opt = switch (s.optimizer) {
      case "sgd" -> new SGD(model.parameters(), Map.of("lr", s.lr, "momentum", 0.9));
      case "adamw" -> new AdamW(model.parameters(), Map.of("lr", s.lr, "weight_decay", 0.01));
      default -> new Adam(model.parameters(), s.lr);
    };
    int epochs = s.epochs();
    LRScheduler sched = switch (s.scheduler) {
      case "cosine" -> new CosineAnnealingLR(opt, epochs, 0.0);
      case "step" -> new StepLR(opt, Math.max(1, epochs / 3), 0.1);
      default -> null;
    };
    DataLoader train = new DataLoader(data.train(), new BatchConfig(s.batchSize, true, false, s.seed), s.workers);
    DataLoader test = new DataLoader(data.test(), new BatchConfig(1000, false, false, s.seed), 0);

    Path checkpoints = dir.resolve("checkpoints");
    Profiling profiling = new Profiling(dir.resolve("profile.json"));
    var builder = Trainer.builder().maxEpochs(epochs).metrics(new Accuracy()).skipNonFiniteSteps(s.maxBadSteps)
        .callbacks(new CsvLogger(dir.resolve("metrics.csv")), profiling,
            new ModelCheckpoint(checkpoints, 1, s.checkpointEvery, 3));
    if (!s.quiet) builder.callbacks(ProgressBar.auto());
    if (sched != null) builder.scheduler(sched, Trainer.Interval.EPOCH);
    if (s.resume != null) {
      // the newest checkpoint that verifies; newer corrupt ones are named with their problem on stderr
      Path latest = ModelCheckpoint.latestValid(checkpoints, w -> err.println("ember train: " + w))
          .orElseThrow(() -> new IllegalArgumentException("--resume " + s.resume + ": no checkpoint in " + checkpoints));
      out.println("ember train: resuming from " + latest);
      builder.resumeFrom(latest);
    }
    out.printf(Locale.ROOT, "ember train: %s on Fashion-MNIST (%s), %s lr=%s, batch %d, %d epochs, seed %d, %d threads -> %s%n",
        s.model, dataDir, s.optimizer, s.lr, s.batchSize, epochs, s.seed, Parallel.threads(), dir);
    History h = builder.build().fit(model, F::crossEntropy, opt, train, test);

    // one pass over the test set gives the final accuracy and the confusion matrix
    ConfusionMatrix cm = new ConfusionMatrix(10);
    Accuracy accuracy = new Accuracy();
    model.eval();
    try (var ignored = Grad.off(); BatchIterator it = test.iterate(0, 0)) {
      while (it.hasNext()) {
        Batch b = it.next();
        Tensor logits = model.call(b.input());
        cm.update(logits, b.target());
        accuracy.update(logits, b.target());
      }
    } finally {
      model.train();
    }
    writeConfusion(dir.resolve("confusion_matrix.json"), cm.compute());
    SafeTensors.save(model.stateDict(), dir.resolve("model.safetensors"));
    double acc = accuracy.compute();
    LinkedHashMap<String, String> info = new LinkedHashMap<>();
    info.put("model", s.model + " (" + model.numParameters(false) + " parameters)");
    info.put("optimizer", s.optimizer + " lr=" + s.lr + (sched == null ? "" : ", " + s.scheduler + " schedule"));
    info.put("batch size", Integer.toString(s.batchSize));
    info.put("epochs", Integer.toString(epochs));
    info.put("seed", Long.toString(s.seed));
    info.put("threads", Integer.toString(Parallel.threads()));
    info.put("test accuracy", String.format(Locale.ROOT, "%.4f", acc));
    HtmlReport.write(dir, info);
    double[] times = h.values("epoch_time_s");
    if (times.length > 0) {
      double[] sorted = times.clone();
      java.util.Arrays.sort(sorted);
      int m = sorted.length / 2;
      double median = sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
      out.printf(Locale.ROOT, "ember train: %d epochs, median %.2f s of training per epoch; run folder %s (open report.html)%n",
          times.length, median, dir);
    }
    out.printf(Locale.ROOT, "test_accuracy=%.4f%n", acc);
    return 0;
  }

  /** The CLI's models, for 1x28x28 inputs and 10 classes. */
  static Module model(String name) {
    return switch (name) {
      case "mlp" -> Models.mlp(784, 256, 128, 10);
      case "lenet" -> Models.lenet5(10);
      case "convnet" -> Models.convnet(1, 28, 10);
      default -> throw new IllegalArgumentException("--model must be one of mlp, lenet, convnet, got '" + name + "'");
    };
  }

  private static void writeConfusion(Path file, long[][] m) throws IOException {
    StringBuilder sb = new StringBuilder("{\"labels\":[");
    for (int i = 0; i < FashionMnist.CLASSES.size(); i++) {
      sb.append(i == 0 ? "" : ",").append('"').append(FashionMnist.CLASSES.get(i)).append('"');
    }
    sb.append("],\"matrix\":[");
    for (int i = 0; i < m.length; i++) {
      sb.append(i == 0 ? "[" : ",[");
      for (int j = 0; j < m[i].length; j++) sb.append(j == 0 ? "" : ",").append(m[i][j]);
      sb.append(']');
    }
    sb.append("]}\n");
    AtomicFiles.write(file, sb.toString());
  }

  private static String oneOf(String opt, String v, String... allowed) {
    for (String a : allowed) if (a.equals(v)) return v;
    throw new IllegalArgumentException(opt + " must be one of " + String.join(", ", allowed) + ", got '" + v + "'");
  }

  private static int positive(String opt, String v) {
    int n = (int) parseLong(opt, v);
    if (n < 1) throw new IllegalArgumentException(opt + " must be a positive integer, got " + v);
    return n;
  }

  private static int nonNegative(String opt, String v) {
    int n = (int) parseLong(opt, v);
    if (n < 0) throw new IllegalArgumentException(opt + " must be >= 0, got " + v);
    return n;
  }

  private static long parseLong(String opt, String v) {
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(opt + " must be an integer, got '" + v + "'");
    }
  }

  private static double positiveDouble(String opt, String v) {
    try {
      double d = Double.parseDouble(v);
      if (!(d > 0) || Double.isInfinite(d)) throw new NumberFormatException();
      return d;
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(opt + " must be a positive number, got '" + v + "'");
    }
  }
}
