package dev.ember.quant;

/**
 * The two 8-bit quantized element types, as PyTorch's {@code torch.qint8} (signed, -128..127) and
 * {@code torch.quint8} (unsigned, 0..255). Both are stored one value per byte; {@link QTensor#value} reads a
 * byte as signed or unsigned by this type.
 */
public enum QDType {
  QINT8("qint8", -128, 127),
  QUINT8("quint8", 0, 255);

  private final String torchName;
  private final int min;
  private final int max;

  QDType(String torchName, int min, int max) {
    this.torchName = torchName;
    this.min = min;
    this.max = max;
  }

  public String torchName() {
    return torchName;
  }

  /** Smallest representable value (-128 or 0). */
  public int min() {
    return min;
  }

  /** Largest representable value (127 or 255). */
  public int max() {
    return max;
  }

  /** The integer value a stored byte holds. */
  public int read(byte b) {
    return this == QINT8 ? b : b & 0xFF;
  }
}
