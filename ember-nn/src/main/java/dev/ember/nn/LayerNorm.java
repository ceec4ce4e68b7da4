package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;
import static dev.ember.nn.Reprs.fmt;
import static dev.ember.nn.Reprs.tuple;

import dev.ember.nn.functional.Normalization;
import dev.ember.tensor.Tensor;

/**
 * Layer normalization over the trailing dims {@code normalized_shape}, as {@code nn.LayerNorm}:
 * with {@code elementwise_affine}, parameters {@code weight} (ones) and, unless {@code bias} is
 * false, {@code bias} (zeros), each of shape normalized_shape.
 */
public class LayerNorm extends Module {
  private final int[] normalizedShape;
  private final double eps;
  private final boolean elementwiseAffine;

  /** Normalizes the last dimension of size {@code normalizedShape}, eps 1e-5, with weight and bias. */
  public LayerNorm(int normalizedShape) {
    this(new int[] {normalizedShape}, 1e-5, true, true);
  }

  public LayerNorm(int[] normalizedShape) {
    this(normalizedShape, 1e-5, true, true);
  }

  public LayerNorm(int[] normalizedShape, double eps, boolean elementwiseAffine, boolean bias) {
    for (int d : normalizedShape) {
      if (d <= 0) {
        throw new IllegalArgumentException("LayerNorm: normalized_shape must be positive sizes, got " + tuple(normalizedShape));
      }
    }
    if (!(eps >= 0)) throw new IllegalArgumentException("LayerNorm: eps must be >= 0, got " + eps);
    this.normalizedShape = normalizedShape.clone();
    this.eps = eps;
    this.elementwiseAffine = elementwiseAffine;
    registerParameter("weight", elementwiseAffine ? Tensor.ones(normalizedShape) : null);
    registerParameter("bias", elementwiseAffine && bias ? Tensor.zeros(normalizedShape) : null);
  }

  public int[] normalizedShape() {
    return normalizedShape.clone();
  }

  public double eps() {
    return eps;
  }

  /** The weight, or null without elementwise_affine. */
  public Tensor weight() {
    return param("weight");
  }

  /** The bias, or null without elementwise_affine or bias. */
  public Tensor bias() {
    return param("bias");
  }

  @Override
  public Tensor forward(Tensor input) {
    return Normalization.layerNorm(input, normalizedShape, weight(), bias(), eps);
  }

  @Override
  protected String extraRepr() {
    return tuple(normalizedShape) + ", eps=" + fmt(eps) + ", elementwise_affine=" + bool(elementwiseAffine);
  }
}
