package dev.ember.train;

/** The phases of one training step that the Trainer times (see {@link TrainContext#stepNanos(Phase)}). */
public enum Phase {
  /** Waiting for the loader to hand over the next batch. */
  DATA,
  /** The model's forward pass. */
  FORWARD,
  /** The loss function. */
  LOSS,
  /** {@code loss.backward()}. */
  BACKWARD,
  /** Clipping, the optimizer step and the per-batch schedule step. */
  OPTIMIZER,
  /** Every callback hook called during the step. */
  CALLBACKS
}
