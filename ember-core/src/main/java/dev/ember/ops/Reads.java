package dev.ember.ops;

/**
 * What an op's backward rule reads besides the upstream gradient. Only what it reads is kept alive (and
 * version-checked) until backward: {@code exp}'s backward reads its output, so an in-place change of its input
 * after the forward does not fail it.
 */
public enum Reads {
  /** Neither inputs nor output (add, neg, reshape, sum, ...), or the op has no gradient. */
  NOTHING,
  /** Some of its inputs (mul, sin, log, gather's index, ...). */
  INPUTS,
  /** Its output only (exp, tanh, sigmoid, softmax, ...). */
  OUTPUT,
  /** Inputs and output (elu, pow, amax, prod, ...). */
  INPUTS_AND_OUTPUT;

  /** Whether the backward reads any input. */
  public boolean input() {
    return this == INPUTS || this == INPUTS_AND_OUTPUT;
  }

  /** Whether the backward reads the output. */
  public boolean output() {
    return this == OUTPUT || this == INPUTS_AND_OUTPUT;
  }
}
