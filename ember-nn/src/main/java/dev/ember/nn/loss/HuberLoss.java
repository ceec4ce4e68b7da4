package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Huber loss with threshold delta (PyTorch's delta 1). Defaults as PyTorch; see {@link Losses}. */
public class HuberLoss extends Loss {
  private final double delta;

  public HuberLoss() {
    this(1.0, Reduction.MEAN);
  }

  public HuberLoss(double delta, Reduction reduction) {
    super(reduction);
    this.delta = delta;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.huberLoss(input, target, reduction, delta);
  }
}
