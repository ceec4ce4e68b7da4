package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Quadratic below beta, linear above (PyTorch's beta 1). Defaults as PyTorch; see {@link Losses}. */
public class SmoothL1Loss extends Loss {
  private final double beta;

  public SmoothL1Loss() {
    this(1.0, Reduction.MEAN);
  }

  public SmoothL1Loss(double beta, Reduction reduction) {
    super(reduction);
    this.beta = beta;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.smoothL1Loss(input, target, reduction, beta);
  }
}
