package dev.ember.nn;

import java.util.List;

/** A state dict that does not fit a model: the lists name every offending key. */
public final class StateDictException extends IllegalArgumentException {
  private final List<String> missingKeys;
  private final List<String> unexpectedKeys;
  private final List<String> shapeMismatches;

  public StateDictException(String message, List<String> missingKeys, List<String> unexpectedKeys,
      List<String> shapeMismatches) {
    super(message);
    this.missingKeys = List.copyOf(missingKeys);
    this.unexpectedKeys = List.copyOf(unexpectedKeys);
    this.shapeMismatches = List.copyOf(shapeMismatches);
  }

  public List<String> missingKeys() {
    return missingKeys;
  }

  public List<String> unexpectedKeys() {
    return unexpectedKeys;
  }

  /** "key: checkpoint [a, b] vs model [c, d]" for each mis-shaped key. */
  public List<String> shapeMismatches() {
    return shapeMismatches;
  }
}
