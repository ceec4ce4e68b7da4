package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.tensor.Generator;

/** What the dropout modules share (PyTorch's _DropoutNd): the probability, its check, the generator and the repr. */
abstract class DropoutBase extends Module {
  protected final double p;
  protected final Generator gen;
  /** Whether training multiplies the input in place (as {@code inplace=True}). */
  protected final boolean inplace;

  DropoutBase(double p, Generator gen) {
    this(p, false, gen);
  }

  DropoutBase(double p, boolean inplace, Generator gen) {
    if (!(p >= 0 && p <= 1)) {
      throw new IllegalArgumentException(name() + ": dropout probability has to be between 0 and 1, but got " + p);
    }
    this.p = p;
    this.gen = gen;
    this.inplace = inplace;
  }

  public double p() {
    return p;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  protected String extraRepr() {
    return "p=" + fmt(p) + ", inplace=" + (inplace ? "True" : "False");
  }
}
