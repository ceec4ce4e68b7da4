package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** x for y = 1, max(0, margin - x) for y = -1 (PyTorch's margin 1). Defaults as PyTorch; see {@link Losses}. */
public class HingeEmbeddingLoss extends Loss {
  private final double margin;

  public HingeEmbeddingLoss() {
    this(1.0, Reduction.MEAN);
  }

  public HingeEmbeddingLoss(double margin, Reduction reduction) {
    super(reduction);
    this.margin = margin;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.hingeEmbeddingLoss(input, target, margin, reduction);
  }
}
