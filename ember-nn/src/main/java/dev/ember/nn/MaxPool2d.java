package dev.ember.nn;

import static dev.ember.nn.Reprs.bool;

import dev.ember.nn.functional.Pooling;
import dev.ember.tensor.Tensor;

/**
 * 2-d max pooling, as {@code nn.MaxPool2d}, of [N, C, H, W] or [C, H, W] inputs (see
 * {@link Pooling#maxPool2d(Tensor, int[], int[], int[], int[], boolean)}). Each window parameter
 * has one value (both dims) or two (H, W), printed as PyTorch prints what was passed: an int or a
 * tuple. The stride defaults to the kernel size.
 */
public class MaxPool2d extends Module {
  private final int[] kernelSize;
  private final int[] stride;
  private final int[] padding;
  private final int[] dilation;
  private final boolean ceilMode;

  /** stride = kernelSize, padding 0, dilation 1, floor mode. */
  public MaxPool2d(int kernelSize) {
    this(kernelSize, null, 0, 1, false);
  }

  /** Square windows; a null stride means the kernel size. */
  public MaxPool2d(int kernelSize, Integer stride, int padding, int dilation, boolean ceilMode) {
    this(new int[] {kernelSize}, stride == null ? null : new int[] {stride}, new int[] {padding},
        new int[] {dilation}, ceilMode);
  }

  /** Full form: each parameter one or two values; a null stride means the kernel size. */
  public MaxPool2d(int[] kernelSize, int[] stride, int[] padding, int[] dilation, boolean ceilMode) {
    this.kernelSize = kernelSize.clone();
    this.stride = stride == null ? this.kernelSize : stride.clone();
    this.padding = padding.clone();
    this.dilation = dilation.clone();
    this.ceilMode = ceilMode;
  }

  @Override
  public Tensor forward(Tensor input) {
    return Pooling.maxPool2d(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** The pooled values and the argmax indices (PyTorch's return_indices=True). */
  public Pooling.WithIndices forwardWithIndices(Tensor input) {
    return Pooling.maxPool2dWithIndices(input, kernelSize, stride, padding, dilation, ceilMode);
  }

  /** The window size: one value for both dimensions, or (height, width), as given. */
  public int[] kernelSize() {
    return kernelSize.clone();
  }

  /** The stride: one value or (height, width), as given. */
  public int[] stride() {
    return stride.clone();
  }

  /** The implicit negative-infinity padding: one value or (height, width), as given. */
  public int[] padding() {
    return padding.clone();
  }

  /** The dilation: one value or (height, width), as given. */
  public int[] dilation() {
    return dilation.clone();
  }

  /** Whether the output size rounds up. */
  public boolean ceilMode() {
    return ceilMode;
  }

  @Override
  protected String extraRepr() {
    return "kernel_size=" + intOrTuple(kernelSize) + ", stride=" + intOrTuple(stride) + ", padding="
        + intOrTuple(padding) + ", dilation=" + intOrTuple(dilation) + ", ceil_mode=" + bool(ceilMode);
  }

  /** An int as Python prints it when one value was passed, else the tuple. */
  static String intOrTuple(int[] v) {
    return v.length == 1 ? Integer.toString(v[0]) : Reprs.tuple(v);
  }
}
