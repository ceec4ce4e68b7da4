package dev.ember.nn;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Long short-term memory, PyTorch's equations and gate order (i, f, g, o); see {@link RNNBase}.
 * PyTorch's proj_size is not supported.
 */
public class LSTM extends RNNBase {
  public LSTM(int inputSize, int hiddenSize) {
    this(inputSize, hiddenSize, 1, true, false, 0, false, Generator.global());
  }

  public LSTM(int inputSize, int hiddenSize, int numLayers, boolean bias, boolean batchFirst, double dropout,
      boolean bidirectional, Generator gen) {
    super(Mode.LSTM, inputSize, hiddenSize, numLayers, bias, batchFirst, dropout, bidirectional, gen);
  }

  /** Output sequence and final states from {@code h0} and {@code c0} (both null for zeros). */
  public Output forward(Tensor input, Tensor h0, Tensor c0) {
    if ((h0 == null) != (c0 == null)) throw new IllegalArgumentException("LSTM: give both h0 and c0, or neither");
    return run(input, h0, c0);
  }
}
