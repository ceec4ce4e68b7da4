package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Binary cross entropy on logits, computed stably; optional weight and pos_weight (buffers). Defaults as PyTorch; see {@link Losses}. */
public class BCEWithLogitsLoss extends Loss {

  public BCEWithLogitsLoss() {
    this(null, null, Reduction.MEAN);
  }

  public BCEWithLogitsLoss(Tensor weight, Tensor posWeight, Reduction reduction) {
    super(reduction);
    if (weight != null) registerBuffer("weight", weight);
    if (posWeight != null) registerBuffer("pos_weight", posWeight);
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.bceWithLogits(input, target, optional("weight"), reduction, optional("pos_weight"));
  }
}
