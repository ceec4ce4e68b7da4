package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Poly-1 loss: cross entropy + epsilon (1 - p_t). Defaults as PyTorch; see {@link Losses}. */
public class PolyLoss extends Loss {
  private final double epsilon;
  private final double labelSmoothing;
  private final int ignoreIndex;

  public PolyLoss() {
    this(1.0, 0.0, Losses.IGNORE_INDEX, Reduction.MEAN);
  }

  public PolyLoss(double epsilon, double labelSmoothing, int ignoreIndex, Reduction reduction) {
    super(reduction);
    this.epsilon = epsilon;
    this.labelSmoothing = labelSmoothing;
    this.ignoreIndex = ignoreIndex;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.polyLoss(input, target, epsilon, labelSmoothing, ignoreIndex, reduction);
  }
}
