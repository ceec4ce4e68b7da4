package dev.ember.nn;

import dev.ember.nn.functional.Pooling;
import dev.ember.tensor.Tensor;

/**
 * 2-d average pooling, as {@code nn.AvgPool2d}, of [N, C, H, W] or [C, H, W] inputs (see
 * {@link Pooling#avgPool2d(Tensor, int[], int[], int[], boolean, boolean, Integer)}). PyTorch's
 * defaults: stride = kernel size, padding 0, floor mode, count_include_pad true, no divisor
 * override. Prints kernel_size, stride and padding only, as PyTorch does.
 */
public class AvgPool2d extends Module {
  private final int[] kernelSize;
  private final int[] stride;
  private final int[] padding;
  private final boolean ceilMode;
  private final boolean countIncludePad;
  private final Integer divisorOverride;

  /** stride = kernelSize, padding 0, floor mode, padding counted. */
  public AvgPool2d(int kernelSize) {
    this(kernelSize, null, 0, false, true, null);
  }

  /** Square windows; a null stride means the kernel size, a null divisorOverride none. */
  public AvgPool2d(int kernelSize, Integer stride, int padding, boolean ceilMode, boolean countIncludePad,
      Integer divisorOverride) {
    this(new int[] {kernelSize}, stride == null ? null : new int[] {stride}, new int[] {padding}, ceilMode,
        countIncludePad, divisorOverride);
  }

  /** Full form: each window parameter one or two values; a null stride means the kernel size. */
  public AvgPool2d(int[] kernelSize, int[] stride, int[] padding, boolean ceilMode, boolean countIncludePad,
      Integer divisorOverride) {
    this.kernelSize = kernelSize.clone();
    this.stride = stride == null ? this.kernelSize : stride.clone();
    this.padding = padding.clone();
    this.ceilMode = ceilMode;
    this.countIncludePad = countIncludePad;
    this.divisorOverride = divisorOverride;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Pooling.avgPool2d(input, kernelSize, stride, padding, ceilMode, countIncludePad, divisorOverride);
  }

  /** The window size: one value for both dimensions, or (height, width), as given. */
  public int[] kernelSize() {
    return kernelSize.clone();
  }

  /** The stride: one value or (height, width), as given. */
  public int[] stride() {
    return stride.clone();
  }

  /** The implicit zero padding: one value or (height, width), as given. */
  public int[] padding() {
    return padding.clone();
  }

  /** Whether the output size rounds up. */
  public boolean ceilMode() {
    return ceilMode;
  }

  /** Whether the zero padding counts in the divisor. */
  public boolean countIncludePad() {
    return countIncludePad;
  }

  /** The divisor used instead of the window's size, or null. */
  public Integer divisorOverride() {
    return divisorOverride;
  }

  @Override
  protected String extraRepr() {
    return "kernel_size=" + MaxPool2d.intOrTuple(kernelSize) + ", stride=" + MaxPool2d.intOrTuple(stride)
        + ", padding=" + MaxPool2d.intOrTuple(padding);
  }
}
