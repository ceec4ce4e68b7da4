package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x for x &gt; 0, negative_slope * x otherwise (default slope 0.01); {@code inplace} writes into the input. */
public class LeakyReLU extends Module {
  private final double negativeSlope;
  private final boolean inplace;

  public LeakyReLU() {
    this(0.01);
  }

  public LeakyReLU(double negativeSlope) {
    this(negativeSlope, false);
  }

  public LeakyReLU(double negativeSlope, boolean inplace) {
    this.negativeSlope = negativeSlope;
    this.inplace = inplace;
  }

  public double negativeSlope() {
    return negativeSlope;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.leakyRelu(x, negativeSlope, inplace);
  }

  @Override
  protected String extraRepr() {
    return "negative_slope=" + fmt(negativeSlope) + (inplace ? ", inplace=True" : "");
  }
}
