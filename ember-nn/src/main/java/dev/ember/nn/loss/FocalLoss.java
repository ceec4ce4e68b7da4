package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Multi-class focal loss over softmax probabilities, optional per-class alpha (a buffer). Defaults as PyTorch; see {@link Losses}. */
public class FocalLoss extends Loss {
  private final double gamma;
  private final int ignoreIndex;

  public FocalLoss() {
    this(null, 2.0, Losses.IGNORE_INDEX, Reduction.MEAN);
  }

  public FocalLoss(Tensor alpha, double gamma, int ignoreIndex, Reduction reduction) {
    super(reduction);
    if (alpha != null) registerBuffer("alpha", alpha);
    this.gamma = gamma;
    this.ignoreIndex = ignoreIndex;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.focalLoss(input, target, optional("alpha"), gamma, ignoreIndex, reduction);
  }
}
