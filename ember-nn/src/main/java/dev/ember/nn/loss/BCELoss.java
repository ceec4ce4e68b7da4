package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Binary cross entropy on probabilities; optional element weights (a buffer). Defaults as PyTorch; see {@link Losses}. */
public class BCELoss extends Loss {

  public BCELoss() {
    this(null, Reduction.MEAN);
  }

  public BCELoss(Tensor weight, Reduction reduction) {
    super(reduction);
    if (weight != null) registerBuffer("weight", weight);
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.bceLoss(input, target, optional("weight"), reduction);
  }
}
