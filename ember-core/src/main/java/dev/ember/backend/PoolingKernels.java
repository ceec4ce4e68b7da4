package dev.ember.backend;

/**
 * The pooling kernel family: max and average pooling over windows that two {@link PoolAxis} tables
 * describe, so plain, padded, dilated, ceil-mode and adaptive pooling share one kernel each, and their
 * gradients. Inputs are contiguous [planes, h.in, w.in] in F32 or F64; outputs are allocated by the caller,
 * contiguous from offset 0. Every plane is computed in a fixed order, so results do not depend on the
 * number of threads.
 */
public interface PoolingKernels {
  /**
   * out [planes, h.out, w.out] = the window maxima of x and, when {@code argmax} (I32, out's size) is not
   * null, the plane-local flat index {@code ih * w.in + iw} of each maximum. As PyTorch: the first maximum
   * wins ties, and a NaN in the window is the result (the last NaN's index).
   */
  void maxForward(View x, int planes, PoolAxis h, PoolAxis w, View out, View argmax);

  /**
   * The input gradient of a max pooling: each upstream value of g [planes, outPlane] is added to dx
   * [planes, inPlane] (zero-filled by the caller) at its window's argmax.
   */
  void maxBackward(View g, View argmax, int planes, int inPlane, int outPlane, View dx);

  /**
   * Whether {@link #maxBackward(View, View, int, PoolAxis, PoolAxis, View)} over these windows writes every element
   * of dx itself, so that the caller may pass one whose contents are unspecified.
   */
  default boolean maxBackwardWritesAll(PoolAxis h, PoolAxis w) {
    return false;
  }

  /**
   * {@link #maxBackward(View, View, int, int, int, View)} for the windows of h and w: dx [planes, h.in, w.in] is
   * zero-filled by the caller unless {@link #maxBackwardWritesAll} says it need not be.
   */
  default void maxBackward(View g, View argmax, int planes, PoolAxis h, PoolAxis w, View dx) {
    maxBackward(g, argmax, planes, h.in() * w.in(), h.out() * w.out(), dx);
  }

  /**
   * out [planes, h.out, w.out] = the window averages of x: the sum over the in-bounds taps (in double)
   * divided by {@code h.div[oh] * w.div[ow]}; an empty window gives 0.
   */
  void avgForward(View x, int planes, PoolAxis h, PoolAxis w, View out);

  /**
   * The input gradient of an average pooling: each upstream value of g divided by its window's divisor is
   * added to every in-bounds tap of the window in dx [planes, h.in, w.in] (zero-filled by the caller).
   */
  void avgBackward(View g, int planes, PoolAxis h, PoolAxis w, View dx);
}
