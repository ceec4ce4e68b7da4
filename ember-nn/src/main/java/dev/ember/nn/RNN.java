package dev.ember.nn;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/** Elman RNN, h_t = act(W_ih x_t + b_ih + W_hh h_{t-1} + b_hh) with act tanh or relu; see {@link RNNBase}. */
public class RNN extends RNNBase {
  private final String nonlinearity;

  public RNN(int inputSize, int hiddenSize) {
    this(inputSize, hiddenSize, 1, "tanh", true, false, 0, false, Generator.global());
  }

  /** {@code nonlinearity} is "tanh" or "relu". */
  public RNN(int inputSize, int hiddenSize, int numLayers, String nonlinearity, boolean bias, boolean batchFirst,
      double dropout, boolean bidirectional, Generator gen) {
    super(mode(nonlinearity), inputSize, hiddenSize, numLayers, bias, batchFirst, dropout, bidirectional, gen);
    this.nonlinearity = nonlinearity;
  }

  /** "tanh" or "relu". */
  public String nonlinearity() {
    return nonlinearity;
  }

  private static Mode mode(String nonlinearity) {
    return switch (nonlinearity) {
      case "tanh" -> Mode.RNN_TANH;
      case "relu" -> Mode.RNN_RELU;
      default -> throw new IllegalArgumentException("RNN: nonlinearity must be 'tanh' or 'relu', got '" + nonlinearity + "'");
    };
  }

  /** Output sequence and final hidden state from initial state {@code h0} (null for zeros). */
  public Output forward(Tensor input, Tensor h0) {
    return run(input, h0, null);
  }
}
