package dev.ember.nn;

import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Element dropout, as {@code nn.Dropout}: in training each element is zeroed with probability
 * {@code p} and the rest scaled by 1 / (1 - p); in eval the identity. The mask is drawn from the
 * module's generator (the global one unless given).
 */
public class Dropout extends DropoutBase {
  /** p = 0.5. */
  public Dropout() {
    this(0.5);
  }

  public Dropout(double p) {
    this(p, Generator.global());
  }

  public Dropout(double p, Generator gen) {
    super(p, gen);
  }

  /** With {@code inplace}, training multiplies the input by the mask in place and returns it. */
  public Dropout(double p, boolean inplace) {
    this(p, inplace, Generator.global());
  }

  public Dropout(double p, boolean inplace, Generator gen) {
    super(p, inplace, gen);
  }

  @Override
  public Tensor forward(Tensor input) {
    return Dropouts.dropout(input, p, isTraining(), inplace, gen);
  }
}
