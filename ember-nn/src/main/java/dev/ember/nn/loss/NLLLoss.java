package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Negative log likelihood on log-probabilities; class weights and ignore_index. Defaults as PyTorch; see {@link Losses}. */
public class NLLLoss extends Loss {
  private final int ignoreIndex;

  public NLLLoss() {
    this(null, Losses.IGNORE_INDEX, Reduction.MEAN);
  }

  public NLLLoss(Tensor weight, int ignoreIndex, Reduction reduction) {
    super(reduction);
    if (weight != null) registerBuffer("weight", weight);
    this.ignoreIndex = ignoreIndex;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.nllLoss(input, target, optional("weight"), ignoreIndex, reduction);
  }
}
