package dev.ember.nn.loss;

import dev.ember.nn.Module;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** 1 - cos(x1, x2) for y = 1, max(0, cos(x1, x2) - margin) for y = -1. Defaults as PyTorch; see {@link Losses}. It takes three inputs. */
public class CosineEmbeddingLoss extends Module {
  private final double margin;
  private final Reduction reduction;

  public CosineEmbeddingLoss() {
    this(0.0, Reduction.MEAN);
  }

  public CosineEmbeddingLoss(double margin, Reduction reduction) {
    if (reduction == null) throw new IllegalArgumentException("CosineEmbeddingLoss: reduction must not be null");
    this.margin = margin;
    this.reduction = reduction;
  }

  public Tensor forward(Tensor input1, Tensor input2, Tensor target) {
    return Losses.cosineEmbeddingLoss(input1, input2, target, margin, reduction);
  }
}
