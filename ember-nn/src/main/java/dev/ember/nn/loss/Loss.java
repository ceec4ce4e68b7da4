package dev.ember.nn.loss;

import dev.ember.nn.Module;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/**
 * A loss as a module (PyTorch's {@code nn.*Loss}): holds its reduction and hyperparameters; class
 * weights are buffers, so they follow {@code to(dtype)} and are saved in state dicts. The
 * computation is the function of the same name in {@link dev.ember.nn.functional.Losses}.
 */
public abstract class Loss extends Module {
  protected final Reduction reduction;

  protected Loss(Reduction reduction) {
    if (reduction == null) throw new IllegalArgumentException(getClass().getSimpleName() + ": reduction must not be null");
    this.reduction = reduction;
  }

  public Reduction reduction() {
    return reduction;
  }

  /** The loss of {@code input} against {@code target}. */
  public abstract Tensor forward(Tensor input, Tensor target);

  /** The optional buffer {@code name}, or null. */
  protected Tensor optional(String name) {
    return hasBuffer(name) ? buffer(name) : null;
  }
}
