package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Channel dropout, as {@code nn.Dropout2d}: in training each channel of a [N, C, H, W] (or
 * unbatched [C, H, W]) input is zeroed with probability {@code p} and the rest scaled by
 * 1 / (1 - p); in eval the identity.
 */
public class Dropout2d extends Module {
  private final double p;
  private final Generator gen;

  /** p = 0.5. */
  public Dropout2d() {
    this(0.5);
  }

  public Dropout2d(double p) {
    this(p, Generator.global());
  }

  public Dropout2d(double p, Generator gen) {
    if (!(p >= 0 && p <= 1)) {
      throw new IllegalArgumentException(name() + ": dropout probability has to be between 0 and 1, but got " + p);
    }
    this.p = p;
    this.gen = gen;
  }

  public double p() {
    return p;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Dropouts.dropout2d(input, p, isTraining(), gen);
  }

  @Override
  protected String extraRepr() {
    return "p=" + fmt(p) + ", inplace=False";
  }
}
