package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Mean absolute error. Defaults as PyTorch; see {@link Losses}. */
public class L1Loss extends Loss {

  public L1Loss() {
    this(Reduction.MEAN);
  }

  public L1Loss(Reduction reduction) {
    super(reduction);
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.l1Loss(input, target, reduction);
  }
}
