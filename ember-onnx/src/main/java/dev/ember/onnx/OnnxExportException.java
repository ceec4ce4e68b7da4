package dev.ember.onnx;

/**
 * A model (or one of its layers) that {@link Onnx#export} cannot express in ONNX. The message names the
 * layer by its path in the model (its state dict prefix, {@code <root>} for the model itself), its class,
 * and what stands in the way.
 */
public final class OnnxExportException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public OnnxExportException(String message) {
    super(message);
  }
}
