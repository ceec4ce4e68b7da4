package dev.ember.nn.loss;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** Kullback-Leibler divergence with log-probability input (and target, if logTarget); BATCHMEAN is the mathematically right mean. Defaults as PyTorch; see {@link Losses}. */
public class KLDivLoss extends Loss {
  private final boolean logTarget;

  public KLDivLoss() {
    this(false, Reduction.MEAN);
  }

  public KLDivLoss(boolean logTarget, Reduction reduction) {
    super(reduction);
    this.logTarget = logTarget;
  }

  @Override
  public Tensor forward(Tensor input, Tensor target) {
    return Losses.klDiv(input, target, reduction, logTarget);
  }
}
