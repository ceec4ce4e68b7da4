package dev.ember.nn;

import dev.ember.nn.functional.Recurrent;
import dev.ember.nn.init.Init;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The shared machinery of {@link RNN}, {@link LSTM} and {@link GRU}: PyTorch's parameter layout
 * ({@code weight_ih_l{k}[_reverse]} [gates*H, in], {@code weight_hh_l{k}} [gates*H, H], biases
 * [gates*H]), gate order (LSTM i, f, g, o; GRU r, z, n), initialisation U(-1/sqrt(H), 1/sqrt(H)),
 * input layouts ([T, N, in], batch-first [N, T, in], or unbatched [T, in]) and dropout between
 * layers in training mode.
 *
 * <p>Per layer and direction the input projection of every time step is one GEMM up front; the
 * loop over time then does one small GEMM with the recurrent weight per step. LSTM and GRU layers are one op
 * each ({@link Recurrent#lstm}, {@link Recurrent#gru}: on the CPU one autograd node per layer and direction, whose
 * backward forms the weight gradients as one GEMM over all steps); RNN layers are composed from differentiable
 * core ops, so their backpropagation through time comes from the tape.
 */
public abstract class RNNBase extends Module {
  enum Mode { RNN_TANH, RNN_RELU, LSTM, GRU }

  /** The results of a recurrent forward pass; {@code cN} is null except for LSTM. */
  public record Output(Tensor output, Tensor hN, Tensor cN) {}

  private final Mode mode;
  private final int inputSize;
  private final int hiddenSize;
  private final int numLayers;
  private final boolean bias;
  private final boolean batchFirst;
  private final double dropout;
  private final boolean bidirectional;
  private final Generator gen;

  RNNBase(Mode mode, int inputSize, int hiddenSize, int numLayers, boolean bias, boolean batchFirst, double dropout,
      boolean bidirectional, Generator gen) {
    String n = name();
    if (inputSize <= 0 || hiddenSize <= 0 || numLayers <= 0) {
      throw new IllegalArgumentException(n + ": input_size, hidden_size and num_layers must be positive, got "
          + inputSize + ", " + hiddenSize + ", " + numLayers);
    }
    if (!(dropout >= 0 && dropout <= 1)) {
      throw new IllegalArgumentException(n + ": dropout must be in [0, 1], got " + dropout);
    }
    this.mode = mode;
    this.inputSize = inputSize;
    this.hiddenSize = hiddenSize;
    this.numLayers = numLayers;
    this.bias = bias;
    this.batchFirst = batchFirst;
    this.dropout = dropout;
    this.bidirectional = bidirectional;
    this.gen = gen;
    int gates = gates();
    double bound = 1 / Math.sqrt(hiddenSize);
    for (int layer = 0; layer < numLayers; layer++) {
      for (int dir = 0; dir < directions(); dir++) {
        String sfx = "_l" + layer + (dir == 1 ? "_reverse" : "");
        int in = layer == 0 ? inputSize : hiddenSize * directions();
        registerParameter("weight_ih" + sfx, Init.uniform_(Tensor.empty(gates * hiddenSize, in), -bound, bound, gen));
        registerParameter("weight_hh" + sfx, Init.uniform_(Tensor.empty(gates * hiddenSize, hiddenSize), -bound, bound, gen));
        if (bias) {
          registerParameter("bias_ih" + sfx, Init.uniform_(Tensor.empty(gates * hiddenSize), -bound, bound, gen));
          registerParameter("bias_hh" + sfx, Init.uniform_(Tensor.empty(gates * hiddenSize), -bound, bound, gen));
        }
      }
    }
  }

  private int gates() {
    return switch (mode) {
      case RNN_TANH, RNN_RELU -> 1;
      case LSTM -> 4;
      case GRU -> 3;
    };
  }

  private int directions() {
    return bidirectional ? 2 : 1;
  }

  public int hiddenSize() {
    return hiddenSize;
  }

  public int numLayers() {
    return numLayers;
  }

  /** The size of each step's input. */
  public int inputSize() {
    return inputSize;
  }

  /** Whether the input and output are [N, T, features] rather than [T, N, features]. */
  public boolean batchFirst() {
    return batchFirst;
  }

  /** Whether each layer also runs backwards over the sequence (outputs concatenated). */
  public boolean bidirectional() {
    return bidirectional;
  }

  /** Whether the layers have the bias_ih and bias_hh parameters. */
  public boolean hasBias() {
    return bias;
  }

  /** Runs the network from zero initial states and returns the output sequence. */
  @Override
  public Tensor forward(Tensor input) {
    return run(input, null, null).output();
  }

  Output run(Tensor input, Tensor h0, Tensor c0) {
    String op = name();
    boolean batched = input.dim() == 3;
    if (input.dim() != 2 && input.dim() != 3) {
      throw Check.fail(op, "input must be 3-d (" + (batchFirst ? "[N, T, input_size]" : "[T, N, input_size]")
          + ") or 2-d unbatched [T, input_size]", "input", input);
    }
    if (input.size(input.dim() - 1) != inputSize) {
      throw Check.fail(op, "input's last dimension must be input_size (" + inputSize + ")", "input", input);
    }
    Tensor x = batched ? (batchFirst ? input.transpose(0, 1) : input) : input.unsqueeze(1); // [T, N, in]
    int steps = x.size(0), batch = x.size(1);
    int[] stateShape = {numLayers * directions(), batch, hiddenSize};
    h0 = initialState(op, "h0", h0, batched, stateShape, x);
    if (mode == Mode.LSTM) c0 = initialState(op, "c0", c0, batched, stateShape, x);
    else if (c0 != null) throw new IllegalArgumentException(op + ": only LSTM takes a cell state c0");

    List<Tensor> hN = new ArrayList<>();
    List<Tensor> cN = new ArrayList<>();
    Tensor layerInput = x;
    for (int layer = 0; layer < numLayers; layer++) {
      List<Tensor> outs = new ArrayList<>();
      for (int dir = 0; dir < directions(); dir++) {
        int idx = layer * directions() + dir;
        Tensor[] res = direction(layerInput, layer, dir, h0.select(0, idx), c0 == null ? null : c0.select(0, idx));
        outs.add(res[0]);
        hN.add(res[1]);
        if (res[2] != null) cN.add(res[2]);
      }
      layerInput = outs.size() == 1 ? outs.get(0) : Tensor.cat(outs, 2);
      if (dropout > 0 && isTraining() && layer < numLayers - 1) {
        Tensor keep = Tensor.bernoulli(gen, Tensor.full(1 - dropout, layerInput.dtype(), layerInput.shape()))
            .to(layerInput.device()); // drawn on the host, as on the CPU
        layerInput = layerInput.mul(keep).div(1 - dropout);
      }
    }
    Tensor out = layerInput;
    Tensor h = Tensor.stack(hN, 0);
    Tensor c = cN.isEmpty() ? null : Tensor.stack(cN, 0);
    if (!batched) {
      out = out.squeeze(1);
      h = h.squeeze(1);
      if (c != null) c = c.squeeze(1);
    } else if (batchFirst) {
      out = out.transpose(0, 1);
    }
    return new Output(out, h, c);
  }

  private Tensor initialState(String op, String what, Tensor s, boolean batched, int[] shape, Tensor x) {
    if (s == null) return x.newZeros(shape);
    Tensor t = batched ? s : s.unsqueeze(1);
    if (!Arrays.equals(t.shape(), shape)) {
      int[] want = batched ? shape : new int[] {shape[0], shape[2]};
      throw Check.fail(op, what + " must have shape " + Arrays.toString(want), what, s, "input", x);
    }
    return t;
  }

  /** One layer in one direction over x [T, N, in]: returns {output [T, N, H], h_T, c_T or null}. */
  private Tensor[] direction(Tensor x, int layer, int dir, Tensor h, Tensor c) {
    String sfx = "_l" + layer + (dir == 1 ? "_reverse" : "");
    Tensor wIh = param("weight_ih" + sfx), wHh = param("weight_hh" + sfx);
    Tensor bIh = bias ? param("bias_ih" + sfx) : null, bHh = bias ? param("bias_hh" + sfx) : null;
    boolean reverse = dir == 1;
    int steps = x.size(0);
    int last = reverse ? 0 : steps - 1; // the step processed last holds the final state
    if (mode == Mode.LSTM) { // one op over the sequence: [T + 1, N, H], the outputs and the final cell state
      Tensor hc = Recurrent.lstm(x, h, c, wIh, wHh, bIh, bHh, reverse);
      Tensor out = hc.narrow(0, 0, steps);
      return new Tensor[] {out, hc.select(0, last), hc.select(0, steps)};
    }
    if (mode == Mode.GRU) {
      Tensor out = Recurrent.gru(x, h, wIh, wHh, bIh, bHh, reverse);
      return new Tensor[] {out, out.select(0, last), null};
    }
    int batch = x.size(1), in = x.size(2);
    // input projections of all steps at once: [T*N, in] x [in, H]
    Tensor flat = x.reshape(steps * batch, in);
    Tensor xp = (bIh == null ? flat.matmul(wIh.t()) : LinalgOps.addmm(bIh, flat, wIh.t())).reshape(steps, batch, -1);
    Tensor[] outs = new Tensor[steps];
    for (int s = 0; s < steps; s++) {
      int t = reverse ? steps - 1 - s : s;
      Tensor hp = bHh == null ? h.matmul(wHh.t()) : LinalgOps.addmm(bHh, h, wHh.t());
      h = mode == Mode.RNN_TANH ? xp.select(0, t).add(hp).tanh() : xp.select(0, t).add(hp).relu();
      outs[t] = h;
    }
    return new Tensor[] {Tensor.stack(Arrays.asList(outs), 0), h, c};
  }

  @Override
  protected String extraRepr() {
    StringBuilder sb = new StringBuilder().append(inputSize).append(", ").append(hiddenSize);
    if (numLayers != 1) sb.append(", num_layers=").append(numLayers);
    if (mode == Mode.RNN_RELU) sb.append(", nonlinearity='relu'");
    if (!bias) sb.append(", bias=False");
    if (batchFirst) sb.append(", batch_first=True");
    if (dropout != 0) sb.append(", dropout=").append(dropout);
    if (bidirectional) sb.append(", bidirectional=True");
    return sb.toString();
  }
}
