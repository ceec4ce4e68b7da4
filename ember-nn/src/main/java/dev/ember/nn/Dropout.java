package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Element dropout, as {@code nn.Dropout}: in training each element is zeroed with probability
 * {@code p} and the rest scaled by 1 / (1 - p); in eval the identity. The mask is drawn from the
 * module's generator (the global one unless given).
 */
public class Dropout extends Module {
  private final double p;
  private final Generator gen;

  /** p = 0.5. */
  public Dropout() {
    this(0.5);
  }

  public Dropout(double p) {
    this(p, Generator.global());
  }

  public Dropout(double p, Generator gen) {
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
    return Dropouts.dropout(input, p, isTraining(), gen);
  }

  @Override
  protected String extraRepr() {
    return "p=" + fmt(p) + ", inplace=False";
  }
}
