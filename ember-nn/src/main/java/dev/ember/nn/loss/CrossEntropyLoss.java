package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Cross entropy on logits against class indices or probabilities; class weights, ignore_index and label smoothing as PyTorch. Defaults as PyTorch; see {@link Losses}. */
public class CrossEntropyLoss extends Loss {
  private final int ignoreIndex;
  private final double labelSmoothing;

  public CrossEntropyLoss() {
    this(null, Losses.IGNORE_INDEX, 0.0, Reduction.MEAN);
  }

  public CrossEntropyLoss(Tensor weight, int ignoreIndex, double labelSmoothing, Reduction reduction) {
    super(reduction);
    if (weight != null) registerBuffer("weight", weight);
    this.ignoreIndex = ignoreIndex;
    this.labelSmoothing = labelSmoothing;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.crossEntropy(input, target, optional("weight"), ignoreIndex, reduction, labelSmoothing);
  }
}
