package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Soft multi-class Dice loss over softmax probabilities against one-hot targets (see Losses.diceLoss). Defaults as PyTorch; see {@link Losses}. */
public class DiceLoss extends Loss {
  private final double smooth;

  public DiceLoss() {
    this(1e-5, Reduction.MEAN);
  }

  public DiceLoss(double smooth, Reduction reduction) {
    super(reduction);
    this.smooth = smooth;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.diceLoss(input, target, smooth, reduction);
  }
}
