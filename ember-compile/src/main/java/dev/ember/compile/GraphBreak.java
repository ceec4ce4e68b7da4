package dev.ember.compile;

/**
 * An op a trace could not capture, and why: {@code item()} (its value goes into Java, so what follows may depend on
 * it), or an op without a trace hook whose result the traced forward used.
 *
 * @param op the op's name
 * @param reason why it cannot be captured
 * @param where the module (dotted name, "" for the compiled one) whose forward met it
 */
public record GraphBreak(String op, String reason, String where) {
  @Override
  public String toString() {
    return (where.isEmpty() ? "" : where + ": ") + op + ": " + reason;
  }
}
