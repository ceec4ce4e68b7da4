package dev.ember.nn.loss;

import dev.ember.nn.Module;
import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.Tensor;

/** max(d(a, p) - d(a, n) + margin, 0) with the p-norm distance (PyTorch: margin 1, p 2, eps 1e-6, no swap). Defaults as PyTorch; see {@link Losses}. It takes three inputs. */
public class TripletMarginLoss extends Module {
  private final double margin;
  private final double p;
  private final double eps;
  private final boolean swap;
  private final Reduction reduction;

  public TripletMarginLoss() {
    this(1.0, 2.0, 1e-6, false, Reduction.MEAN);
  }

  public TripletMarginLoss(double margin, double p, double eps, boolean swap, Reduction reduction) {
    if (reduction == null) throw new IllegalArgumentException("TripletMarginLoss: reduction must not be null");
    this.margin = margin;
    this.p = p;
    this.eps = eps;
    this.swap = swap;
    this.reduction = reduction;
  }

  public Tensor forward(Tensor anchor, Tensor positive, Tensor negative) {
    return Losses.tripletMarginLoss(anchor, positive, negative, margin, p, eps, swap, reduction);
  }
}
