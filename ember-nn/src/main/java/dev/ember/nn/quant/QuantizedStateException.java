package dev.ember.nn.quant;

/**
 * A state dict entry that cannot be a quantized layer's state: wrong dtype, a scale that is not positive and
 * finite, a zero point out of range. {@link #key()} names the entry (as in the state dict, e.g.
 * {@code fc1.weight_scale}).
 */
public final class QuantizedStateException extends IllegalArgumentException {
  private final String key;

  public QuantizedStateException(String key, String message) {
    super(key + ": " + message);
    this.key = key;
  }

  /** The state dict key of the offending entry. */
  public String key() {
    return key;
  }
}
