package dev.ember.train.callbacks;

import dev.ember.data.Batch;
import dev.ember.train.Callback;
import dev.ember.train.TrainContext;

/** Stops training at the first batch whose loss is NaN or infinite, saying at which epoch and step. */
public final class TerminateOnNaN implements Callback {
  private long stoppedAtStep = -1;

  @Override
  public void onBatchEnd(TrainContext ctx, Batch batch, double loss) {
    if (!Double.isFinite(loss) && stoppedAtStep < 0) {
      stoppedAtStep = ctx.globalStep();
      ctx.requestStop("TerminateOnNaN: loss is " + loss + " at epoch " + ctx.epoch() + ", batch " + ctx.batchIndex()
          + " (step " + ctx.globalStep() + ")");
    }
  }

  /** The optimizer step at which it stopped training, or -1. */
  public long stoppedAtStep() {
    return stoppedAtStep;
  }
}
