package dev.ember.train;

import dev.ember.amp.Autocast;
import dev.ember.autograd.Grad;
import dev.ember.data.Batch;
import dev.ember.data.BatchIterator;
import dev.ember.data.BatchSource;
import dev.ember.data.PinnedBatches;
import dev.ember.metrics.Metric;
import dev.ember.nn.Module;
import dev.ember.optim.GradClip;
import dev.ember.optim.GradScaler;
import dev.ember.optim.Optimizer;
import dev.ember.optim.schedule.LRScheduler;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.BiFunction;

/**
 * Fits a model: epochs over a training {@link BatchSource}, forward, loss, backward, optional
 * gradient accumulation and clipping, the optimizer step and the schedule step, validation in eval
 * mode without the tape, and {@link Callback}s around every phase. Everything logged lands in
 * the returned {@link History}: per epoch {@code loss} (mean over the epoch's samples), each
 * metric, {@code lr}, {@code epoch_time_s} (the epoch's training time, validation excluded) and,
 * after each validation, {@code val_loss} and {@code val_<metric>}.
 * <pre>{@code
 * Trainer trainer = Trainer.builder()
 *     .maxEpochs(10)
 *     .scheduler(new CosineAnnealingLR(opt, 10, 0), Trainer.Interval.EPOCH)
 *     .metrics(new Accuracy(10))
 *     .callbacks(new EarlyStopping("val_loss", "min", 3), ProgressBar.auto())
 *     .build();
 * History h = trainer.fit(model, F::crossEntropy, opt, trainLoader, testLoader);
 * }</pre>
 *
 * <p>Checkpoints ({@link TrainContext#requestCheckpoint}, used by
 * {@code ModelCheckpoint}) hold the model, optimizer, schedule, every random generator's state,
 * the loader's position in the epoch, the history, the running loss and each callback's state;
 * {@link Builder#resumeFrom(Path)} continues from one so that the parameters and losses are
 * bitwise those of the uninterrupted run, and the same logged values (the training metrics' partial
 * state of the epoch travels in the checkpoint too).
 *
 * <p>NaN and infinity: by default a non-finite loss or gradient is stepped on like any other, as in
 * PyTorch, and turns every parameter into NaN. {@code .skipNonFiniteSteps(3)} skips such steps
 * before they reach the weights or a checkpoint, counts them ({@code skipped_steps}), and stops
 * with a {@link NonFiniteStepException} after 3 in a row; see {@link Builder#skipNonFiniteSteps}.
 * A callback may also stop training before a bad step lands ({@link TrainContext#requestStop}
 * before the optimizer step cancels it), as {@code TerminateOnNaN} does.
 *
 * <p>Precision: {@link Builder#precision(Precision)} runs the forward pass and the loss (training and validation)
 * under {@link Autocast} to BF16 or F16; backward and the optimizer run outside it, on float32 parameters. F16
 * scales the loss with a {@link GradScaler}: the gradients are unscaled before clipping, a step whose gradients
 * overflow is skipped (counted in {@code skipped_steps}, but not a non-finite failure: only a non-finite loss
 * is, with {@code skipNonFiniteSteps}) and the scale is logged as {@code loss_scale}; checkpoints carry the
 * scaler's state, so a resumed run stays bitwise that of the uninterrupted one.
 *
 * <p>Devices: {@link Builder#device(Device)} moves the model there when {@link #fit} starts (in place, so an
 * optimizer built on its parameters before keeps them, and its state follows) and every batch, training and
 * validation, as it arrives; without it batches go to the model's own device ({@link Module#device()}). The loss is
 * read back with {@code item()} and metrics are given host copies of the output and target, so they run on the CPU
 * whatever the device; checkpoints hold device tensors copied to the host. With {@link Builder#pinMemory(boolean)}
 * the batches are moved on a background thread ahead of the step that uses them ({@link PinnedBatches}).
 *
 * <p>Data-parallel training: {@link Builder#distributed(DataParallel)} trains across processes (ember-distributed's
 * {@code ProcessGroup}); every rank runs the same trainer on its shard of each epoch, and N ranks with a loader of
 * batch B train as one process with batch N*B (see the builder method).
 */
public final class Trainer {
  /** When the schedule steps: after every optimizer step, or after every epoch. */
  public enum Interval { BATCH, EPOCH }

  /**
   * The arithmetic a {@link Trainer} runs the forward pass and the loss in ({@link Builder#precision}), as
   * PyTorch's mixed-precision recipes: the parameters, their gradients and the optimizer state stay float32 (master
   * weights) in every mode.
   * <ul>
   *   <li>{@link #F32}: everything in float32.
   *   <li>{@link #BF16}: the forward pass and the loss under {@code Autocast.enable(DType.BF16)}, no loss scaling
   *       (bfloat16 has float32's exponent range).
   *   <li>{@link #F16}: under {@code Autocast.enable(DType.F16)}, with a {@link dev.ember.optim.GradScaler}: the loss
   *       is scaled before backward so small gradients survive float16, and steps whose gradients overflow are
   *       skipped while the scale backs off.
   * </ul>
   */
  public enum Precision {
    /** Float32 throughout. */
    F32(null, "fp32"),
    /** BFloat16 autocast, no loss scaling. */
    BF16(DType.BF16, "bf16"),
    /** Float16 autocast with dynamic loss scaling. */
    F16(DType.F16, "fp16");

    private final DType autocast;
    private final String cliName;

    Precision(DType autocast, String cliName) {
      this.autocast = autocast;
      this.cliName = cliName;
    }

    /** The dtype the forward pass autocasts to, or null for {@link #F32}. */
    public DType autocastDType() {
      return autocast;
    }

    /** Whether training in this precision scales the loss ({@link #F16} only, as PyTorch's recipe). */
    public boolean scalesLoss() {
      return this == F16;
    }

    /** The name {@code ./ember train --precision} takes and run folders record: fp32, bf16 or fp16. */
    public String cliName() {
      return cliName;
    }

    /**
     * The precision named {@code name}: fp32, bf16 or fp16 (case-insensitive; f32/float32, bfloat16, f16/float16/half
     * too).
     *
     * @throws IllegalArgumentException naming the choices when {@code name} is none of them
     */
    public static Precision parse(String name) {
      String n = name == null ? "" : name.strip().toLowerCase(Locale.ROOT);
      return switch (n) {
        case "fp32", "f32", "float32" -> F32;
        case "bf16", "bfloat16" -> BF16;
        case "fp16", "f16", "float16", "half" -> F16;
        default -> throw new IllegalArgumentException("precision must be one of fp32, bf16, fp16, got '" + name + "'");
      };
    }
  }

  private final int maxEpochs;
  private final long maxSteps;
  private final LRScheduler scheduler;
  private final Interval scheduleInterval;
  private final int accumulation;
  private final double clipNorm;
  private final double clipValue;
  private final int validateEveryEpochs;
  private final long validateEverySteps;
  private final List<Metric<Double>> metrics;
  private final List<Callback> callbacks;
  private final List<Generator> generators;
  private final Path resumeFrom;
  private final int maxBadSteps;
  private final Device device;
  private final Precision precision;
  private final GradScaler gradScaler;
  private final long memoryBudget;
  private final boolean compile;
  private final DataParallel distributed;
  private final boolean pinMemory;

  private Trainer(Builder b) {
    this.maxEpochs = b.maxEpochs;
    this.maxSteps = b.maxSteps;
    this.scheduler = b.scheduler;
    this.scheduleInterval = b.scheduleInterval;
    this.accumulation = b.accumulation;
    this.clipNorm = b.clipNorm;
    this.clipValue = b.clipValue;
    this.validateEveryEpochs = b.validateEveryEpochs;
    this.validateEverySteps = b.validateEverySteps;
    this.metrics = List.copyOf(b.metrics);
    this.callbacks = List.copyOf(b.callbacks);
    this.generators = List.copyOf(b.generators);
    this.resumeFrom = b.resumeFrom;
    this.maxBadSteps = b.maxBadSteps;
    this.device = b.device;
    this.precision = b.precision;
    this.gradScaler = b.gradScaler;
    this.memoryBudget = b.memoryBudget;
    this.compile = b.compile;
    this.distributed = b.distributed;
    this.pinMemory = b.pinMemory;
    if (compile && distributed != null) {
      throw new IllegalArgumentException("Trainer: compile(true) runs backward as a compiled graph, without the autograd"
          + " hooks that average the gradients of distributed(...) training; use one or the other");
    }
    if (compile && (precision != Precision.F32 || gradScaler != null || accumulation != 1 || memoryBudget > 0)) {
      throw new IllegalArgumentException("Trainer: compile(true) compiles float32 steps of one batch: it cannot be"
          + " combined with precision " + precision.cliName() + (gradScaler != null ? ", a grad scaler" : "")
          + (accumulation != 1 ? ", accumulate(" + accumulation + ")" : "")
          + (memoryBudget > 0 ? ", a memory budget" : ""));
    }
    Set<String> keys = new HashSet<>();
    for (Callback c : callbacks) {
      if (!keys.add(c.stateKey())) {
        throw new IllegalArgumentException("Trainer: two callbacks share the state key '" + c.stateKey()
            + "'; give one of them another stateKey()");
      }
    }
  }

  public static Builder builder() {
    return new Builder();
  }

  /** The callbacks, in call order. */
  public List<Callback> callbacks() {
    return callbacks;
  }

  /** The precision of the forward pass and the loss ({@link Precision#F32} unless set). */
  public Precision precision() {
    return precision;
  }

  /** Whether training steps run compiled ({@link Builder#compile}). */
  public boolean compiled() {
    return compile;
  }

  /**
   * Whether {@code optimizer} updates every parameter of {@code model} that requires grad: a fused step stores no
   * gradient, so one it does not update would not keep the gradients eager steps leave on it.
   */
  private static boolean updatesEveryTrainable(Module model, Optimizer optimizer) {
    java.util.IdentityHashMap<Tensor, Boolean> updated = new java.util.IdentityHashMap<>();
    for (dev.ember.optim.ParamGroup g : optimizer.paramGroups()) for (Tensor p : g.params()) updated.put(p, Boolean.TRUE);
    for (Tensor p : model.parameters()) if (p.requiresGrad() && !updated.containsKey(p)) return false;
    return true;
  }

  /**
   * What keeps this trainer's compiled steps from taking the optimizer's update into the compiled step
   * ({@code TrainingStep.step(x, y, optimizer)}: the gradients handed straight to the optimizer, never stored in
   * {@code grad()}), each named: a gradient clipping ({@code clipGradNorm}, {@code clipGradValue}), a callback that
   * overrides {@code onAfterBackward} or {@code onBeforeOptimizerStep} (it may read or change the gradients before
   * the update), or {@code compile(false)}; and, found at {@link #fit}, a parameter that requires grad but that the
   * optimizer does not update (eager steps leave its gradients accumulating). Empty: every compiled step whose batch
   * no callback stopped first fuses
   * its update (with {@link Builder#skipNonFiniteSteps} the update lands only when the loss and every gradient
   * are finite, as an eager step is skipped). Otherwise the compiled step writes the gradients and the trainer
   * steps the optimizer after them, as eager steps do. Either way the weights have eager's bits.
   */
  public List<String> unfusedBecause() {
    List<String> why = new ArrayList<>();
    if (!compile) why.add("compile(false)");
    if (clipNorm > 0) why.add("clipGradNorm");
    if (clipValue > 0) why.add("clipGradValue");
    for (Callback c : callbacks) {
      for (String hook : new String[] {"onAfterBackward", "onBeforeOptimizerStep"}) {
        try {
          if (c.getClass().getMethod(hook, TrainContext.class).getDeclaringClass() != Callback.class) {
            why.add("callback " + c.getClass().getName() + "." + hook);
          }
        } catch (NoSuchMethodException e) {
          throw new IllegalStateException("Callback." + hook + " not found", e);
        }
      }
    }
    return why;
  }

  /** The ranks this trainer trains across ({@link Builder#distributed}), or null for one process. */
  public DataParallel distributed() {
    return distributed;
  }

  /** The device the model and batches are moved to, or null to use the model's own. */
  public Device device() {
    return device;
  }

  /**
   * Trains {@code model} on {@code train}, validating on {@code val} (may be null) and returns
   * the history. {@code lossFn} maps (model output, batch target) to a scalar loss.
   */
  public History fit(Module model, BiFunction<Tensor, Tensor, Tensor> lossFn, Optimizer optimizer, BatchSource train,
      BatchSource val) {
    if (model == null || lossFn == null || optimizer == null || train == null) {
      throw new IllegalArgumentException("Trainer.fit: model, lossFn, optimizer and train loader must not be null");
    }
    if (scheduler != null && scheduler.optimizer() != optimizer) {
      throw new IllegalArgumentException("Trainer.fit: the scheduler drives another optimizer than the one given");
    }
    if (device != null) {
      if (!device.isAvailable()) {
        throw new IllegalStateException("Trainer.fit: device " + device + " is not available (" + Device.count(device.type())
            + " " + device.type() + " device(s) found)");
      }
      model.to(device); // in place: the optimizer's parameters are these tensors
    }
    BatchSource source = distributed == null ? train : shard(train);
    Device on = model.device();
    if (!pinMemory || on.isCpu()) return new Run(model, lossFn, optimizer, source, val).fit();
    try (PinnedBatches pinnedTrain = new PinnedBatches(source, on);
        PinnedBatches pinnedVal = val == null ? null : new PinnedBatches(val, on)) {
      return new Run(model, lossFn, optimizer, pinnedTrain, pinnedVal).fit();
    }
  }

  /** Whether batches move to a device on a background thread ({@link Builder#pinMemory(boolean)}). */
  public boolean pinMemory() {
    return pinMemory;
  }

  /** This rank's shard of each epoch of {@code train}, which must be a DataLoader (its order is sharded). */
  private BatchSource shard(BatchSource train) {
    if (!(train instanceof dev.ember.data.DataLoader loader)) {
      throw new IllegalArgumentException("Trainer.fit: distributed training shards a DataLoader's epochs across the ranks;"
          + " got a " + train.getClass().getSimpleName() + " (" + train + ")");
    }
    int world = distributed.worldSize();
    int perRank = (int) ((loader.dataset().size() + (long) world - 1) / world); // DistributedSampler's, without drop_last
    return loader.reordered(perRank, epoch -> distributed.shard(loader.order(epoch)));
  }

  /**
   * Evaluates {@code model} on {@code source} in eval mode without the tape: the mean loss (as
   * {@code loss}, weighted by batch size) and each metric's value, by name. Batches go to the model's device;
   * metrics see host copies.
   */
  public static Map<String, Double> evaluate(Module model, BiFunction<Tensor, Tensor, Tensor> lossFn, BatchSource source,
      List<? extends Metric<Double>> metrics) {
    boolean wasTraining = model.isTraining();
    List<Metric<Double>> fresh = new ArrayList<>();
    for (Metric<Double> m : metrics) fresh.add(m.emptyCopy());
    double lossSum = 0;
    long count = 0;
    model.eval();
    Device device = model.device();
    try (var ignored = Grad.off(); BatchIterator it = source.iterate(0, 0)) {
      while (it.hasNext()) {
        Batch b = it.next();
        try (MemoryScope batchScope = MemoryScope.open()) { // outputs and temporaries go back to the pool per batch
          b = onDevice(b, device);
          Tensor out = model.call(b.input());
          if (lossFn != null) lossSum += lossFn.apply(out, b.target()).item() * b.size();
          count += b.size();
          if (!fresh.isEmpty()) {
            Tensor hostOut = hostF32(out);
            Tensor hostTarget = b.target().cpu();
            for (Metric<Double> m : fresh) m.update(hostOut, hostTarget);
          }
        }
      }
    } finally {
      model.train(wasTraining);
    }
    LinkedHashMap<String, Double> out = new LinkedHashMap<>();
    if (lossFn != null) out.put("loss", count == 0 ? Double.NaN : lossSum / count);
    for (Metric<Double> m : fresh) out.put(m.name(), m.compute());
    return out;
  }

  /** {@code t} on the host, a BF16/F16 output (of a forward pass under autocast) as float32, for the metrics. */
  private static Tensor hostF32(Tensor t) {
    Tensor h = t.cpu();
    return h.dtype().isHalf() ? h.to(DType.F32) : h;
  }

  /** {@code b} with its input and target on {@code device} (itself when they are there). */
  private static Batch onDevice(Batch b, Device device) {
    if (b.input().device() == device && b.target().device() == device) return b;
    return new Batch(b.input().to(device), b.target().to(device));
  }

  /** One call of {@link #fit}: its mutable state. */
  private final class Run {
    final Module model;
    final BiFunction<Tensor, Tensor, Tensor> lossFn;
    final Optimizer optimizer;
    final BatchSource train;
    final BatchSource val;
    final History history = new History();
    final TrainContext ctx;
    final List<Metric<Double>> trainMetrics = new ArrayList<>();
    int epochIndex;
    int nextBatch;
    boolean epochStarted;
    double lossSum;
    long lossCount;
    int pending;
    long epochNanos;
    final Map<String, Tensor> named;
    /** Steps skipped in a row, and in the current epoch ({@link Builder#skipNonFiniteSteps}). */
    int consecutiveSkips;
    int epochSkips;
    /** Whether a batch of the step in progress had a non-finite loss, and the first such loss. */
    boolean stepLossBad;
    double stepBadLoss;
    /** The newest checkpoint written by this run, or the one it resumed from. */
    Path lastCheckpoint;
    /** What a checkpoint of this run holds, and how it is read back. */
    final TrainerState savedState;
    /** Times each step's phases into {@link TrainContext#stepNanos(Phase)}. */
    final PhaseClock clock;
    /** Where the model is, and each batch goes. */
    final Device runDevice;
    /** The loss scaler of this run (F16, or one given to the builder), or null. */
    final GradScaler scaler;
    /** A memory budget's runs of a Sequential's children checkpointed together, or null. */
    List<dev.ember.nn.CheckpointSequential.Range> checkpointRuns;
    /** The compiled forward + loss + backward ({@link Builder#compile}), or null for eager steps. */
    final dev.ember.compile.TrainingStep compiledStep;
    /** Whether compiled steps take the optimizer's update in ({@link #unfusedBecause()} is empty). */
    final boolean fuseUpdate;
    /** The model wrapped for data-parallel training ({@link Builder#distributed}), made when fit starts, or null. */
    DataParallel.Replica replica;

    Run(Module model, BiFunction<Tensor, Tensor, Tensor> lossFn, Optimizer optimizer, BatchSource train, BatchSource val) {
      this.model = model;
      this.lossFn = lossFn;
      this.optimizer = optimizer;
      this.train = train;
      this.val = val;
      this.ctx = new TrainContext(model, optimizer, history, maxEpochs, maxSteps);
      ctx.accumulation = accumulation;
      ctx.batchesPerEpoch = train.numBatches();
      for (Metric<Double> m : metrics) trainMetrics.add(m.emptyCopy());
      this.named = model.namedParameters();
      this.compiledStep = compile ? dev.ember.compile.Compiler.compileTraining(model, lossFn) : null;
      this.fuseUpdate = compile && unfusedBecause().isEmpty() && updatesEveryTrainable(model, optimizer);
      this.lastCheckpoint = resumeFrom;
      this.runDevice = model.device();
      this.scaler = gradScaler != null ? gradScaler : precision.scalesLoss() ? new GradScaler() : null;
      if (scaler != null && scaler.isEnabled()) ctx.lossScale = scaler.getScale();
      // on a GPU the calls return before their kernels run: each phase waits for its own, so the profile shows
      // where the device's time goes (a few microseconds per phase; the CPU computes synchronously)
      this.clock = new PhaseClock(ctx.stepNanos, runDevice.isCpu() ? null : runDevice::synchronize);
      this.savedState = new TrainerState(model, optimizer, scheduler, generators, trainMetrics, history, callbacks, ctx,
          precision, scaler);
    }

    History fit() {
      if (resumeFrom != null) restore(resumeFrom);
      if (distributed != null) replica = distributed.replicate(model); // every rank starts from rank 0's weights
      List<Module> checkpointed = memoryBudget > 0 ? applyMemoryPlan() : List.of();
      try {
        long t0 = System.nanoTime();
        for (Callback c : callbacks) c.onTrainBegin(ctx);
        while (epochIndex < maxEpochs && ctx.globalStep < maxSteps && ctx.stopReason == null) {
          runEpoch();
          agreeOnStop();                                // a stop asked for on one rank stops every rank
        }
        if (ctx.stopReason != null) history.log("stopped_at_step", ctx.epoch, ctx.globalStep, ctx.globalStep);
        history.log("train_time_s", ctx.epoch, ctx.globalStep, (System.nanoTime() - t0) / 1e9);
        if (ctx.memoryPlan != null) {
          history.log("memory_peak_bytes", ctx.epoch, ctx.globalStep, ctx.memoryPlan.measuredPeakBytes());
        }
        for (Callback c : callbacks) c.onTrainEnd(ctx);
        return history;
      } catch (Throwable t) {
        for (Callback c : callbacks) {
          try {
            c.onException(ctx, t);
          } catch (Throwable inner) {
            t.addSuppressed(inner);
          }
        }
        throw t;
      } finally {
        for (Module m : checkpointed) m.checkpoint(false);
      }
    }

    // ------------------------------------------------------------------------------------------
    // Memory budget

    /**
     * Measures one training step on the first batch (forward, loss, backward, optimizer step; after an unmeasured
     * one when the optimizer has no state yet) and puts everything it touched back (parameters, buffers, gradients, optimizer state, random generators, modes), plans which
     * segments to checkpoint, keeps the plan in the context and turns checkpointing on for them (blocks through
     * {@link Module#checkpoint(boolean)}, runs of a Sequential's children through the forward); returns the modules
     * whose flag it set.
     *
     * @throws dev.ember.train.summary.MemoryBudgetException when even checkpointing every segment cannot fit
     */
    private List<Module> applyMemoryPlan() {
      dev.ember.train.summary.MemoryProfile probe = probeStep();
      if (probe == null) return List.of(); // no batch: nothing to train, nothing to plan
      dev.ember.train.summary.MemoryPlan plan = dev.ember.train.summary.MemoryPlan.plan(memoryBudget, model, probe);
      ctx.memoryPlan = plan;
      if (plan.inRuns() && !plan.checkpointed().isEmpty() && model instanceof dev.ember.nn.Sequential) {
        checkpointRuns = new ArrayList<>();
        for (int[] r : plan.runs()) checkpointRuns.add(new dev.ember.nn.CheckpointSequential.Range(r[0], r[1]));
        return List.of();
      }
      List<Module> on = new ArrayList<>();
      Map<String, Module> modules = model.namedModules();
      for (String name : plan.checkpointed()) {
        Module m = modules.get(name);
        if (m != null && !m.isCheckpointed()) {
          m.checkpoint(true);
          on.add(m);
        }
      }
      return on;
    }

    /** The model's forward with the plan's runs of children checkpointed, through the model's own hooks. */
    private Tensor forwardInRuns(Tensor x) {
      dev.ember.nn.Sequential seq = (dev.ember.nn.Sequential) model;
      return model.call(List.of(x), () -> dev.ember.nn.CheckpointSequential.apply(seq, checkpointRuns, x));
    }

    private dev.ember.train.summary.MemoryProfile probeStep() {
      Batch batch;
      try (BatchIterator it = train.iterate(epochIndex, nextBatch)) {
        if (!it.hasNext()) return null;
        batch = it.next();
      }
      List<Tensor> params = model.parameters();
      List<Tensor> values = new ArrayList<>();
      List<Tensor> grads = new ArrayList<>();
      Map<String, Tensor> buffers = model.namedBuffers();
      Map<String, Tensor> bufferValues = new LinkedHashMap<>();
      var optimizerState = optimizer.stateDict();
      long[] rng = Generator.global().state();
      List<long[]> rngs = new ArrayList<>();
      for (Generator g : generators) rngs.add(g.state());
      Map<Module, Boolean> modes = new LinkedHashMap<>();
      for (Module m : model.modules()) modes.put(m, m.isTraining());
      try (var ignored = Grad.off()) {
        for (Tensor p : params) {
          values.add(p.cloneContiguous());
          grads.add(p.grad());
          p.setGrad(null);
        }
        for (var e : buffers.entrySet()) bufferValues.put(e.getKey(), e.getValue().cloneContiguous());
      }
      dev.ember.train.summary.MemoryProfile.Recorder recorder = dev.ember.train.summary.MemoryProfile.record(model);
      try {
        model.train();
        // a fresh optimizer makes its state at the end of its first step, after the backward where a step may peak:
        // the measured step runs with the state there, as every later step does
        if (dev.ember.train.summary.MemoryProfile.optimizerStateBytes(model, optimizer) == 0) {
          recorder.close();
          try (MemoryScope warm = MemoryScope.open()) {
            Batch b = onDevice(batch, runDevice);
            Tensor warmLoss;
            try (Autocast ac = autocast()) {
              warmLoss = lossFn.apply(model.call(b.input()), b.target());
            }
            warmLoss.backward();
            optimizer.step();
            optimizer.zeroGrad();
          }
          recorder = dev.ember.train.summary.MemoryProfile.record(model);
        }
        var peak = dev.ember.train.summary.MemoryProfile.StepPeak.start(model, optimizer);
        try (MemoryScope probe = MemoryScope.open()) {
          Batch b = onDevice(batch, runDevice);
          Tensor loss;
          try (Autocast ac = autocast()) { // the step measured in the precision it will train in
            Tensor out = model.call(b.input());
            recorder.close();
            loss = lossFn.apply(out, b.target());
          }
          loss.backward();
          optimizer.step();
          optimizer.zeroGrad();
        }
        return recorder.profile(optimizer, peak.end());
      } finally {
        recorder.close();
        try (var ignored = Grad.off()) {
          for (int i = 0; i < params.size(); i++) {
            params.get(i).copy_(values.get(i));
            params.get(i).setGrad(grads.get(i));
          }
          for (var e : buffers.entrySet()) e.getValue().copy_(bufferValues.get(e.getKey()));
        }
        optimizer.loadStateDict(optimizerState);
        Generator.global().setState(rng);
        for (int i = 0; i < generators.size(); i++) generators.get(i).setState(rngs.get(i));
        for (var e : modes.entrySet()) e.getKey().train(e.getValue());
      }
    }

    private void runEpoch() {
      ctx.epoch = epochIndex + 1;
      if (!epochStarted) {
        lossSum = 0;
        lossCount = 0;
        epochNanos = 0;
        epochSkips = 0;
        ctx.logs.remove("skipped_steps");               // logged again if a step of this epoch is skipped
        for (Metric<Double> m : trainMetrics) m.reset();
        epochStarted = true;
        for (Callback c : callbacks) c.onEpochBegin(ctx);
      }
      model.train();
      boolean completed = true;
      int numBatches = train.numBatches();
      MemoryScope stepScope = null; // open from an optimizer step's first batch to the step itself
      dev.ember.train.summary.MemoryProfile.StepPeak stepPeak = null; // with a memory budget
      try (BatchIterator it = train.iterate(epochIndex, nextBatch)) {
        while (true) {
          clock.startStep();
          if (!it.hasNext()) break;
          if (ctx.memoryPlan != null && stepScope == null) stepPeak = dev.ember.train.summary.MemoryProfile.StepPeak.start(model, optimizer);
          Batch batch = it.next();
          if (batch.input().device() != runDevice || batch.target().device() != runDevice) {
            if (stepScope == null) stepScope = MemoryScope.open(); // the copy belongs to the step, as activations do
            batch = onDevice(batch, runDevice);
          }
          clock.lap(Phase.DATA);
          ctx.batchIndex = nextBatch;
          ctx.batchLoss = Double.NaN;
          ctx.stepSkipped = false;
          for (Callback c : callbacks) c.onBatchBegin(ctx, batch);
          clock.lap(Phase.CALLBACKS);
          if (stepScope == null) stepScope = MemoryScope.open();
          Tensor out;
          Tensor loss;
          boolean fused = false; // the optimizer's update already made by the compiled step
          if (compiledStep != null) { // forward, loss and backward as one graph: its time counts as the forward's
            if (fuseUpdate && ctx.stopReason == null) { // a stop asked for already cancels the update: not fused
              Tensor x = batch.input();
              Tensor y = batch.target();
              loss = maxBadSteps > 0 ? compiledStep.stepIfFinite(x, y, optimizer) : compiledStep.step(x, y, optimizer);
              fused = compiledStep.updated();
            } else {
              loss = compiledStep.run(batch.input(), batch.target());
            }
            out = compiledStep.output();
            clock.lap(Phase.FORWARD);
          } else {
            // with distributed training, the backward of a step's last batch averages the gradients across the ranks
            boolean sync = pending + 1 >= Math.max(1, ctx.accumulation) || nextBatch == numBatches - 1;
            try (Autocast ignored = autocast()) {            // the forward pass and the loss; backward runs outside
              Tensor x = batch.input();
              out = replica == null ? forward(x) : replica.forward(m -> forward(x), sync);
              clock.lap(Phase.FORWARD);
              loss = lossFn.apply(out, batch.target());
            }
          }
          if (loss.numel() != 1) {
            throw new IllegalArgumentException("Trainer.fit: the loss must be a scalar, got shape "
                + java.util.Arrays.toString(loss.shape()) + "; use a mean or sum reduction");
          }
          double lossValue = loss.item();
          int batchSize = batch.size();
          GlobalBatch global = null;
          if (distributed != null) {                     // the global batch's loss (and metrics) on every rank
            global = gather(lossValue, batchSize, out, batch.target());
            lossValue = global.loss;
            batchSize = global.size;
          }
          ctx.batchLoss = lossValue;
          // with skipping on, a batch whose loss is not finite stays out of the epoch's loss and metrics
          boolean counted = maxBadSteps == 0 || Double.isFinite(lossValue);
          if (!counted && !stepLossBad) {
            stepLossBad = true;
            stepBadLoss = lossValue;
          }
          if (!trainMetrics.isEmpty() && counted) {
            try (var ignored = Grad.off()) {
              // metrics compute on the host, whatever the device; distributed: over every rank's batch
              Tensor hostOut = global != null && global.output != null ? global.output : hostF32(out.detach());
              Tensor hostTarget = global != null && global.target != null ? global.target : batch.target().cpu();
              for (Metric<Double> m : trainMetrics) m.update(hostOut, hostTarget);
            }
          }
          clock.lap(Phase.LOSS);
          int k = Math.max(1, ctx.accumulation);
          if (compiledStep == null) {
            Tensor toBackward = k == 1 ? loss : loss.div(k);
            (scaler == null ? toBackward : scaler.scale(toBackward)).backward();
          }
          pending++;
          if (replica != null && (pending >= k || nextBatch == numBatches - 1)) replica.finish();
          clock.lap(Phase.BACKWARD);
          for (Callback c : callbacks) c.onAfterBackward(ctx);
          clock.lap(Phase.CALLBACKS);
          boolean stepped = false;
          if (pending >= k || nextBatch == numBatches - 1) {
            // Non-finite loss or gradients are caught here, before clipping (which would spread a NaN
            // over every gradient) and before any callback or the optimizer can act on them.
            // With a loss scaler, the gradients are unscaled first (before clipping), and an Inf/NaN among them
            // is the scaler's overflow: the step is skipped and the scale backs off, not a non-finite failure.
            boolean overflow = unscale();
            String badGradient = null;
            boolean bad = false;
            if (maxBadSteps > 0 && ctx.stopReason == null) {
              badGradient = scaling() ? null : NonFinite.firstNonFiniteGradient(named);
              bad = stepLossBad || badGradient != null;
            }
            boolean clean = !bad && !overflow && ctx.stopReason == null;
            if (clean) {
              if (clipValue > 0) GradClip.clipGradValue(model.parameters(), clipValue);
              if (clipNorm > 0) GradClip.clipGradNorm(model.parameters(), clipNorm);
            }
            clock.lap(Phase.OPTIMIZER);
            if (clean) {
              for (Callback c : callbacks) c.onBeforeOptimizerStep(ctx);
              clock.lap(Phase.CALLBACKS);
            }
            // a stop asked for before the step (TerminateOnNaN, GradientMonitor) cancels it, as a bad step is skipped
            boolean step = fused || !bad && !overflow && ctx.stopReason == null;
            if (step && !fused) optimizer.step();
            updateScale();
            optimizer.zeroGrad();
            stepScope.close(); // the step's activations, gradients and temporaries back to the pool
            stepScope = null;
            if (stepPeak != null) {
              long p = stepPeak.end();
              if (p > ctx.memoryPlan.measuredPeakBytes()) ctx.memoryPlan = ctx.memoryPlan.withMeasuredPeak(p);
              stepPeak = null;
            }
            pending = 0;
            double badLoss = stepLossBad ? stepBadLoss : lossValue;
            stepLossBad = false;
            if (step) {
              ctx.globalStep++;
              consecutiveSkips = 0;
              if (scheduler != null && scheduleInterval == Interval.BATCH) scheduler.step();
              stepped = true;
            } else if (bad) {
              consecutiveSkips++;
              epochSkips++;
              ctx.skippedSteps++;
              ctx.stepSkipped = true;
              ctx.logs.put("skipped_steps", (double) epochSkips);
              if (consecutiveSkips >= maxBadSteps) {
                throw new NonFiniteStepException(consecutiveSkips, ctx.epoch, nextBatch, ctx.globalStep, badLoss,
                    badGradient, lastCheckpoint);
              }
            } else if (overflow) {                       // the scaler's skip: counted, never a failure
              epochSkips++;
              ctx.skippedSteps++;
              ctx.stepSkipped = true;
              ctx.logs.put("skipped_steps", (double) epochSkips);
            }
            clock.lap(Phase.OPTIMIZER);
          }
          if (counted) {
            lossSum += lossValue * batchSize;
            lossCount += batchSize;
          }
          ctx.samplesSeen += batchSize;
          ctx.logs.put("loss", lossSum / lossCount);
          ctx.logs.put("lr", optimizer.paramGroups().get(0).lr());
          nextBatch++;
          clock.publishWork();
          if (stepped && validateEverySteps > 0 && ctx.globalStep % validateEverySteps == 0) validate();
          clock.mark();                                 // validation is in no phase (epoch_time_s counts it)
          for (Callback c : callbacks) c.onBatchEnd(ctx, batch, lossValue);
          agreeOnStop();
          clock.lap(Phase.CALLBACKS);
          epochNanos += clock.publishCallbacks();       // the whole step, validation included
          writePendingCheckpoints();
          if (ctx.stopReason != null || ctx.globalStep >= maxSteps) {
            completed = nextBatch >= numBatches;
            break;
          }
        }
      } finally {
        if (stepScope != null) stepScope.close();
      }
      if (!completed) return;
      endEpoch();
    }

    /** The model's forward, with a memory plan's runs of children checkpointed when it has them. */
    private Tensor forward(Tensor x) {
      return checkpointRuns == null ? model.call(x) : forwardInRuns(x);
    }

    /**
     * Gathers every rank's batch loss and size and, when there are training metrics, the host copies of its output
     * and target: the global batch's loss (the mean over its samples) and its outputs and targets in rank order, the
     * same on every rank.
     */
    private GlobalBatch gather(double loss, int size, Tensor out, Tensor target) {
      Tensor o = null;
      Tensor t = null;
      double[] od = new double[0];
      double[] td = new double[0];
      if (!trainMetrics.isEmpty()) {
        try (var ignored = Grad.off()) {
          o = hostF32(out.detach());
          t = target.cpu();
          od = o.toDoubleArray();
          td = t.toDoubleArray();
        }
      }
      double[] mine = new double[4 + od.length + td.length];
      mine[0] = loss;
      mine[1] = size;
      mine[2] = od.length;
      mine[3] = td.length;
      System.arraycopy(od, 0, mine, 4, od.length);
      System.arraycopy(td, 0, mine, 4 + od.length, td.length);
      int world = distributed.worldSize();
      double[] all = world == 1 ? mine : distributed.allGather(mine);
      int block = mine.length;
      double lossSum = 0;
      long total = 0;
      for (int r = 0; r < world; r++) {
        int at = r * block;
        if (all[at + 1] != size || all[at + 2] != od.length || all[at + 3] != td.length) {
          throw new IllegalStateException("Trainer: rank " + r + "'s batch " + nextBatch + " has " + (long) all[at + 1]
              + " samples (" + (long) all[at + 2] + " output and " + (long) all[at + 3] + " target values) but rank "
              + distributed.rank() + "'s has " + size + " (" + od.length + ", " + td.length + "); every rank must train"
              + " on equal shards");
        }
        lossSum += all[at] * all[at + 1];
        total += size;
      }
      GlobalBatch g = new GlobalBatch();
      g.loss = lossSum / total;
      g.size = (int) total;
      if (o != null) {
        double[] go = new double[od.length * world];
        double[] gt = new double[td.length * world];
        for (int r = 0; r < world; r++) {
          System.arraycopy(all, r * block + 4, go, r * od.length, od.length);
          System.arraycopy(all, r * block + 4 + od.length, gt, r * td.length, td.length);
        }
        g.output = Tensor.of(go, stacked(o.shape(), world)).to(o.dtype());
        g.target = Tensor.of(gt, stacked(t.shape(), world)).to(t.dtype());
      }
      return g;
    }

    /** {@code shape} with its first (batch) dimension times {@code world}. */
    private static int[] stacked(int[] shape, int world) {
      int[] s = shape.clone();
      if (s.length > 0) s[0] *= world;
      return s;
    }

    /** With distributed training: when a rank has asked to stop, every rank stops (a collective). */
    private void agreeOnStop() {
      if (distributed == null || distributed.worldSize() == 1) return;
      double[] all = distributed.allGather(new double[] {ctx.stopReason == null ? 0 : 1});
      for (int r = 0; r < all.length && ctx.stopReason == null; r++) {
        if (all[r] != 0) ctx.requestStop("rank " + r + " stopped");
      }
    }

    private void endEpoch() {
      if (lossCount > 0) ctx.log("loss", lossSum / lossCount);
      for (Metric<Double> m : trainMetrics) ctx.log(m.name(), m.compute());
      if (epochSkips > 0) ctx.log("skipped_steps", epochSkips);
      if (scaling()) ctx.log("loss_scale", scaler.getScale());
      ctx.log("lr", optimizer.paramGroups().get(0).lr());
      ctx.log("epoch_time_s", epochNanos / 1e9);
      if (scheduler != null && scheduleInterval == Interval.EPOCH) scheduler.step();
      if (val != null && validateEveryEpochs > 0 && ctx.epoch % validateEveryEpochs == 0) validate();
      epochIndex++;
      nextBatch = 0;
      epochStarted = false;
      for (Callback c : callbacks) c.onEpochEnd(ctx);
      writePendingCheckpoints();
    }

    private void validate() {
      if (val == null) return;
      ctx.validating = true;
      try {
        for (Callback c : callbacks) c.onValidationBegin(ctx);
        Map<String, Double> raw;
        try (Autocast ignored = autocast()) {            // validation runs in the precision it trains in
          raw = evaluate(model, lossFn, val, metrics);
        }
        LinkedHashMap<String, Double> vals = new LinkedHashMap<>();
        for (var e : raw.entrySet()) {
          vals.put("val_" + e.getKey(), e.getValue());
          ctx.log("val_" + e.getKey(), e.getValue());
        }
        for (Callback c : callbacks) c.onValidationEnd(ctx, vals);
      } finally {
        ctx.validating = false;                          // evaluate() put the model back in train mode
      }
    }

    /** An autocast scope for this run's precision, or null (no scope) for F32. */
    private Autocast autocast() {
      DType d = precision.autocastDType();
      return d == null ? null : Autocast.enable(d);
    }

    /** Whether this run scales its loss. */
    private boolean scaling() {
      return scaler != null && scaler.isEnabled();
    }

    /**
     * Unscales the gradients before clipping and callbacks see them; true when one held an Inf or a NaN (the
     * scaler's overflow). Nothing to do without a scaler, or when a stop request already cancels the step.
     */
    private boolean unscale() {
      if (!scaling() || ctx.stopReason != null) return false;
      scaler.unscale(optimizer);
      return Boolean.TRUE.equals(scaler.foundInf(optimizer));
    }

    /** Ends the scaler's iteration (backoff after an overflow, growth after enough clean steps) and logs the scale. */
    private void updateScale() {
      if (!scaling() || scaler.foundInf(optimizer) == null) return; // not unscaled: the step was cancelled before
      scaler.update();
      ctx.lossScale = scaler.getScale();
      ctx.logs.put("loss_scale", ctx.lossScale);
    }

    private void writePendingCheckpoints() {
      if (ctx.pendingCheckpoints.isEmpty()) return;
      if (distributed != null && distributed.rank() != 0) { // rank 0 writes; every rank holds the same state
        ctx.pendingCheckpoints.clear();
        return;
      }
      List<TrainContext.PendingCheckpoint> todo = new ArrayList<>(ctx.pendingCheckpoints);
      ctx.pendingCheckpoints.clear();
      Map<String, Object> state = state();
      for (TrainContext.PendingCheckpoint p : todo) {
        try {
          Checkpoint.write(p.file(), state);
        } catch (IOException e) {
          throw new UncheckedIOException("Trainer: writing checkpoint " + p.file() + " failed", e);
        }
        lastCheckpoint = p.file();
        if (p.afterCommit() != null) p.afterCommit().run();
      }
    }

    private Map<String, Object> state() {
      return savedState.state(new TrainerState.Counters(epochIndex, nextBatch, epochStarted, lossSum, lossCount, epochSkips,
          consecutiveSkips));
    }

    private void restore(Path file) {
      TrainerState.Counters c = savedState.restore(file);
      epochIndex = c.epochIndex();
      nextBatch = c.nextBatch();
      epochStarted = c.epochStarted();
      lossSum = c.lossSum();
      lossCount = c.lossCount();
      epochSkips = c.epochSkips();
      consecutiveSkips = c.consecutiveSkips();
    }
  }

  /** The loss, size and (with metrics) outputs and targets of a batch over every rank. */
  private static final class GlobalBatch {
    double loss;
    int size;
    Tensor output;
    Tensor target;
  }

  /** Configuration of a {@link Trainer}. */
  public static final class Builder {
    private int maxEpochs = Integer.MAX_VALUE;
    private long maxSteps = Long.MAX_VALUE;
    private LRScheduler scheduler;
    private Interval scheduleInterval = Interval.EPOCH;
    private int accumulation = 1;
    private double clipNorm;
    private double clipValue;
    private int validateEveryEpochs = 1;
    private long validateEverySteps;
    private final List<Metric<Double>> metrics = new ArrayList<>();
    private final List<Callback> callbacks = new ArrayList<>();
    private final List<Generator> generators = new ArrayList<>();
    private Path resumeFrom;
    private int maxBadSteps;
    private Device device;
    private Precision precision = Precision.F32;
    private GradScaler gradScaler;
    private long memoryBudget;
    private boolean compile;
    private DataParallel distributed;
    private boolean pinMemory;

    private Builder() {}

    /**
     * Trains data-parallel across the ranks of {@code group} (ember-distributed's {@code ProcessGroup}; every rank runs
     * this trainer with the same configuration, model, optimizer and loaders). {@link Trainer#fit}:
     * <ul>
     *   <li>wraps the model in a replica ({@code DistributedDataParallel}): every rank starts from rank 0's weights
     *       and the gradients are averaged across the ranks in backward (not on the inner batches of {@link
     *       #accumulate}), so every rank takes the same optimizer step;
     *   <li>shards the training {@code DataLoader}'s epochs as PyTorch's {@code DistributedSampler} does, but over the
     *       loader's own epoch order (rank {@code r} takes positions {@code r, r + N, ...}, the order padded by its
     *       head to a multiple of N): the loader's batch size is per rank, and N ranks at batch B see each step the
     *       samples one process at batch N*B sees, so they train as it does (up to the rounding of the average);
     *   <li>logs the global batch: its loss (the mean over the ranks' samples) and the training metrics over every
     *       rank's outputs and targets (one gather per batch), so that every rank holds the same logs, history and
     *       state, and callbacks see the same values on every rank;
     *   <li>stops every rank when a callback on one asks to stop (agreed after each batch and epoch);
     *   <li>writes checkpoints on rank 0 only (give checkpoint, logging and progress callbacks to rank 0 alone; the
     *       others may resume from rank 0's checkpoints, which hold the whole run's state).
     * </ul>
     * Validation runs on every rank over the whole validation source. Not with {@link #compile}.
     */
    public Builder distributed(DataParallel group) {
      if (group == null) throw new IllegalArgumentException("Trainer: distributed group must not be null");
      this.distributed = group;
      return this;
    }

    /**
     * Runs each training step compiled ({@code dev.ember.compile.Compiler#compileTraining}): the forward, the loss
     * and the backward traced on the first batch of each shape into one graph, run with the autograd tape off, the
     * gradients the same as eager's. Float32 only, one batch per step: it cannot be combined with another
     * {@link #precision}, a {@link #gradScaler}, {@link #accumulate} or a {@link #memoryBudget}. The optimizer's
     * update runs inside the compiled step unless something must see the gradients first (see
     * {@link Trainer#unfusedBecause()}). The step's time (forward, loss, backward and a fused update) counts as the
     * forward phase's. A step that cannot be one graph runs its forward compiled and its backward on the tape.
     */
    public Builder compile(boolean on) {
      this.compile = on;
      return this;
    }

    /**
     * Runs the forward pass and the loss in {@code precision} (see {@link Precision}): BF16 and F16 under
     * {@link Autocast}, F16 with a {@link GradScaler} (PyTorch's defaults unless {@link #gradScaler} gives one).
     */
    public Builder precision(Precision precision) {
      if (precision == null) throw new IllegalArgumentException("Trainer: precision must not be null");
      this.precision = precision;
      return this;
    }

    /**
     * The loss scaler to use (e.g. with another growth interval), in any precision; by default F16 makes one with
     * PyTorch's settings and the other precisions use none. Its state is checkpointed with the run.
     */
    public Builder gradScaler(GradScaler scaler) {
      if (scaler == null) throw new IllegalArgumentException("Trainer: gradScaler must not be null");
      this.gradScaler = scaler;
      return this;
    }

    /**
     * Trains on {@code device}: {@link Trainer#fit} moves the model there first (in place, keeping the optimizer's
     * parameter references valid) and each batch as it arrives. Without it, batches go to the model's device.
     */
    public Builder device(Device device) {
      if (device == null) throw new IllegalArgumentException("Trainer: device must not be null");
      this.device = device;
      return this;
    }

    /**
     * With {@code true}, when the model trains on a device other than the CPU (after {@link #device}), the training
     * and validation batches reach it through {@link PinnedBatches}, as PyTorch's {@code DataLoader(pin_memory=True)}
     * with non-blocking copies: a background thread copies batch i+1 to the device ({@code to(device, true)}: on CUDA
     * through pinned memory and a copy stream) while step i computes. The batches and the run are the same as
     * without; on the CPU it changes nothing. Off by default.
     */
    public Builder pinMemory(boolean on) {
      this.pinMemory = on;
      return this;
    }

    /** Stops after this many epochs. */
    public Builder maxEpochs(int epochs) {
      if (epochs < 1) throw new IllegalArgumentException("Trainer: max_epochs must be >= 1, got " + epochs);
      this.maxEpochs = epochs;
      return this;
    }

    /** Stops after this many optimizer steps. */
    public Builder maxSteps(long steps) {
      if (steps < 1) throw new IllegalArgumentException("Trainer: max_steps must be >= 1, got " + steps);
      this.maxSteps = steps;
      return this;
    }

    /** Steps {@code scheduler} after every optimizer step ({@link Interval#BATCH}) or epoch. */
    public Builder scheduler(LRScheduler scheduler, Interval interval) {
      if (scheduler == null || interval == null) throw new IllegalArgumentException("Trainer: scheduler and interval must not be null");
      this.scheduler = scheduler;
      this.scheduleInterval = interval;
      return this;
    }

    /** Sums the gradients of {@code batches} batches (each loss divided by it) per optimizer step. */
    public Builder accumulate(int batches) {
      if (batches < 1) throw new IllegalArgumentException("Trainer: accumulate must be >= 1, got " + batches);
      this.accumulation = batches;
      return this;
    }

    /** Clips the total gradient norm (L2 over all parameters) to {@code maxNorm} before each step. */
    public Builder clipGradNorm(double maxNorm) {
      if (!(maxNorm > 0)) throw new IllegalArgumentException("Trainer: clip_grad_norm must be > 0, got " + maxNorm);
      this.clipNorm = maxNorm;
      return this;
    }

    /** Clamps every gradient element to [-value, value] before each step. */
    public Builder clipGradValue(double value) {
      if (!(value > 0)) throw new IllegalArgumentException("Trainer: clip_grad_value must be > 0, got " + value);
      this.clipValue = value;
      return this;
    }

    /** Validates after every {@code epochs} epochs (default 1; 0 = never at epoch ends). */
    public Builder validateEveryEpochs(int epochs) {
      if (epochs < 0) throw new IllegalArgumentException("Trainer: validate_every_epochs must be >= 0, got " + epochs);
      this.validateEveryEpochs = epochs;
      return this;
    }

    /** Also validates after every {@code steps} optimizer steps (0 = never). */
    public Builder validateEverySteps(long steps) {
      if (steps < 0) throw new IllegalArgumentException("Trainer: validate_every_steps must be >= 0, got " + steps);
      this.validateEverySteps = steps;
      return this;
    }

    /** Metrics computed on the training batches (per epoch) and on validation ({@code val_} prefix). */
    @SafeVarargs
    public final Builder metrics(Metric<Double>... metrics) {
      this.metrics.addAll(List.of(metrics));
      return this;
    }

    /** Callbacks, called in this order. */
    public Builder callbacks(Callback... callbacks) {
      this.callbacks.addAll(List.of(callbacks));
      return this;
    }

    /** Callbacks, called in this order. */
    public Builder callbacks(List<? extends Callback> callbacks) {
      this.callbacks.addAll(callbacks);
      return this;
    }

    /** Generators (besides the global one, always saved) whose state checkpoints carry, e.g. a dropout generator. */
    public Builder generators(Generator... generators) {
      this.generators.addAll(List.of(generators));
      return this;
    }

    /**
     * Keeps non-finite steps away from the weights: an optimizer step whose loss (of any of its
     * batches) or any parameter gradient holds a NaN or an infinity is skipped, as a mixed-precision
     * loss scaler skips an overflowing step. The gradients are dropped; the optimizer, the schedule
     * and {@code onBeforeOptimizerStep} callbacks are not run and {@link TrainContext#globalStep()}
     * does not advance; the batch is consumed. After {@code maxConsecutive} skipped steps in a row
     * {@link Trainer#fit} throws a {@link NonFiniteStepException} naming the step, the loss, the first
     * parameter with a non-finite gradient and the last checkpoint written, and writes none after it.
     * Skipped steps are counted as {@code skipped_steps} in the logs and the history (per epoch, in
     * epochs that have any) and in {@link TrainContext#skippedSteps()}, and the check costs one read
     * of each gradient per step. 0, the default, turns it off: non-finite values reach the weights,
     * as in PyTorch.
     */
    public Builder skipNonFiniteSteps(int maxConsecutive) {
      if (maxConsecutive < 0) {
        throw new IllegalArgumentException("Trainer: skip_non_finite_steps must be >= 0 (0: off), got " + maxConsecutive);
      }
      this.maxBadSteps = maxConsecutive;
      return this;
    }

    /**
     * Keeps a training step's peak live bytes ({@link dev.ember.train.summary.MemoryProfile.StepPeak}) under
     * {@code bytes}: {@link Trainer#fit} first measures one step on the first batch (after an unmeasured one that makes
     * a fresh optimizer's state; it puts back everything they changed), then checkpoints as few segments as the prediction needs ({@link dev.ember.train.summary.MemoryPlan},
     * {@link Module#checkpoint(boolean)}, turned off again when fit returns) and keeps the plan, with the largest
     * peak measured while training, in {@link TrainContext#memoryPlan()} (callbacks see it from
     * {@code onTrainBegin}; {@code Profiling} prints it then and at the end, and writes it to profile.json) and the
     * history ({@code memory_peak_bytes}). When even checkpointing every segment cannot fit, fit throws a
     * {@link dev.ember.train.summary.MemoryBudgetException} before training, before any callback runs.
     */
    public Builder memoryBudget(long bytes) {
      if (bytes <= 0) throw new IllegalArgumentException("Trainer: memory_budget must be > 0 bytes, got " + bytes);
      this.memoryBudget = bytes;
      return this;
    }

    /** Continues from a checkpoint written by this trainer's configuration. */
    public Builder resumeFrom(Path checkpoint) {
      this.resumeFrom = checkpoint;
      return this;
    }

    public Trainer build() {
      return new Trainer(this);
    }
  }
}
