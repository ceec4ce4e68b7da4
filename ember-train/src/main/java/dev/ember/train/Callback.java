package dev.ember.train;

import dev.ember.data.Batch;
import java.util.Map;

/**
 * Hooks the {@link Trainer} calls around every phase of training. Every method has an empty
 * default, so a callback overrides only what it needs. Callbacks run on the training thread in
 * the order they were given to the Trainer.
 *
 * <p>A callback that keeps state across steps (a best score, a patience counter, open files'
 * positions) returns it from {@link #stateDict()} so that a checkpoint can carry it and a resumed
 * run continues exactly; values must be numbers, strings, booleans, {@code double[]},
 * {@code long[]}, lists or maps of those, or tensors.
 */
public interface Callback {
  default void onTrainBegin(TrainContext ctx) {}

  default void onTrainEnd(TrainContext ctx) {}

  default void onEpochBegin(TrainContext ctx) {}

  /** After the epoch's last batch and its validation (if one ran); {@code ctx.logs()} holds the epoch's values. */
  default void onEpochEnd(TrainContext ctx) {}

  default void onBatchBegin(TrainContext ctx, Batch batch) {}

  /** After the optimizer step of this batch (or after backward, for a batch that only accumulates). */
  default void onBatchEnd(TrainContext ctx, Batch batch, double loss) {}

  /** Gradients of this batch are in the parameters' {@code grad()}. */
  default void onAfterBackward(TrainContext ctx) {}

  /** Gradients are final (accumulated and clipped); the optimizer is about to step. */
  default void onBeforeOptimizerStep(TrainContext ctx) {}

  default void onValidationBegin(TrainContext ctx) {}

  /** {@code metrics} holds the validation values just computed (keys prefixed {@code val_}). */
  default void onValidationEnd(TrainContext ctx, Map<String, Double> metrics) {}

  /** Training is failing with {@code error}; it is re-thrown after every callback has seen it. */
  default void onException(TrainContext ctx, Throwable error) {}

  /** The state to carry in a checkpoint (empty by default). */
  default Map<String, Object> stateDict() {
    return Map.of();
  }

  /** Restores what {@link #stateDict()} returned. */
  default void loadStateDict(Map<String, Object> state) {}

  /** The key under which this callback's state is stored in a checkpoint; unique among a trainer's callbacks. */
  default String stateKey() {
    return getClass().getSimpleName();
  }
}
