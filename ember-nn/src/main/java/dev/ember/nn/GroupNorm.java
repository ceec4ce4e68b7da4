package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;
import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Normalization;
import dev.ember.tensor.Tensor;

/**
 * Group normalization of a [N, C, *] input, as {@code nn.GroupNorm}: the C = num_channels channels
 * are split into num_groups groups, each normalized over its channels and positions; with
 * {@code affine}, per-channel {@code weight} (ones) and {@code bias} (zeros).
 */
public class GroupNorm extends Module {
  private final int numGroups;
  private final int numChannels;
  private final double eps;
  private final boolean affine;

  /** eps 1e-5, affine. */
  public GroupNorm(int numGroups, int numChannels) {
    this(numGroups, numChannels, 1e-5, true);
  }

  public GroupNorm(int numGroups, int numChannels, double eps, boolean affine) {
    if (numGroups <= 0 || numChannels <= 0 || numChannels % numGroups != 0) {
      throw new IllegalArgumentException("GroupNorm: num_channels must be divisible by num_groups, got num_groups="
          + numGroups + ", num_channels=" + numChannels);
    }
    if (!(eps >= 0)) throw new IllegalArgumentException("GroupNorm: eps must be >= 0, got " + eps);
    this.numGroups = numGroups;
    this.numChannels = numChannels;
    this.eps = eps;
    this.affine = affine;
    registerParameter("weight", affine ? Tensor.ones(numChannels) : null);
    registerParameter("bias", affine ? Tensor.zeros(numChannels) : null);
  }

  public int numGroups() {
    return numGroups;
  }

  public int numChannels() {
    return numChannels;
  }

  public double eps() {
    return eps;
  }

  /** The weight, or null without affine. */
  public Tensor weight() {
    return param("weight");
  }

  /** The bias, or null without affine. */
  public Tensor bias() {
    return param("bias");
  }

  @Override
  public Tensor forward(Tensor input) {
    return Normalization.groupNorm(input, numGroups, weight(), bias(), eps);
  }

  @Override
  protected String extraRepr() {
    return numGroups + ", " + numChannels + ", eps=" + fmt(eps) + ", affine=" + bool(affine);
  }
}
