package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.tensor.Generator;

/** What the dropout modules share (PyTorch's _DropoutNd): the probability, its check, the generator and the repr. */
abstract class DropoutBase extends Module {
  protected final double p;
  protected final Generator gen;

  DropoutBase(double p, Generator gen) {
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
  protected String extraRepr() {
    return "p=" + fmt(p) + ", inplace=False";
  }
}
