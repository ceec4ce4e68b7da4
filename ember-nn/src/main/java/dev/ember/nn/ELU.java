package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Tensor;

/** x for x &gt; 0, alpha (exp(x) - 1) otherwise; {@code inplace} writes into the input. */
public class ELU extends Module {
  private final double alpha;
  private final boolean inplace;

  public ELU() {
    this(1.0);
  }

  public ELU(double alpha) {
    this(alpha, false);
  }

  public ELU(double alpha, boolean inplace) {
    this.alpha = alpha;
    this.inplace = inplace;
  }

  public double alpha() {
    return alpha;
  }

  public boolean inplace() {
    return inplace;
  }

  @Override
  public Tensor forward(Tensor x) {
    return Activations.elu(x, alpha, inplace);
  }

  @Override
  protected String extraRepr() {
    return "alpha=" + fmt(alpha) + (inplace ? ", inplace=True" : "");
  }
}
