package dev.ember.train;

import java.nio.file.Path;
import java.util.Locale;

/**
 * Thrown by {@link Trainer#fit} when {@link Trainer.Builder#skipNonFiniteSteps(int)} is on and that
 * many optimizer steps in a row had a non-finite loss or gradient. None of them reached the
 * parameters, the optimizer's state or a checkpoint: the model holds the weights of the last good
 * step, and {@link #lastCheckpoint()} (the newest checkpoint the trainer wrote or resumed from) is
 * the place to continue from, e.g. with a lower learning rate or after fixing the data. The
 * message reads
 * <pre>
 * Trainer: 3 consecutive non-finite steps (the last at epoch 2, batch 17, after step 1200: loss=NaN,
 * first non-finite gradient in conv1.weight); stopping. The last good checkpoint is runs/x/checkpoints/step-00001200.ckpt
 * </pre>
 */
public final class NonFiniteStepException extends RuntimeException {
  private final int consecutive;
  private final int epoch;
  private final int batchIndex;
  private final long step;
  private final double loss;
  private final String parameter;
  private final transient Path lastCheckpoint;

  NonFiniteStepException(int consecutive, int epoch, int batchIndex, long step, double loss, String parameter,
      Path lastCheckpoint) {
    super(message(consecutive, epoch, batchIndex, step, loss, parameter, lastCheckpoint));
    this.consecutive = consecutive;
    this.epoch = epoch;
    this.batchIndex = batchIndex;
    this.step = step;
    this.loss = loss;
    this.parameter = parameter;
    this.lastCheckpoint = lastCheckpoint;
  }

  private static String message(int consecutive, int epoch, int batchIndex, long step, double loss, String parameter,
      Path lastCheckpoint) {
    return String.format(Locale.ROOT, "Trainer: %d consecutive non-finite step%s (the last at epoch %d, batch %d, after step %d:"
        + " loss=%s, %s); stopping. %s", consecutive, consecutive == 1 ? "" : "s", epoch, batchIndex, step, loss,
        parameter == null ? "every gradient finite" : "first non-finite gradient in " + parameter,
        lastCheckpoint == null ? "No checkpoint was written before it." : "The last good checkpoint is " + lastCheckpoint);
  }

  /** How many steps in a row were non-finite (the limit given to the builder). */
  public int consecutive() {
    return consecutive;
  }

  /** The epoch (from 1) of the last non-finite step. */
  public int epoch() {
    return epoch;
  }

  /** The batch (within its epoch, from 0) that ended the last non-finite step. */
  public int batchIndex() {
    return batchIndex;
  }

  /** Optimizer steps taken (skipped ones do not count): the parameters are those after this many. */
  public long step() {
    return step;
  }

  /** The loss of the last non-finite step's batch (its first non-finite one under accumulation). */
  public double loss() {
    return loss;
  }

  /** The first parameter, in {@code namedParameters()} order, whose gradient is not finite, or null if none is. */
  public String parameter() {
    return parameter;
  }

  /** The newest checkpoint written (or resumed from) before the stop, or null. */
  public Path lastCheckpoint() {
    return lastCheckpoint;
  }
}
