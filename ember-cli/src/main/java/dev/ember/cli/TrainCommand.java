package dev.ember.cli;

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
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Checkpoint;
import dev.ember.train.History;
import dev.ember.train.Trainer;
import dev.ember.train.Trainer.Precision;
import dev.ember.amp.Autocast;
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
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code ember train}: trains a model on Fashion-MNIST with the {@link Trainer} and leaves a run
 * folder with {@code metrics.csv}, {@code checkpoints/}, {@code model.safetensors},
 * {@code confusion_matrix.json}, {@code profile.json}, {@code run.properties} (the settings, for
 * {@code --resume}, the precision among them) and {@code report.html}. The last line printed is {@code test_accuracy=0.xxxx}.
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
    /** --workers: data loader threads; -1 (not given): {@link #loaderThreads}'s choice. */
    int workers = -1;
    /** Where the model trains (--device); not saved: a run may resume on another device. */
    Device device = Device.CPU;
    /**
     * On a device other than the CPU: batches move there on a background thread through non-blocking copies
     * (Trainer.Builder.pinMemory); --no-pin-memory turns it off. Not saved: the numbers are the same either way.
     */
    boolean pinMemory = true;
    long checkpointEvery = 0;
    int maxBadSteps = 3;                               // non-finite steps skipped in a row before stopping (0: off)
    /** --precision: the forward pass and loss in fp32, or under bf16/fp16 autocast (fp16 with loss scaling). */
    Precision precision = Precision.F32;
    /** --compile: each step's forward, loss and backward as one compiled graph; not saved: the numbers are eager's. */
    boolean compile;
    /** --memory-budget in bytes (0: none); not saved: checkpointing leaves the numbers as they are. */
    long memoryBudget = 0;
    Path out;
    Path resume;
    Path data;
    boolean quiet;
    /** --overwrite: a new run may replace the run already in --out (its files only). */
    boolean overwrite;
    /** --nproc: worker processes on this machine (1: train in this process); not saved: the numbers are 1's. */
    int nproc = 1;
    /** --max-restarts: how often the launcher restarts a failed group of workers from the newest checkpoint. */
    int maxRestarts = 0;

    int epochs() {
      return epochs > 0 ? epochs : model.equals("mlp") ? 10 : 5;
    }

    /**
     * The data loader's threads: {@code --workers}, else one when a core is left beside the {@code kernelThreads}
     * that compute (0 of them when the model trains on another device), and none (batches built on the training
     * thread) when the kernels take every core. A loader thread then only takes its CPU from a kernel thread, which
     * the other waits for at the op's end, and every batch costs a hand-over between threads; building a
     * Fashion-MNIST batch (a gather of 128 rows) takes ~0.2 ms on the training thread. The batches are the same
     * bits either way.
     */
    int loaderThreads(int kernelThreads, int cores) {
      return workers >= 0 ? workers : cores > kernelThreads ? 1 : 0;
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
      p.setProperty("precision", precision.cliName());
      return p;
    }
  }

  /**
   * The settings from the command line; with {@code --resume DIR}, the run's own settings from its
   * run.properties, which options given again must agree with.
   */
  static Settings parse(String[] args) {
    Settings s = new Settings();
    Map<String, String> given = new LinkedHashMap<>(); // option -> its value as typed
    Args it = new Args("train", args);
    while (it.hasNext()) {
      String a = it.next();
      switch (a) {
        case "--quiet" -> {
          it.noValue();
          s.quiet = true;
        }
        case "--overwrite" -> {
          it.noValue();
          s.overwrite = true;
        }
        case "--compile" -> {
          it.noValue();
          s.compile = true;
        }
        case "--no-pin-memory" -> {
          it.noValue();
          s.pinMemory = false;
        }
        case "--model" -> s.model = oneOf(a, it.value(), "mlp", "lenet", "convnet");
        case "--epochs" -> s.epochs = positive(a, it.value());
        case "--batch-size" -> s.batchSize = positive(a, it.value());
        case "--optimizer" -> s.optimizer = oneOf(a, it.value(), "adam", "adamw", "sgd");
        case "--lr" -> s.lr = positiveDouble(a, it.value());
        case "--scheduler" -> s.scheduler = oneOf(a, it.value(), "none", "cosine", "step");
        case "--seed" -> s.seed = parseLong(a, it.value());
        case "--threads" -> s.threads = positive(a, it.value());
        case "--device" -> s.device = device(a, it.value());
        case "--workers" -> s.workers = nonNegative(a, it.value());
        case "--checkpoint-every" -> s.checkpointEvery = nonNegative(a, it.value());
        case "--max-bad-steps" -> s.maxBadSteps = nonNegative(a, it.value());
        case "--precision" -> s.precision = precision(a, it.value());
        case "--memory-budget" -> s.memoryBudget = dev.ember.train.summary.MemoryPlan.parseSize(a, it.value());
        case "--out" -> s.out = Path.of(it.value());
        case "--resume" -> s.resume = Path.of(it.value());
        case "--data" -> s.data = Path.of(it.value());
        case "--nproc" -> s.nproc = between(a, it.value(), 1, WorkerLauncher.MAX_NPROC);
        case "--max-restarts" -> s.maxRestarts = between(a, it.value(), 0, WorkerLauncher.MAX_RESTARTS);
        default -> throw it.unknown();
      }
      given.put(a, it.taken());
    }
    if (s.resume != null) resume(s, given);
    if (s.nproc > 1 && s.batchSize % s.nproc != 0) {
      throw new IllegalArgumentException("--batch-size " + s.batchSize + " does not divide among --nproc " + s.nproc
          + " workers (the batch size is the global one: each worker trains on batch-size / nproc)");
    }
    if (s.nproc > 1 && s.compile) {
      throw new IllegalArgumentException("--compile cannot be used with --nproc (compiled steps run backward without the"
          + " hooks that average the gradients across the workers)");
    }
    if (s.compile && s.precision != Precision.F32) {
      // said before the run starts (the Trainer refuses it too, after the start line and the data load)
      throw new IllegalArgumentException("--compile compiles float32 steps: it cannot be used with --precision "
          + s.precision.cliName());
    }
    if (s.out == null) {
      s.out = Path.of("runs", s.model + "-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }
    return s;
  }

  /** The keys of run.properties that {@code --resume} needs, in the order {@link Settings#saved()} writes them. */
  static final List<String> RUN_KEYS = List.of("model", "epochs", "batch_size", "optimizer", "lr", "scheduler", "seed");

  /**
   * Takes the settings of the run in {@code s.resume} from its run.properties. The options that fix
   * a run's numbers may be given again with the same values (numbers compare as numbers: {@code
   * --lr 1e-3} is {@code 0.001}); a different value is refused, naming both.
   */
  private static void resume(Settings s, Map<String, String> given) {
    Path dir = s.resume;
    String where = "--resume " + dir;
    if (s.out != null && !s.out.toAbsolutePath().normalize().equals(dir.toAbsolutePath().normalize())) {
      throw new IllegalArgumentException("--resume continues the run in its own folder; drop --out or make it the same folder");
    }
    if (!Files.exists(dir)) throw new IllegalArgumentException(where + ": no such folder");
    if (!Files.isDirectory(dir)) throw new IllegalArgumentException(where + ": not a folder");
    Path file = dir.resolve("run.properties");
    if (!Files.exists(file)) {
      throw new IllegalArgumentException(where + ": not a run folder (it has no run.properties); give a folder that "
          + "./ember train wrote");
    }
    Properties p = new Properties();
    try (var in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
      p.load(in);
    } catch (IOException | IllegalArgumentException e) {
      String why = e instanceof java.nio.file.AccessDeniedException ? "permission denied"
          : e instanceof java.nio.charset.CharacterCodingException ? "not UTF-8 text" : e.getMessage();
      throw new IllegalArgumentException(where + ": cannot read " + file + " (" + why + ")");
    }
    Settings run = new Settings();
    run.model = oneOf(key(file, "model"), saved(file, p, "model"), "mlp", "lenet", "convnet");
    run.epochs = positive(key(file, "epochs"), saved(file, p, "epochs"));
    run.batchSize = positive(key(file, "batch_size"), saved(file, p, "batch_size"));
    run.optimizer = oneOf(key(file, "optimizer"), saved(file, p, "optimizer"), "adam", "adamw", "sgd");
    run.lr = positiveDouble(key(file, "lr"), saved(file, p, "lr"));
    run.scheduler = oneOf(key(file, "scheduler"), saved(file, p, "scheduler"), "none", "cosine", "step");
    run.seed = parseLong(key(file, "seed"), saved(file, p, "seed"));
    String prec = p.getProperty("precision");          // absent in run folders from before --precision: fp32
    run.precision = prec == null ? Precision.F32 : precision(key(file, "precision"), prec.strip());
    String every = p.getProperty("checkpoint_every");
    run.checkpointEvery = every == null ? 0 : nonNegative(key(file, "checkpoint_every"), every.strip());

    agree(where, given, "--model", p.getProperty("model"), s.model.equals(run.model));
    agree(where, given, "--batch-size", p.getProperty("batch_size"), s.batchSize == run.batchSize);
    agree(where, given, "--optimizer", p.getProperty("optimizer"), s.optimizer.equals(run.optimizer));
    agree(where, given, "--lr", p.getProperty("lr"), s.lr == run.lr);
    agree(where, given, "--scheduler", p.getProperty("scheduler"), s.scheduler.equals(run.scheduler));
    agree(where, given, "--seed", p.getProperty("seed"), s.seed == run.seed);
    agree(where, given, "--precision", run.precision.cliName(), s.precision == run.precision);
    s.model = run.model;
    s.batchSize = run.batchSize;
    s.optimizer = run.optimizer;
    s.lr = run.lr;
    s.scheduler = run.scheduler;
    s.seed = run.seed;
    s.precision = run.precision;
    if (s.epochs < 0) s.epochs = run.epochs;
    if (!given.containsKey("--checkpoint-every")) s.checkpointEvery = run.checkpointEvery;
    s.out = dir;
  }

  /** How the validators name a run.properties value: {@code runs/x/run.properties: 'lr'}. */
  private static String key(Path file, String key) {
    return file + ": '" + key + "'";
  }

  private static String saved(Path file, Properties p, String key) {
    String v = p.getProperty(key);
    if (v == null) {
      throw new IllegalArgumentException(file + " has no '" + key + "' (a run's run.properties holds "
          + String.join(", ", RUN_KEYS) + "); restore it or start a new run");
    }
    return v.strip();
  }

  private static void agree(String where, Map<String, String> given, String option, String runValue, boolean same) {
    if (given.containsKey(option) && !same) {
      throw new IllegalArgumentException(where + ": the run was trained with " + option + " " + runValue.strip() + ", not "
          + given.get(option) + "; drop " + option + " or start a new run");
    }
  }

  static int run(String[] args, PrintStream out, PrintStream err) throws IOException {
    return run(args, out, err, FashionMnist.Sources.defaults());
  }

  /**
   * Runs {@code ember train}, looking for and downloading the data set as {@code sources} say (tests
   * point them at temporary folders). Returns the exit status: 0, or 130 when a signal stopped it.
   */
  static int run(String[] args, PrintStream out, PrintStream err, FashionMnist.Sources sources) throws IOException {
    Settings s = parse(args);
    requireAvailable(s.device); // before the folder and the data: a missing GPU is known at once
    if (s.overwrite && s.resume != null) {
      throw new IllegalArgumentException("--overwrite starts a new run in --out; it cannot be used with --resume");
    }
    String world = System.getenv("WORLD_SIZE");
    if (world != null && !world.isBlank()) return worker(s, System.getenv(), out, err, sources);
    if (s.nproc > 1) return WorkerLauncher.run(s, args, out, err);
    return run(s, out, err, sources, null);
  }

  /**
   * One worker of a group started by {@code --nproc} or by another launcher (torchrun's variables: {@code
   * MASTER_ADDR}, {@code MASTER_PORT}, {@code RANK}, {@code WORLD_SIZE}): rank 0 runs as a single process does,
   * with the run folder, the callbacks and the output; the other ranks only train (and read rank 0's checkpoint
   * when resuming). A lost or stuck peer ends the worker with one line naming the rank and exit status 1.
   */
  private static int worker(Settings s, Map<String, String> env, PrintStream out, PrintStream err,
      FashionMnist.Sources sources) throws IOException {
    dev.ember.distributed.ProcessGroup group;
    try {
      group = dev.ember.distributed.ProcessGroup.fromEnv(env);
    } catch (IllegalStateException e) {
      throw new IllegalArgumentException(e.getMessage());
    } catch (dev.ember.distributed.DistributedException e) {
      err.println("ember train: " + e.getMessage());
      return 1;
    }
    try (group) {
      int w = group.worldSize();
      if (s.nproc > 1 && s.nproc != w) {
        throw new IllegalArgumentException("--nproc " + s.nproc + " but this worker's WORLD_SIZE is " + w);
      }
      if (s.batchSize % w != 0) {
        throw new IllegalArgumentException("--batch-size " + s.batchSize + " does not divide among the " + w + " workers"
            + " (WORLD_SIZE; the batch size is the global one: each worker trains on batch-size / " + w + ")");
      }
      if (s.compile && w > 1) throw new IllegalArgumentException("--compile cannot be used with distributed training");
      return group.rank() == 0 ? run(s, out, err, sources, group) : follow(s, group, sources);
    } catch (dev.ember.distributed.DistributedException e) {
      err.println("ember train: " + e.getMessage());
      return 1;
    }
  }

  /** A single process's run, or rank 0's of a group ({@code group} non-null). */
  private static int run(Settings s, PrintStream out, PrintStream err, FashionMnist.Sources sources,
      dev.ember.distributed.ProcessGroup group) throws IOException {
    if (s.threads > 0) Device.CPU.backend().setThreads(s.threads);
    int cores = Runtime.getRuntime().availableProcessors();
    if (s.workers > cores) { // as PyTorch's DataLoader warns: more loader threads than cores only contend
      err.printf(Locale.ROOT, "ember train: warning: --workers %d is more than this machine's %s; each worker keeps 2 batches"
          + " in memory and loading gets no faster (1 or 2 is enough for Fashion-MNIST)%n", s.workers, Main.count(cores, "core"));
    }
    if (s.resume != null) {
      int done = epochsDone(s.resume);
      if (done >= 0 && s.epochs() <= done) {
        out.println("ember train: " + s.resume + " already has " + Main.count(done, "epoch") + "; nothing to do");
        return 0;
      }
    }
    if (s.data != null) {
      String problem = FashionMnist.problem(s.data);
      if (problem != null) throw new IllegalArgumentException("--data " + s.data + ": " + problem);
    }
    // the folder before the (slow) data load, so that a bad --out is known at once
    ModelCheckpoint rotation = new ModelCheckpoint(s.out.resolve(RunFolder.CHECKPOINTS), 1, s.checkpointEvery, 3);
    RunFolder folder = s.resume != null ? RunFolder.resume(s.resume) : RunFolder.create(s.out, s.overwrite);
    // the folder's lock goes before the hook ends: resources close in reverse order
    try (Interruption interruption = new Interruption(folder, s.resume == null, rotation, err, resumeCommand(s)); folder) {
      try {
        return train(s, folder, rotation, interruption, sources, out, err, group);
      } catch (Interruption.Interrupted e) {
        if (s.resume == null) folder.discardIfWorthless();
        err.println("ember train: interrupted before training " + (s.resume == null ? "started; nothing was saved"
            : "resumed; " + s.resume + " is as it was"));
        return 130;
      } catch (IOException | RuntimeException | Error e) {
        if (s.resume == null) {
          try {
            folder.discardIfWorthless(); // a failed new run leaves no empty run folder behind
          } catch (IOException cleanup) {
            e.addSuppressed(cleanup);
          }
        }
        throw e;
      }
    }
  }

  /** Loads the data, trains, and writes the run's files; see {@link #run(String[], PrintStream, PrintStream, FashionMnist.Sources)}. */
  private static int train(Settings s, RunFolder folder, ModelCheckpoint rotation, Interruption interruption,
      FashionMnist.Sources sources, PrintStream out, PrintStream err, dev.ember.distributed.ProcessGroup group)
      throws IOException {
    Path dir = folder.dir();
    Path dataDir = locateData(s.data, sources);
    interruption.check();
    FashionMnist.Split data;
    // with -Dember.warmup=true the kernels warm up while the data loads; it stops before the run seeds the generator (parts)
    try (KernelWarmup warmup = s.device.isCpu()
        ? KernelWarmup.start(s.model, s.optimizer, s.lr, s.batchSize, s.precision, s.compile) : null) {
      data = FashionMnist.load(dataDir);
    }
    interruption.check();
    java.io.StringWriter w = new java.io.StringWriter();
    s.saved().store(w, "ember train settings (read by --resume)");
    AtomicFiles.write(dir.resolve("run.properties"), w.toString()); // on --resume too: --epochs may have grown

    Parts p = parts(s, data, group);
    Module model = p.model;
    Optimizer opt = p.opt;
    int epochs = s.epochs();
    LRScheduler sched = p.sched;
    DataLoader train = p.train;
    DataLoader testLoader = new DataLoader(data.test(), new BatchConfig(1000, false, false, s.seed), 0);
    // validation counts the test figures as it goes: a completed run takes them from its last epoch's validation
    TestSetTap test = new TestSetTap(testLoader, model, FashionMnist.CLASSES.size(), data.test().size());

    Profiling profiling = new Profiling(out, dir.resolve("profile.json"));
    var builder = p.builder.callbacks(new CsvLogger(dir.resolve("metrics.csv")), profiling, rotation);
    if (!s.quiet) builder.callbacks(ProgressBar.auto(out));
    if (s.compile) builder.compile(true);
    builder.callbacks(interruption); // last: it sees whether the rotation saves the step it stops at
    if (s.resume != null) {
      // the newest checkpoint that verifies; newer corrupt ones are named with their problem on stderr
      Path latest = ModelCheckpoint.latestValid(folder.checkpoints(), problem -> err.println("ember train: " + problem))
          .orElseThrow(() -> new IllegalArgumentException("--resume " + s.resume + ": no checkpoint in " + folder.checkpoints()));
      out.println("ember train: resuming from " + latest);
      builder.resumeFrom(latest);
    }
    out.printf(Locale.ROOT, "ember train: %s on Fashion-MNIST (%s), %s lr=%s, batch %d, %s, seed %d, %s%s -> %s%n",
        s.model, dataDir, s.optimizer, s.lr, s.batchSize, Main.count(epochs, "epoch"), s.seed,
        (group == null || group.worldSize() == 1 ? "" : group.worldSize() + " processes (batch " + train.config().batchSize()
            + " each) x ") + deviceText(s.device),
        (s.precision == Precision.F32 ? "" : ", " + s.precision.cliName()) + (s.compile ? ", compiled" : ""), dir);
    History h;
    interruption.training(true);
    try {
      h = builder.build().fit(model, F::crossEntropy, opt, train, test);
    } finally {
      interruption.training(false);
    }
    folder.pruneCheckpoints(rotation.kept());
    if (interruption.stoppedTraining() && h.values("epoch_time_s").length < epochs) {
      SafeTensors.save(model.stateDict(), dir.resolve("model.safetensors")); // the weights of the checkpoint just written
      HtmlReport.write(dir, info(s, model, sched, Double.NaN, h));
      err.printf(Locale.ROOT, "ember train: interrupted at epoch %d step %d; continue with %s%n", interruption.epoch(),
          interruption.step(), resumeCommand(s));
      return 130;
    }
    finish(s, dir, model, sched, test, testLoader, h, out);
    return 0;
  }

  /** What every rank builds alike: the model (seeded), optimizer, schedule, its shard's loader and the trainer's settings. */
  private record Parts(Module model, Optimizer opt, LRScheduler sched, DataLoader train, Trainer.Builder builder) {}

  private static Parts parts(Settings s, FashionMnist.Split data, dev.ember.distributed.ProcessGroup group) {
    Generator.manualSeed(s.seed);
    Module model = model(s.model);
    Optimizer opt = optimizer(s.optimizer, model, s.lr);
    int epochs = s.epochs();
    LRScheduler sched = switch (s.scheduler) {
      case "cosine" -> new CosineAnnealingLR(opt, epochs, 0.0);
      case "step" -> new StepLR(opt, Math.max(1, epochs / 3), 0.1);
      default -> null;
    };
    int world = group == null ? 1 : group.worldSize();
    // the batch size is the global one: N workers at batch B/N train as one process at batch B
    DataLoader train = new DataLoader(data.train(), new BatchConfig(s.batchSize / world, true, false, s.seed),
        s.loaderThreads(s.device.isCpu() ? Device.CPU.backend().threads() : 0, Runtime.getRuntime().availableProcessors()));
    var builder = Trainer.builder().device(s.device).maxEpochs(epochs).metrics(new Accuracy())
        .skipNonFiniteSteps(s.maxBadSteps).precision(s.precision).pinMemory(s.pinMemory && !s.device.isCpu());
    if (group != null && world > 1) builder.distributed(group);
    if (sched != null) builder.scheduler(sched, Trainer.Interval.EPOCH);
    if (s.memoryBudget > 0) builder.memoryBudget(s.memoryBudget);
    if (group != null) killAt(group.rank(), s, builder);
    return new Parts(model, opt, sched, train, builder);
  }

  /** The optimizer of {@code --optimizer name} over the model's parameters. */
  static Optimizer optimizer(String name, Module model, double lr) {
    return switch (name) {
      case "sgd" -> new SGD(model.parameters(), Map.of("lr", lr, "momentum", 0.9));
      case "adamw" -> new AdamW(model.parameters(), Map.of("lr", lr, "weight_decay", 0.01));
      default -> new Adam(model.parameters(), lr);
    };
  }

  /** The fault-injection variable of the distributed tests: {@code RANK:STEP}, e.g. {@code 1:5}. */
  static final String FAULT_ENV = "EMBER_TEST_KILL_RANK_AT_STEP";

  /**
   * Fault injection for the tests of {@code --max-restarts}: with {@value #FAULT_ENV} set to {@code RANK:STEP}, the
   * worker of that rank sends itself SIGKILL at the end of that global step, unless it resumed (so that the restarted
   * group runs through).
   */
  private static void killAt(int rank, Settings s, Trainer.Builder builder) {
    String v = System.getenv(FAULT_ENV);
    if (v == null || s.resume != null) return;
    String[] parts = v.split(":");
    if (parts.length != 2 || Integer.parseInt(parts[0].strip()) != rank) return;
    long step = Long.parseLong(parts[1].strip());
    builder.callbacks(new dev.ember.train.Callback() {
      @Override
      public void onBatchEnd(dev.ember.train.TrainContext ctx, Batch batch, double loss) {
        if (ctx.globalStep() != step) return;
        try {
          new ProcessBuilder("kill", "-KILL", Long.toString(ProcessHandle.current().pid())).inheritIO().start().waitFor();
          Thread.sleep(60_000);
        } catch (IOException | InterruptedException e) {
          Runtime.getRuntime().halt(137);
        }
      }
    });
  }

  /**
   * A rank other than 0: trains its shard with the same settings as rank 0 and writes nothing (rank 0 writes the
   * checkpoints, logs and report, and validates); on {@code --resume} it starts from rank 0's newest checkpoint.
   */
  private static int follow(Settings s, dev.ember.distributed.ProcessGroup group, FashionMnist.Sources sources)
      throws IOException {
    if (s.threads > 0) Device.CPU.backend().setThreads(s.threads);
    if (s.resume != null) {
      int done = epochsDone(s.resume);
      if (done >= 0 && s.epochs() <= done) return 0; // rank 0 says so
    }
    Path dataDir = locateData(s.data, sources);
    FashionMnist.Split data = FashionMnist.load(dataDir);
    Parts p = parts(s, data, group);
    if (s.resume != null) {
      Path checkpoints = s.resume.resolve(RunFolder.CHECKPOINTS);
      Path latest = ModelCheckpoint.latestValid(checkpoints, problem -> { })
          .orElseThrow(() -> new IllegalArgumentException("--resume " + s.resume + ": no checkpoint in " + checkpoints));
      p.builder.resumeFrom(latest);
    }
    // a signal (Ctrl-C reaches every worker) stops rank 0 at its next step, and this rank with it: wait for that
    CountDownLatch done = new CountDownLatch(1);
    Thread hook = new Thread(() -> {
      try {
        done.await(Interruption.MAX_STOP_WAIT_MILLIS + Interruption.FINISH_WAIT_MILLIS, TimeUnit.MILLISECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "ember-train-worker-interrupt");
    Runtime.getRuntime().addShutdownHook(hook);
    try {
      p.builder.build().fit(p.model, F::crossEntropy, p.opt, p.train, null);
    } finally {
      done.countDown();
      try {
        Runtime.getRuntime().removeShutdownHook(hook);
      } catch (IllegalStateException shuttingDown) {
        // the hook runs and returns now
      }
    }
    return 0;
  }

  /**
   * The test set's accuracy and confusion matrix (those the last epoch's validation counted on the final weights,
   * else from a pass of their own), the weights, the report and the summary lines of a completed run.
   */
  private static void finish(Settings s, Path dir, Module model, LRScheduler sched, TestSetTap tap, DataLoader test,
      History h, PrintStream out) throws IOException {
    TestSetTap.Result r = tap.result();
    if (r == null) r = evaluate(s, model, test);
    writeConfusion(dir.resolve("confusion_matrix.json"), r.confusion());
    SafeTensors.save(model.stateDict(), dir.resolve("model.safetensors"));
    double acc = r.accuracy();
    HtmlReport.write(dir, info(s, model, sched, acc, h));
    double[] times = h.values("epoch_time_s");
    if (times.length > 0) {
      double[] sorted = times.clone();
      java.util.Arrays.sort(sorted);
      int m = sorted.length / 2;
      double median = sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
      out.printf(Locale.ROOT, "ember train: %s, median %.2f s of training per epoch; run folder %s (open report.html)%n",
          Main.count(times.length, "epoch"), median, dir);
    }
    out.printf(Locale.ROOT, "test_accuracy=%.4f%n", acc);
  }

  /** The test set's confusion matrix and accuracy from a pass over it in eval mode, in the precision the run trained in. */
  static TestSetTap.Result evaluate(Settings s, Module model, DataLoader test) {
    ConfusionMatrix cm = new ConfusionMatrix(10);
    Accuracy accuracy = new Accuracy();
    model.eval();
    DType low = s.precision.autocastDType();          // tested in the precision it trained in, as validation is
    try (var ignored = Grad.off(); var ac = low == null ? null : Autocast.enable(low); BatchIterator it = test.iterate(0, 0)) {
      while (it.hasNext()) {
        Batch b = it.next();
        Tensor logits = model.call(b.input().to(s.device)).cpu().to(DType.F32); // the metrics count on the host
        cm.update(logits, b.target());
        accuracy.update(logits, b.target());
      }
    } finally {
      model.train();
    }
    return new TestSetTap.Result(cm.compute(), accuracy.compute());
  }

  /** The settings shown in report.html; {@code accuracy} NaN leaves the test accuracy out (an interrupted run). */
  private static Map<String, String> info(Settings s, Module model, LRScheduler sched, double accuracy, History h) {
    LinkedHashMap<String, String> info = new LinkedHashMap<>();
    info.put("model", s.model + " (" + model.numParameters(false) + " parameters)");
    info.put("optimizer", s.optimizer + " lr=" + s.lr + (sched == null ? "" : ", " + s.scheduler + " schedule"));
    info.put("batch size", Integer.toString(s.batchSize));
    info.put("epochs", Integer.toString(s.epochs()));
    info.put("seed", Long.toString(s.seed));
    info.put("device", s.device.isCpu() ? s.device.toString()
        : s.device + " (" + s.device.backend().description() + ")");
    info.put("threads", Integer.toString(Device.CPU.backend().threads()));
    info.put("precision", precisionText(s.precision, h));
    if (!Double.isNaN(accuracy)) info.put("test accuracy", String.format(Locale.ROOT, "%.4f", accuracy));
    return info;
  }

  /**
   * How the report names the precision: {@code fp32}, {@code bf16 (autocast, no loss scaling)}, or {@code fp16
   * (autocast, loss scaling: final scale 32768, 3 skipped steps)}.
   */
  static String precisionText(Precision p, History h) {
    if (p == Precision.F32) return p.cliName();
    if (!p.scalesLoss()) return p.cliName() + " (autocast, no loss scaling)";
    double[] scales = h.values("loss_scale");
    long skipped = 0;
    for (double d : h.values("skipped_steps")) skipped += (long) d;
    return p.cliName() + " (autocast, loss scaling: " + (scales.length == 0 ? "" : "final scale "
        + plain(scales[scales.length - 1]) + ", ") + Main.count(skipped, "skipped step") + ")";
  }

  /** {@code --precision}'s value: fp32, bf16 or fp16. */
  private static Precision precision(String opt, String v) {
    return Precision.parse(oneOf(opt, v, "fp32", "bf16", "fp16"));
  }

  /** {@code --device}'s value: cpu, cuda, cuda:N (or another provider's type). */
  private static Device device(String opt, String v) {
    try {
      return Device.parse(v);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(opt + " must be cpu, cuda or cuda:N, got '" + v + "'");
    }
  }

  /**
   * Fails unless {@code d} can be trained on, saying what to do: no provider for its type (ember-cuda is not on the
   * class path), or no such device (no GPU found, or fewer than asked for).
   */
  static void requireAvailable(Device d) {
    if (d.isAvailable()) return;
    String type = d.type();
    if (!Device.types().contains(type)) {
      throw new IllegalArgumentException("device " + d + " requested but no backend serves device type '" + type + "'"
          + (type.equals("cuda") ? "; add ember-cuda (dev.ember:ember-cuda) to the class path" : "")
          + " (device types here: " + String.join(", ", Device.types()) + ")");
    }
    int n = Device.count(type);
    if (n == 0) {
      // the provider says why: no driver library (and where it looked), or a driver that sees no device
      String why;
      try {
        d.backend();
        why = "its backend gave no reason";
      } catch (RuntimeException e) {
        why = e.getMessage();
      }
      throw new IllegalArgumentException("device " + d + " requested but no " + type + " device was found: " + why);
    }
    throw new IllegalArgumentException("device " + d + " requested but only " + Main.count(n, type + " device")
        + " found (" + type + ":0.." + type + ":" + (n - 1) + ")");
  }

  /** How the start line names where training runs: {@code 8 threads} on the CPU, {@code cuda:0} elsewhere. */
  private static String deviceText(Device d) {
    return d.isCpu() ? Main.count(Device.CPU.backend().threads(), "thread") : d.toString();
  }

  /** The folder holding the data: {@code --data} as given, else found or downloaded; a failed download in one line. */
  private static Path locateData(Path dataOption, FashionMnist.Sources sources) throws IOException {
    try {
      return FashionMnist.locate(dataOption, sources);
    } catch (FashionMnist.DownloadFailedException e) {
      throw new IOException("could not download Fashion-MNIST from " + e.host() + ": " + e.reason()
          + "; install dataset-fashion-mnist or pass --data DIR", e);
    }
  }

  /** The command that continues this run. */
  private static String resumeCommand(Settings s) {
    return "./ember train --resume " + s.out + (s.nproc > 1 ? " --nproc " + s.nproc : "") + (s.data == null ? "" : " --data " + s.data);
  }

  /**
   * The epochs completed in the newest checkpoint of the run in {@code dir}, or -1 when there is none
   * or it cannot be read (resuming then says why).
   */
  static int epochsDone(Path dir) {
    try {
      Optional<Path> latest = ModelCheckpoint.latest(dir.resolve(RunFolder.CHECKPOINTS));
      if (latest.isEmpty()) return -1;
      if (Checkpoint.read(latest.get()).get("trainer") instanceof Map<?, ?> t && t.get("epoch_index") instanceof Number n) {
        return n.intValue();
      }
    } catch (IOException | RuntimeException e) {
      // an unreadable checkpoint is the resume's to report, with its reason
    }
    return -1;
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

  /** {@code v} without a fraction when it is integral (a loss scale is a power of two). */
  private static String plain(double v) {
    return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
  }

  private static String oneOf(String opt, String v, String... allowed) {
    for (String a : allowed) if (a.equals(v)) return v;
    throw new IllegalArgumentException(opt + " must be one of " + String.join(", ", allowed) + ", got '" + v + "'");
  }

  static int positive(String opt, String v) {
    long n = parseLong(opt, v);
    if (n < 1 || n > Integer.MAX_VALUE) throw new IllegalArgumentException(opt + " must be a positive integer, got " + v);
    return (int) n;
  }

  /** An integer option in {@code [min, max]}, else one line naming the range. */
  static int between(String opt, String v, int min, int max) {
    long n;
    try {
      n = Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(opt + " must be an integer in " + min + ".." + max + ", got '" + v + "'");
    }
    if (n < min || n > max) throw new IllegalArgumentException(opt + " must be in " + min + ".." + max + ", got " + v);
    return (int) n;
  }

  private static int nonNegative(String opt, String v) {
    long n = parseLong(opt, v);
    if (n < 0 || n > Integer.MAX_VALUE) throw new IllegalArgumentException(opt + " must be >= 0, got " + v);
    return (int) n;
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
