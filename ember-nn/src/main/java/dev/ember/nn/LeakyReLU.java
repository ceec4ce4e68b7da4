package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x for x > 0, negative_slope * x otherwise (default slope 0.01). */
public class LeakyReLU extends Module {
  private final double negativeSlope;

  public LeakyReLU() {
    this(0.01);
  }

  public LeakyReLU(double negativeSlope) {
    this.negativeSlope = negativeSlope;
  }

  public double negativeSlope() {
    return negativeSlope;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.leakyRelu(x, negativeSlope);
  }

  @Override
  protected String extraRepr() {
    return "negative_slope=" + fmt(negativeSlope);
  }
}
