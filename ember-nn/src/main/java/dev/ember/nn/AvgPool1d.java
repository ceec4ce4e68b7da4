package dev.ember.nn;

import dev.ember.nn.functional.Pooling;
import dev.ember.tensor.Tensor;

/**
 * 1-d average pooling over the last dim, as {@code nn.AvgPool1d}, of [N, C, L] or [C, L] inputs
 * (see {@link Pooling#avgPool1d(Tensor, int, Integer, int, boolean, boolean)}). The stride defaults
 * to the kernel size. Prints its parameters as 1-tuples, as PyTorch does.
 */
public class AvgPool1d extends Module {
  private final int kernelSize;
  private final int stride;
  private final int padding;
  private final boolean ceilMode;
  private final boolean countIncludePad;

  /** stride = kernelSize, padding 0, floor mode, padding counted. */
  public AvgPool1d(int kernelSize) {
    this(kernelSize, null, 0, false, true);
  }

  /** A null stride means the kernel size. */
  public AvgPool1d(int kernelSize, Integer stride, int padding, boolean ceilMode, boolean countIncludePad) {
    this.kernelSize = kernelSize;
    this.stride = stride == null ? kernelSize : stride;
    this.padding = padding;
    this.ceilMode = ceilMode;
    this.countIncludePad = countIncludePad;
  }

  public int kernelSize() {
    return kernelSize;
  }

  public int stride() {
    return stride;
  }

  public int padding() {
    return padding;
  }

  public boolean ceilMode() {
    return ceilMode;
  }

  public boolean countIncludePad() {
    return countIncludePad;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Pooling.avgPool1d(input, kernelSize, stride, padding, ceilMode, countIncludePad);
  }

  @Override
  protected String extraRepr() {
    return "kernel_size=" + Reprs.tuple(kernelSize) + ", stride=" + Reprs.tuple(stride) + ", padding="
        + Reprs.tuple(padding);
  }
}
