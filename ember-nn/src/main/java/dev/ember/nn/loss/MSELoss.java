package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Mean squared error. Defaults as PyTorch; see {@link Losses}. */
public class MSELoss extends Loss {

  public MSELoss() {
    this(Reduction.MEAN);
  }

  public MSELoss(Reduction reduction) {
    super(reduction);
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.mseLoss(input, target, reduction);
  }
}
