package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;
import static dev.ember.nn.Reprs.fmt;
import static dev.ember.nn.Reprs.tuple;

import dev.ember.nn.functional.Normalization;
import dev.ember.tensor.Tensor;

/**
 * RMS normalization over the trailing dims {@code normalized_shape}, {@code x / sqrt(mean(x^2) +
 * eps) * weight}, as {@code nn.RMSNorm} (PyTorch 2.4): {@code eps} null means the machine epsilon of
 * the input's dtype; with {@code elementwise_affine} a {@code weight} of ones.
 */
public class RMSNorm extends Module {
  private final int[] normalizedShape;
  private final Double eps;
  private final boolean elementwiseAffine;

  /** Over the last dimension of size {@code normalizedShape}, eps null, with a weight. */
  public RMSNorm(int normalizedShape) {
    this(new int[] {normalizedShape}, null, true);
  }

  public RMSNorm(int[] normalizedShape, Double eps, boolean elementwiseAffine) {
    for (int d : normalizedShape) {
      if (d <= 0) {
        throw new IllegalArgumentException("RMSNorm: normalized_shape must be positive sizes, got " + tuple(normalizedShape));
      }
    }
    if (eps != null && !(eps >= 0)) throw new IllegalArgumentException("RMSNorm: eps must be >= 0 or null, got " + eps);
    this.normalizedShape = normalizedShape.clone();
    this.eps = eps;
    this.elementwiseAffine = elementwiseAffine;
    registerParameter("weight", elementwiseAffine ? Tensor.ones(normalizedShape) : null);
  }

  public int[] normalizedShape() {
    return normalizedShape.clone();
  }

  /** eps, or null for the input dtype's machine epsilon. */
  public Double eps() {
    return eps;
  }

  /** The weight, or null without elementwise_affine. */
  public Tensor weight() {
    return param("weight");
  }

  @Override
  public Tensor forward(Tensor input) {
    return Normalization.rmsNorm(input, normalizedShape, weight(), eps);
  }

  @Override
  protected String extraRepr() {
    return tuple(normalizedShape) + ", eps=" + fmt(eps) + ", elementwise_affine=" + bool(elementwiseAffine);
  }
}
