package dev.ember.nn;

import dev.ember.nn.functional.Dropouts;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Channel dropout, as {@code nn.Dropout2d}: in training each channel of a [N, C, H, W] (or
 * unbatched [C, H, W]) input is zeroed with probability {@code p} and the rest scaled by
 * 1 / (1 - p); in eval the identity.
 */
public class Dropout2d extends DropoutBase {
  /** p = 0.5. */
  public Dropout2d() {
    this(0.5);
  }

  public Dropout2d(double p) {
    this(p, Generator.global());
  }

  public Dropout2d(double p, Generator gen) {
    super(p, gen);
  }

  /** With {@code inplace}, training multiplies the input by the mask in place and returns it. */
  public Dropout2d(double p, boolean inplace) {
    this(p, inplace, Generator.global());
  }

  public Dropout2d(double p, boolean inplace, Generator gen) {
    super(p, inplace, gen);
  }

  @Override
  public Tensor forward(Tensor input) {
    return Dropouts.dropout2d(input, p, isTraining(), inplace, gen);
  }
}
