package dev.ember.tensor;

import java.util.List;

/**
 * A caller passed arguments an op cannot use (shapes, dtypes, axes, values). The message follows
 * {@code <op>: <what is wrong> (<values>): <operand>=<shape>, ...[; hint: <fix>]}; the op name is
 * also kept as a field so callers and tests need not parse it.
 */
public class TensorArgumentException extends IllegalArgumentException {
  private final String op;
  private final List<int[]> shapes;

  public TensorArgumentException(String op, String message, List<int[]> shapes) {
    super(message);
    this.op = op;
    this.shapes = List.copyOf(shapes);
  }

  /** The op that rejected its arguments. */
  public String op() {
    return op;
  }

  /** The operand shapes named in the message, in order. */
  public List<int[]> shapes() {
    return shapes;
  }
}
