package dev.ember.train;

import dev.ember.autograd.Grad;
import dev.ember.metrics.Metric;
import dev.ember.nn.Module;
import dev.ember.optim.GradScaler;
import dev.ember.optim.Optimizer;
import dev.ember.optim.OptimizerState;
import dev.ember.optim.schedule.LRScheduler;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.Trainer.Precision;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The state a {@link Trainer} checkpoint holds, and its layout: everything needed to continue a
 * run exactly, as the map given to {@link Checkpoint#write}, in this order:
 * <ul>
 *   <li>{@code model}: the model's state dict;
 *   <li>{@code optimizer}: {@code state} (per parameter index, as a string) and {@code param_groups};
 *   <li>{@code scheduler}: the schedule's state dict, when the trainer has one;
 *   <li>{@code generators}: the global generator's state, then each of the trainer's generators',
 *       {@link Generator#STATE_LONGS} longs each, in one {@code long[]};
 *   <li>{@code trainer}: the run's {@link Counters}, the step and sample counts, the accumulation,
 *       the skipped-step counts and the latest logs;
 *   <li>{@code train_metrics}: each training metric's state under {@code "<index>:<name>"};
 *   <li>{@code history}: the {@link History#stateDict()};
 *   <li>{@code callbacks}: each callback's state under its {@link Callback#stateKey()};
 *   <li>{@code precision}: the {@link Precision}'s name, when not F32 (a checkpoint without it is F32's);
 *   <li>{@code scaler}: the loss scaler's {@link GradScaler#stateDict()}, when the run scales its loss.
 * </ul>
 * {@link #restore} reads the same layout back into the run's parts and says what does not fit.
 */
final class TrainerState {
  /** Where a run stands in its epoch and the epoch's running sums: the counters the trainer keeps outside its context. */
  record Counters(int epochIndex, int nextBatch, boolean epochStarted, double lossSum, long lossCount, int epochSkips,
      int consecutiveSkips) {}

  private final Module model;
  private final Optimizer optimizer;
  private final LRScheduler scheduler;
  private final List<Generator> generators;
  private final List<Metric<Double>> trainMetrics;
  private final History history;
  private final List<Callback> callbacks;
  private final TrainContext ctx;
  private final Precision precision;
  private final GradScaler scaler;

  /** The parts of one run whose state is saved and restored; {@code scheduler} and {@code scaler} may be null. */
  TrainerState(Module model, Optimizer optimizer, LRScheduler scheduler, List<Generator> generators,
      List<Metric<Double>> trainMetrics, History history, List<Callback> callbacks, TrainContext ctx,
      Precision precision, GradScaler scaler) {
    this.model = model;
    this.optimizer = optimizer;
    this.scheduler = scheduler;
    this.generators = generators;
    this.trainMetrics = trainMetrics;
    this.history = history;
    this.callbacks = callbacks;
    this.ctx = ctx;
    this.precision = precision;
    this.scaler = scaler != null && scaler.isEnabled() ? scaler : null;
  }

  /** Everything needed to continue exactly from here, the run standing at {@code counters}. */
  Map<String, Object> state(Counters counters) {
    LinkedHashMap<String, Object> s = new LinkedHashMap<>();
    s.put("model", new LinkedHashMap<String, Object>(model.stateDict()));
    OptimizerState os = optimizer.stateDict();
    LinkedHashMap<String, Object> optState = new LinkedHashMap<>();
    for (var e : os.state().entrySet()) optState.put(Integer.toString(e.getKey()), new LinkedHashMap<>(e.getValue()));
    LinkedHashMap<String, Object> opt = new LinkedHashMap<>();      // a fixed order: Map.of's varies per JVM
    opt.put("state", optState);
    opt.put("param_groups", os.paramGroups());
    s.put("optimizer", opt);
    if (scheduler != null) s.put("scheduler", scheduler.stateDict());
    int w = Generator.STATE_LONGS;
    long[] rng = new long[(1 + generators.size()) * w];
    System.arraycopy(Generator.global().state(), 0, rng, 0, w);
    for (int i = 0; i < generators.size(); i++) System.arraycopy(generators.get(i).state(), 0, rng, (i + 1) * w, w);
    s.put("generators", rng);
    LinkedHashMap<String, Object> t = new LinkedHashMap<>();
    t.put("epoch_index", counters.epochIndex());
    t.put("next_batch", counters.nextBatch());
    t.put("epoch_started", counters.epochStarted());
    t.put("global_step", ctx.globalStep);
    t.put("samples_seen", ctx.samplesSeen);
    t.put("loss_sum", counters.lossSum());
    t.put("loss_count", counters.lossCount());
    t.put("accumulation", ctx.accumulation);
    t.put("skipped_steps", ctx.skippedSteps);
    t.put("epoch_skipped_steps", counters.epochSkips());
    t.put("consecutive_skipped_steps", counters.consecutiveSkips());
    t.put("logs", new LinkedHashMap<String, Object>(ctx.logs));
    s.put("trainer", t);
    LinkedHashMap<String, Object> ms = new LinkedHashMap<>();
    for (int i = 0; i < trainMetrics.size(); i++) ms.put(i + ":" + trainMetrics.get(i).name(), trainMetrics.get(i).stateDict());
    s.put("train_metrics", ms);
    s.put("history", history.stateDict());
    LinkedHashMap<String, Object> cbs = new LinkedHashMap<>();
    for (Callback c : callbacks) cbs.put(c.stateKey(), c.stateDict());
    s.put("callbacks", cbs);
    if (precision != Precision.F32) s.put("precision", precision.name());
    if (scaler != null) s.put("scaler", new LinkedHashMap<>(scaler.stateDict()));
    return s;
  }

  /**
   * Loads the checkpoint {@code file} into the model, optimizer, schedule, generators, context,
   * training metrics, history and callbacks, and returns the counters the run continues from.
   *
   * @throws UncheckedIOException if the file cannot be read or is not a valid checkpoint
   * @throws IllegalArgumentException if it does not hold the state of a trainer configured like this one
   */
  @SuppressWarnings("unchecked")
  Counters restore(Path file) {
    Map<String, Object> s;
    try {
      s = Checkpoint.read(file);
    } catch (CheckpointException e) {
      throw new UncheckedIOException("Trainer: cannot resume from " + file + ": " + e.problem(), e);
    } catch (IOException e) {
      throw new UncheckedIOException("Trainer: cannot resume from " + file + ": " + e.getMessage(), e);
    }
    try {
      LinkedHashMap<String, Tensor> modelState = new LinkedHashMap<>();
      ((Map<String, Object>) s.get("model")).forEach((k, v) -> modelState.put(k, (Tensor) v));
      try (var ignored = Grad.off()) {
        model.loadStateDict(modelState);
      }
      Map<String, Object> o = (Map<String, Object>) s.get("optimizer");
      LinkedHashMap<Integer, Map<String, Tensor>> optState = new LinkedHashMap<>();
      ((Map<String, Object>) o.get("state")).forEach((k, v) -> {
        LinkedHashMap<String, Tensor> m = new LinkedHashMap<>();
        ((Map<String, Object>) v).forEach((kk, vv) -> m.put(kk, (Tensor) vv));
        optState.put(Integer.parseInt(k), m);
      });
      optimizer.loadStateDict(new OptimizerState(optState, (List<Map<String, Object>>) o.get("param_groups")));
      if (scheduler != null) {
        Object sched = s.get("scheduler");
        if (!(sched instanceof Map<?, ?> sm)) {
          throw new IllegalArgumentException("the checkpoint has no scheduler state but this trainer has a scheduler");
        }
        scheduler.loadStateDict((Map<String, Object>) sm);
      }
      long[] rng = (long[]) s.get("generators");
      int w = Generator.STATE_LONGS;
      if (rng.length != (1 + generators.size()) * w) {
        throw new IllegalArgumentException("the checkpoint holds " + rng.length + " generator state values, this trainer needs "
            + (1 + generators.size()) + " x " + w + " (the global generator and " + generators.size() + " more)");
      }
      Generator.global().setState(Arrays.copyOfRange(rng, 0, w));
      for (int i = 0; i < generators.size(); i++) generators.get(i).setState(Arrays.copyOfRange(rng, (i + 1) * w, (i + 2) * w));
      Map<String, Object> t = (Map<String, Object>) s.get("trainer");
      int epochIndex = (Integer) t.get("epoch_index");
      int nextBatch = (Integer) t.get("next_batch");
      boolean epochStarted = (Boolean) t.get("epoch_started");
      ctx.globalStep = (Long) t.get("global_step");
      ctx.samplesSeen = (Long) t.get("samples_seen");
      double lossSum = (Double) t.get("loss_sum");
      long lossCount = (Long) t.get("loss_count");
      ctx.accumulation = (Integer) t.get("accumulation");
      // absent from checkpoints written before steps could be skipped: none were
      ctx.skippedSteps = (Long) t.getOrDefault("skipped_steps", 0L);
      int epochSkips = (Integer) t.getOrDefault("epoch_skipped_steps", 0);
      int consecutiveSkips = (Integer) t.getOrDefault("consecutive_skipped_steps", 0);
      ((Map<String, Object>) t.get("logs")).forEach((k, v) -> ctx.logs.put(k, (Double) v));
      ctx.epoch = epochIndex + (epochStarted ? 1 : 0);
      history.loadStateDict((Map<String, Object>) s.get("history"));
      Map<String, Object> ms = (Map<String, Object>) s.get("train_metrics");
      if (ms.size() != trainMetrics.size()) {
        throw new IllegalArgumentException("the checkpoint holds " + ms.size() + " training metrics, this trainer has "
            + trainMetrics.size());
      }
      for (int i = 0; i < trainMetrics.size(); i++) {
        Object m = ms.get(i + ":" + trainMetrics.get(i).name());
        if (!(m instanceof Map<?, ?> mm)) {
          throw new IllegalArgumentException("the checkpoint has no state for training metric " + i + " ('"
              + trainMetrics.get(i).name() + "'); it holds " + ms.keySet());
        }
        trainMetrics.get(i).loadStateDict((Map<String, Object>) mm);
      }
      restorePrecision(s);
      Map<String, Object> cbs = (Map<String, Object>) s.get("callbacks");
      for (Callback c : callbacks) {
        Object cs = cbs.get(c.stateKey());
        if (cs instanceof Map<?, ?> m) c.loadStateDict((Map<String, Object>) m);
      }
      return new Counters(epochIndex, nextBatch, epochStarted, lossSum, lossCount, epochSkips, consecutiveSkips);
    } catch (ClassCastException | NullPointerException e) {
      throw new IllegalArgumentException("Trainer: checkpoint " + file + " does not hold a trainer state (" + e + ")", e);
    }
  }

  /** Checks the checkpoint was trained in this precision and loads the loss scaler's state. */
  @SuppressWarnings("unchecked")
  private void restorePrecision(Map<String, Object> s) {
    String saved = s.get("precision") instanceof String p ? p : Precision.F32.name();
    if (!saved.equals(precision.name())) {
      throw new IllegalArgumentException("the checkpoint was trained in precision " + saved + ", this trainer trains in "
          + precision.name() + "; resume in " + saved + " or start a new run");
    }
    Object sc = s.get("scaler");
    if (scaler == null) return;
    if (!(sc instanceof Map<?, ?> m)) {
      throw new IllegalArgumentException("the checkpoint has no loss scaler state but this trainer scales its loss");
    }
    scaler.loadStateDict((Map<String, Object>) m);
    ctx.lossScale = scaler.getScale();
  }
}
