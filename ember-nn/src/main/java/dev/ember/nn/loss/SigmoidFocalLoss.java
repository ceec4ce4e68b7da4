package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Binary focal loss on logits (torchvision's sigmoid_focal_loss: alpha 0.25, gamma 2). Defaults as PyTorch; see {@link Losses}. */
public class SigmoidFocalLoss extends Loss {
  private final double alpha;
  private final double gamma;

  public SigmoidFocalLoss() {
    this(0.25, 2.0, Reduction.MEAN);
  }

  public SigmoidFocalLoss(double alpha, double gamma, Reduction reduction) {
    super(reduction);
    this.alpha = alpha;
    this.gamma = gamma;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.sigmoidFocalLoss(input, target, alpha, gamma, reduction);
  }
}
