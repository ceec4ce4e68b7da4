package dev.ember.train.callbacks;

import dev.ember.train.Callback;
import dev.ember.train.TrainContext;

/**
 * Stops training at the first batch whose loss or gradients hold a NaN or an infinity, saying at
 * which epoch, batch and step, before that batch's step reaches the parameters: the loss and the gradients (one read of each) are checked after each backward
 * pass, before clipping, and the stop it asks for there cancels the step (see
 * {@link TrainContext#requestStop}). The model keeps the weights of the last good step, and no
 * checkpoint is written after it. When the trainer scales the loss (F16), only the loss is checked: an Inf
 * gradient is the scaler's overflow, which it skips. To ride out a few bad batches instead of stopping at the first,
 * use {@code Trainer.builder().skipNonFiniteSteps(n)}.
 */
public final class TerminateOnNaN implements Callback {
  private long stoppedAtStep = -1;

  @Override
  public void onAfterBackward(TrainContext ctx) {
    if (stoppedAtStep >= 0) return;
    double loss = ctx.batchLoss();
    if (!Double.isFinite(loss)) {
      stop(ctx, "loss is " + loss);
      return;
    }
    // with a loss scaler (F16) an Inf gradient is an overflow of the scaled loss, which the scaler skips
    if (!Double.isNaN(ctx.lossScale())) return;
    // before clipping, which would spread one NaN over every gradient and hide where it came from
    String param = ctx.firstNonFiniteGradient();
    if (param != null) stop(ctx, "the gradient of " + param + " is not finite (loss " + loss + ")");
  }

  private void stop(TrainContext ctx, String what) {
    if (stoppedAtStep >= 0) return;
    stoppedAtStep = ctx.globalStep();
    ctx.requestStop("TerminateOnNaN: " + what + " at epoch " + ctx.epoch() + ", batch " + ctx.batchIndex()
        + " (after step " + ctx.globalStep() + "); the step was not taken");
  }

  /** The optimizer steps taken when it stopped training (the bad step not among them), or -1. */
  public long stoppedAtStep() {
    return stoppedAtStep;
  }
}
