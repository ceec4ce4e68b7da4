package dev.ember.nn.loss;

import dev.ember.nn.Module;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** max(0, -y (x1 - x2) + margin). Defaults as PyTorch; see {@link Losses}. It takes three inputs. */
public class MarginRankingLoss extends Module {
  private final double margin;
  private final Reduction reduction;

  public MarginRankingLoss() {
    this(0.0, Reduction.MEAN);
  }

  public MarginRankingLoss(double margin, Reduction reduction) {
    if (reduction == null) throw new IllegalArgumentException("MarginRankingLoss: reduction must not be null");
    this.margin = margin;
    this.reduction = reduction;
  }

  public Tensor forward(Tensor input1, Tensor input2, Tensor target) {
    return Losses.marginRankingLoss(input1, input2, target, margin, reduction);
  }
}
