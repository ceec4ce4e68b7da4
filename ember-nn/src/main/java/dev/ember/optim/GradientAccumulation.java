package dev.ember.optim;

import dev.ember.tensor.Tensor;

/**
 * Gradient accumulation over micro-batches: each micro-batch loss is divided by the number of
 * micro-batches before backward, so after {@code n} of them the accumulated gradients equal those
 * of the mean loss over the whole batch; then the optimizer steps once and the gradients are
 * cleared.
 * <pre>{@code
 * var acc = new GradientAccumulation(optimizer, 4);
 * for (Batch b : loader) {
 *   acc.backward(model.loss(b));            // (loss / 4).backward()
 *   if (acc.ready()) {
 *     GradClip.clipGradNorm(model.parameters(), 1.0);   // clip the full-batch gradient
 *     acc.step();                           // optimizer.step(); optimizer.zeroGrad()
 *     scheduler.step();
 *   }
 * }
 * }</pre>
 * A mixed-precision scaler (later) hooks in through {@link Optimizer#registerStepPreHook}.
 */
public final class GradientAccumulation {
  private final Optimizer optimizer;
  private final int microBatches;
  private int pending;

  /** @param microBatches micro-batches per optimizer step (>= 1) */
  public GradientAccumulation(Optimizer optimizer, int microBatches) {
    if (microBatches < 1) {
      throw new IllegalArgumentException("GradientAccumulation: micro_batches must be >= 1, got " + microBatches);
    }
    this.optimizer = optimizer;
    this.microBatches = microBatches;
  }

  /** Back-propagates {@code loss / microBatches}, adding to the gradients. */
  public void backward(Tensor loss) {
    if (pending == microBatches) {
      throw new IllegalStateException("GradientAccumulation: " + microBatches + " micro-batches are already accumulated;"
          + " call step() before the next backward");
    }
    (microBatches == 1 ? loss : loss.div(microBatches)).backward();
    pending++;
  }

  /** Whether a full batch has been accumulated. */
  public boolean ready() {
    return pending == microBatches;
  }

  /** Micro-batches accumulated since the last step. */
  public int pending() {
    return pending;
  }

  /** Steps the optimizer and clears the gradients when {@link #ready()}; returns whether it stepped. */
  public boolean step() {
    if (!ready()) return false;
    optimizer.step();
    optimizer.zeroGrad();
    pending = 0;
    return true;
  }
}
