package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;

import dev.ember.nn.functional.Pooling;
import dev.ember.tensor.Tensor;

/**
 * 1-d max pooling over the last dim, as {@code nn.MaxPool1d}, of [N, C, L] or [C, L] inputs (see
 * {@link Pooling#maxPool1d(Tensor, int, Integer, int, int, boolean)}). The stride defaults to the
 * kernel size.
 */
public class MaxPool1d extends Module {
  private final int kernelSize;
  private final int stride;
  private final int padding;
  private final int dilation;
  private final boolean ceilMode;

  /** stride = kernelSize, padding 0, dilation 1, floor mode. */
  public MaxPool1d(int kernelSize) {
    this(kernelSize, null, 0, 1, false);
  }

  /** A null stride means the kernel size. */
  public MaxPool1d(int kernelSize, Integer stride, int padding, int dilation, boolean ceilMode) {
    this.kernelSize = kernelSize;
    this.stride = stride == null ? kernelSize : stride;
    this.padding = padding;
    this.dilation = dilation;
    this.ceilMode = ceilMode;
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

  public int dilation() {
    return dilation;
  }

  public boolean ceilMode() {
    return ceilMode;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Pooling.maxPool1d(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** The pooled values and the argmax indices (PyTorch's return_indices=True). */
  public Pooling.WithIndices forwardWithIndices(Tensor input) {
    return Pooling.maxPool1dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  @Override
  protected String extraRepr() {
    return "kernel_size=" + kernelSize + ", stride=" + stride + ", padding=" + padding + ", dilation=" + dilation
        + ", ceil_mode=" + bool(ceilMode);
  }
}
