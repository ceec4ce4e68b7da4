package dev.ember.nn;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Gated recurrent unit, PyTorch's equations (gate order r, z, n; the reset gate multiplies the
 * recurrent projection including its bias); see {@link RNNBase}.
 */
public class GRU extends RNNBase {
  public GRU(int inputSize, int hiddenSize) {
    this(inputSize, hiddenSize, 1, true, false, 0, false, Generator.global());
  }

  public GRU(int inputSize, int hiddenSize, int numLayers, boolean bias, boolean batchFirst, double dropout,
      boolean bidirectional, Generator gen) {
    super(Mode.GRU, inputSize, hiddenSize, numLayers, bias, batchFirst, dropout, bidirectional, gen);
  }

  /** Output sequence and final hidden state from initial state {@code h0} (null for zeros). */
  public Output forward(Tensor input, Tensor h0) {
    return run(input, h0, null);
  }
}
