package dev.ember.backend;

/**
 * The fused LSTM cell's element loops, between the gate nonlinearities that run through
 * {@link Backend#unary}. Views are contiguous, of one floating dtype: act [N, 4H] holds sigmoid(i, f, o)
 * and tanh(g) in PyTorch's gate order i, f, g, o; out [2, N, H] holds h' at index 0 and c' at index 1.
 */
public interface RecurrentKernels {
  /** out[1] = c' = f * c + i * g, from act [N, 4H] and the previous cell state c [N, H]. */
  void lstmCellState(View act, View c, View out);

  /** out[0] = h' = o * tanh(c'), from act [N, 4H] and tanhC = tanh(c') [N, H]. */
  void lstmCellHidden(View act, View tanhC, View out);

  /**
   * The cell's backward from the upstream gradient g [2, N, H] (of h' and c'): writes every element of
   * dGates [N, 4H] (the pre-activation gates' gradient) and dc [N, H] (the previous cell state's), from act,
   * tanhC and the previous cell state cPrev [N, H].
   */
  void lstmCellBackward(View act, View tanhC, View g, View cPrev, View dGates, View dc);
}
