package dev.ember.nn;

import dev.ember.nn.functional.Pooling;
import dev.ember.tensor.Tensor;

/**
 * Adaptive avg pooling to a fixed output size, as {@code nn.AdaptiveAvgPool2d}, of [N, C, H, W] or
 * [C, H, W] inputs (see {@link Pooling#adaptiveAvgPool2d(Tensor, Integer, Integer)}). A null size
 * keeps the input's (PyTorch's None). Prints output_size as it was passed: an int or a tuple.
 */
public class AdaptiveAvgPool2d extends Module {
  private final Integer outH;
  private final Integer outW;
  private final boolean square;

  /** A square {@code outputSize x outputSize} output. */
  public AdaptiveAvgPool2d(int outputSize) {
    this.outH = outputSize;
    this.outW = outputSize;
    this.square = true;
  }

  /** An {@code outH x outW} output; a null size keeps the input's. */
  public AdaptiveAvgPool2d(Integer outH, Integer outW) {
    this.outH = outH;
    this.outW = outW;
    this.square = false;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Pooling.adaptiveAvgPool2d(input, outH, outW);
  }

  @Override
  protected String extraRepr() {
    return "output_size=" + (square ? String.valueOf(outH) : "(" + (outH == null ? "None" : outH) + ", "
        + (outW == null ? "None" : outW) + ")");
  }
}
