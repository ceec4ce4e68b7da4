package dev.ember.backend;

/**
 * The convolution kernel family: 2-d convolution (1-d runs as 2-d with a unit height) with groups, its
 * input and weight gradients and its bias gradient, and the transposed convolution. The backend picks the
 * strategy (GEMM over column matrices, direct or depthwise kernels) from the shapes; the caller has checked
 * them. Inputs and weights are contiguous, F32 or F64 (BF16 or F16 where {@link #readsHalf}), of one dtype; outputs
 * are allocated by the caller, contiguous from offset 0. Results do not depend on the number of threads.
 */
public interface ConvolutionKernels {
  /**
   * Whether every method here also takes operands of one BF16/F16 dtype (x, w, bias, gOut, out, dx and dw all of
   * it; {@link #channelSums} a half g): each product is accumulated in float32 and rounded once to the half dtype
   * on store, the bias added in float32 before that rounding, an input gradient's contributions summed in float32
   * and rounded once, so that the results are what widening the operands to float32, running the float32 kernels
   * and rounding their results once gives, up to the order of the products' sums (a GPU reads the halves on its
   * tensor cores). When false (the default; the CPU) the caller widens half operands to float32 and rounds the
   * results itself.
   */
  default boolean readsHalf() {
    return false;
  }

  /** A fresh handle for {@link #forward} to keep its column matrices in, for {@link #backward}. */
  SavedColumns newSavedColumns();

  /**
   * out [N, O, oh, ow] = the convolution of x [N, C, h, w] with w [O, C/groups, kh, kw] plus bias [O] (null
   * for none). Every element of out is written (it may come uninitialized). {@code keep} (or null) receives
   * the column matrices when the backend keeps them.
   */
  void forward(View x, View w, View bias, int groups, ConvGeometry g, View out, SavedColumns keep);

  /**
   * {@link #forward} followed by ReLU on every output element ({@code v <= 0 ? 0 : v}, bitwise the RELU
   * unary op), with the ReLU fused into the kernel's output epilogue, for inference (no column matrices are
   * kept). Returns false, having written nothing, when this backend has no such epilogue: the caller then
   * runs {@link #forward} and a ReLU. The default has none.
   */
  default boolean forwardRelu(View x, View w, View bias, int groups, ConvGeometry g, View out) {
    return false;
  }

  /**
   * The input gradient dx [N, C, h, w] and the weight gradient dw (shaped as w) of {@link #forward} from the
   * upstream gradient gOut [N, O, oh, ow]; either may be null when not needed. Both come zero-filled and are
   * overwritten. {@code saved} (or null) is the handle the forward pass filled.
   */
  void backward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw, SavedColumns saved);

  /**
   * out [N, O, g.h, g.w] (zero-filled by the caller unless {@link #transposedWritesAll} says it need not be) = the
   * transposed convolution of x [N, Cin, g.oh, g.ow] with w [Cin, O/groups, kh, kw], plus bias [O] (null for none).
   */
  void transposedForward(View x, View w, View bias, int groups, ConvGeometry g, View out);

  /**
   * dx and dw (either null when not needed, both zero-filled unless {@link #transposedWritesAll} says they need not
   * be) of {@link #transposedForward} from gOut.
   */
  void transposedBackward(View x, View w, View gOut, int groups, ConvGeometry g, View dx, View dw);

  /**
   * Whether {@link #transposedForward} writes every element of out, and {@link #transposedBackward} every element of
   * dx and dw, for this layer, so that the caller may pass them with contents unspecified.
   */
  default boolean transposedWritesAll(View x, View w, int groups, ConvGeometry g) {
    return false;
  }

  /**
   * The per-channel sums of g [n, c, s] (a bias gradient), each plane summed in a fixed order and the
   * planes added in double.
   */
  double[] channelSums(View g, int n, int c, int s);
}
