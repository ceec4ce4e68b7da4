package dev.ember.train;

import dev.ember.nn.Module;
import dev.ember.optim.Optimizer;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What callbacks see of a running fit: the model and optimizer, where training stands (epoch,
 * batch, optimizer step), the latest logged values, the history, and the time each phase of the
 * last step took. A callback stops training with {@link #requestStop(String)}.
 */
public final class TrainContext {
  private final Module model;
  private final Optimizer optimizer;
  private final History history;
  private final int maxEpochs;
  private final long maxSteps;
  final long[] stepNanos = new long[Phase.values().length];
  final LinkedHashMap<String, Double> logs = new LinkedHashMap<>();
  int epoch;
  int batchIndex;
  int batchesPerEpoch;
  long globalStep;
  long samplesSeen;
  boolean validating;
  String stopReason;
  int accumulation = 1;
  double batchLoss = Double.NaN;
  boolean stepSkipped;
  long skippedSteps;
  double lossScale = Double.NaN;
  final java.util.List<PendingCheckpoint> pendingCheckpoints = new java.util.ArrayList<>();
  /** The memory budget's plan (its measured peak updated after every step), or null without a budget. */
  dev.ember.train.summary.MemoryPlan memoryPlan;

  /** A checkpoint asked for during a hook, written once every callback has run that hook. */
  record PendingCheckpoint(java.nio.file.Path file, Runnable afterCommit) {}

  TrainContext(Module model, Optimizer optimizer, History history, int maxEpochs, long maxSteps) {
    this.model = model;
    this.optimizer = optimizer;
    this.history = history;
    this.maxEpochs = maxEpochs;
    this.maxSteps = maxSteps;
  }

  public Module model() {
    return model;
  }

  public Optimizer optimizer() {
    return optimizer;
  }

  public History history() {
    return history;
  }

  /** The current epoch, counting from 1 (0 before the first epoch begins). */
  public int epoch() {
    return epoch;
  }

  /** The epoch limit ({@code Integer.MAX_VALUE} when only steps limit training). */
  public int maxEpochs() {
    return maxEpochs;
  }

  /** The optimizer-step limit ({@code Long.MAX_VALUE} when only epochs limit training). */
  public long maxSteps() {
    return maxSteps;
  }

  /** Index of the current batch within its epoch, from 0. */
  public int batchIndex() {
    return batchIndex;
  }

  /** Batches in one epoch of the training loader (-1 if unknown). */
  public int batchesPerEpoch() {
    return batchesPerEpoch;
  }

  /** Optimizer steps taken so far. */
  public long globalStep() {
    return globalStep;
  }

  /** Training samples consumed so far. */
  public long samplesSeen() {
    return samplesSeen;
  }

  /**
   * The loss of the current batch, from the forward pass on (NaN before it): what {@code
   * onAfterBackward} and {@code onBeforeOptimizerStep} callbacks check before the step lands.
   */
  public double batchLoss() {
    return batchLoss;
  }

  /**
   * Whether the optimizer step that the current batch ended was skipped because its loss or a
   * gradient was not finite ({@link Trainer.Builder#skipNonFiniteSteps}), or because the loss scaler found
   * its gradients overflowed ({@link #lossScale()}); valid in {@code onBatchEnd}.
   * No optimizer or schedule step was taken and {@link #globalStep()} did not advance.
   */
  public boolean stepSkipped() {
    return stepSkipped;
  }

  /**
   * The loss scale of a run that scales its loss (F16 {@link Trainer.Precision}, or a {@link dev.ember.optim.GradScaler}
   * given to the builder), as updated after the last step; NaN when the loss is not scaled. While it is scaled,
   * the gradients seen in {@code onAfterBackward} are multiplied by it (they are unscaled before clipping and
   * {@code onBeforeOptimizerStep}), and an Inf among them is an overflow the scaler skips, not a failure.
   */
  public double lossScale() {
    return lossScale;
  }

  /** Optimizer steps skipped so far in the run (checkpoints carry the count), see {@link #stepSkipped()}. */
  public long skippedSteps() {
    return skippedSteps;
  }

  /**
   * The name ({@link Module#namedParameters()}) of the first parameter whose gradient holds a NaN
   * or an infinity, or null when every gradient is finite: one read of each gradient.
   */
  public String firstNonFiniteGradient() {
    return NonFinite.firstNonFiniteGradient(model.namedParameters());
  }

  /** True while validation runs (eval mode, no tape). */
  public boolean isValidating() {
    return validating;
  }

  /**
   * The latest value of everything logged: {@code loss} (running mean of the epoch so far),
   * {@code lr}, training metrics, and {@code val_*} after a validation.
   */
  public Map<String, Double> logs() {
    return java.util.Collections.unmodifiableMap(logs);
  }

  /** Logs {@code value} as {@code key} now: into {@link #logs()} and the history. */
  public void log(String key, double value) {
    logs.put(key, value);
    history.log(key, epoch, globalStep, value);
  }

  /** Nanoseconds each {@link Phase} took in the last completed step. */
  public long stepNanos(Phase phase) {
    return stepNanos[phase.ordinal()];
  }

  /** Batches whose gradients are summed before each optimizer step (1: none). */
  public int accumulation() {
    return accumulation;
  }

  /**
   * Sets the number of batches accumulated per optimizer step, from the next step on (the
   * trainer finishes the step in progress first). The loss of each batch is divided by it, so the
   * accumulated gradient is that of the mean loss.
   */
  public void setAccumulation(int batches) {
    if (batches < 1) throw new IllegalArgumentException("TrainContext.setAccumulation: batches must be >= 1, got " + batches);
    accumulation = batches;
  }

  /**
   * Asks for a checkpoint of the whole training state in {@code file}. It is written when every
   * callback has finished the current hook (so the state includes what they all did in it), and
   * {@code afterCommit} (may be null) runs once the file is safely on disk: delete older files
   * there, never before.
   */
  public void requestCheckpoint(java.nio.file.Path file, Runnable afterCommit) {
    if (file == null) throw new IllegalArgumentException("TrainContext.requestCheckpoint: file is null");
    pendingCheckpoints.add(new PendingCheckpoint(file, afterCommit));
  }

  /**
   * Asks the trainer to stop after the current batch; the reason is kept and logged. Asked before
   * the batch's optimizer step (in {@code onBatchBegin}, {@code onAfterBackward} or {@code
   * onBeforeOptimizerStep}), it also cancels that step: the gradients are dropped, so a callback
   * that sees a bad loss or gradient there stops training before it reaches the parameters.
   */
  public void requestStop(String reason) {
    if (stopReason == null) stopReason = reason;
  }

  /**
   * The plan of {@link Trainer.Builder#memoryBudget(long)}: the checkpointed segments, the predicted peak and the
   * largest peak measured so far; null without a budget.
   */
  public dev.ember.train.summary.MemoryPlan memoryPlan() {
    return memoryPlan;
  }

  /** The reason given to {@link #requestStop(String)}, or null while training goes on. */
  public String stopReason() {
    return stopReason;
  }
}
