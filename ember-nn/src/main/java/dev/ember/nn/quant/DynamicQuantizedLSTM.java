package dev.ember.nn.quant;

import dev.ember.autograd.Grad;
import dev.ember.nn.LSTM;
import dev.ember.nn.Module;
import dev.ember.nn.RNNBase;
import dev.ember.nn.functional.Recurrent;
import dev.ember.tensor.Check;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * An LSTM with int8 weights for inference, as {@code torch.ao.nn.quantized.dynamic.LSTM}: the input and hidden
 * projections {@code weight_ih_l{k}} and {@code weight_hh_l{k}} (and their {@code _reverse} twins) are quantized once,
 * per output channel, symmetric qint8; each call quantizes the activations per tensor (affine qint8 over their
 * range, as {@link DynamicQuantizedLinear}): the whole input sequence of a layer for its input projection, which is
 * one GEMM over every time step as on torch's CPU path, and the hidden state of each step for the recurrent one. The
 * gates, the cell state and the outputs stay float32 (the same fused cell as {@link LSTM}). Eval mode, no dropout
 * and no gradient: an inference module.
 *
 * <p>State (buffers, in the state dict): for each layer and direction {@code SFX} ({@code _l0}, {@code _l0_reverse},
 * ...) {@code weight_ih SFX} (I8 [4H, in]), {@code weight_ih SFX _scale} (F32 [4H]), {@code weight_ih SFX
 * _zero_point} (I32 [4H], 0), the same three for {@code weight_hh SFX} (I8 [4H, H]), and with bias {@code bias_ih
 * SFX} and {@code bias_hh SFX} (F32 [4H]). Gate order i, f, g, o, as the float LSTM.
 */
public class DynamicQuantizedLSTM extends Module {
  private static final String OP = "DynamicQuantizedLSTM";

  private final int inputSize;
  private final int hiddenSize;
  private final int numLayers;
  private final boolean bias;
  private final boolean batchFirst;
  private final boolean bidirectional;
  /** [layer * directions + dir][0 = ih, 1 = hh]. */
  private final Int8Linear[][] linears;

  /** The quantized version of a trained LSTM (its weights as they are now); its dropout does not apply in eval. */
  public static DynamicQuantizedLSTM from(LSTM lstm) {
    return new DynamicQuantizedLSTM(lstm);
  }

  private DynamicQuantizedLSTM(LSTM lstm) {
    this.inputSize = lstm.inputSize();
    this.hiddenSize = lstm.hiddenSize();
    this.numLayers = lstm.numLayers();
    this.bias = lstm.hasBias();
    this.batchFirst = lstm.batchFirst();
    this.bidirectional = lstm.bidirectional();
    int dirs = directions();
    this.linears = new Int8Linear[numLayers * dirs][];
    for (int layer = 0; layer < numLayers; layer++) {
      for (int dir = 0; dir < dirs; dir++) {
        String sfx = "_l" + layer + (dir == 1 ? "_reverse" : "");
        Tensor bIh = bias ? lstm.param("bias_ih" + sfx) : null;
        Tensor bHh = bias ? lstm.param("bias_hh" + sfx) : null;
        linears[layer * dirs + dir] = new Int8Linear[] {
            Int8Linear.register(this, OP, "weight_ih" + sfx, lstm.param("weight_ih" + sfx), "bias_ih" + sfx, bIh),
            Int8Linear.register(this, OP, "weight_hh" + sfx, lstm.param("weight_hh" + sfx), "bias_hh" + sfx, bHh)};
      }
    }
    eval();
  }

  private int directions() {
    return bidirectional ? 2 : 1;
  }

  public int inputSize() {
    return inputSize;
  }

  public int hiddenSize() {
    return hiddenSize;
  }

  public int numLayers() {
    return numLayers;
  }

  public boolean batchFirst() {
    return batchFirst;
  }

  public boolean bidirectional() {
    return bidirectional;
  }

  public boolean hasBias() {
    return bias;
  }

  /**
   * The int8 weight {@code name} ({@code weight_ih_l0}, {@code weight_hh_l1_reverse}, ...) with its per-row scales,
   * read from the buffers.
   */
  public dev.ember.quant.QTensor weight(String name) {
    for (Int8Linear[] pair : linears) {
      for (Int8Linear l : pair) if (l.weightKey.equals(name)) return l.weight(this);
    }
    throw new IllegalArgumentException(OP + ": no quantized weight '" + name + "'");
  }

  @Override
  protected void checkState(String prefix, Map<String, Tensor> state) {
    for (Int8Linear[] pair : linears) {
      for (Int8Linear l : pair) l.checkState(prefix, state);
    }
  }

  /** Runs from zero initial states and returns the output sequence. */
  @Override
  public Tensor forward(Tensor input) {
    return forward(input, null, null).output();
  }

  /** Output sequence and final states from {@code h0} and {@code c0} (both null for zeros), as {@link LSTM}. */
  public RNNBase.Output forward(Tensor input, Tensor h0, Tensor c0) {
    if ((h0 == null) != (c0 == null)) throw new IllegalArgumentException(OP + ": give both h0 and c0, or neither");
    if (input.dim() != 2 && input.dim() != 3) {
      throw Check.fail(OP, "input must be 3-d (" + (batchFirst ? "[N, T, input_size]" : "[T, N, input_size]")
          + ") or 2-d unbatched [T, input_size]", "input", input);
    }
    if (input.size(input.dim() - 1) != inputSize) {
      throw Check.fail(OP, "input's last dimension must be input_size (" + inputSize + ")", "input", input);
    }
    if (!input.dtype().isFloatingPoint()) {
      throw Check.fail(OP, "input must be floating point, got " + input.dtype(), "input", input);
    }
    boolean batched = input.dim() == 3;
    try (Grad ignored = Grad.off()) {
      Tensor x = batched ? (batchFirst ? input.transpose(0, 1) : input) : input.unsqueeze(1); // [T, N, in]
      int steps = x.size(0);
      int batch = x.size(1);
      int dirs = directions();
      int[] stateShape = {numLayers * dirs, batch, hiddenSize};
      Tensor h = state("h0", h0, batched, stateShape, input);
      Tensor c = state("c0", c0, batched, stateShape, input);
      List<Tensor> hN = new ArrayList<>();
      List<Tensor> cN = new ArrayList<>();
      Tensor layerInput = x.to(dev.ember.tensor.DType.F32);
      for (int layer = 0; layer < numLayers; layer++) {
        List<Tensor> outs = new ArrayList<>();
        for (int dir = 0; dir < dirs; dir++) {
          int idx = layer * dirs + dir;
          Tensor[] res = direction(layerInput, linears[idx], dir, h.select(0, idx), c.select(0, idx), input);
          outs.add(res[0]);
          hN.add(res[1]);
          cN.add(res[2]);
        }
        layerInput = outs.size() == 1 ? outs.get(0) : Tensor.cat(outs, 2);
      }
      Tensor out = layerInput;
      Tensor hOut = Tensor.stack(hN, 0);
      Tensor cOut = Tensor.stack(cN, 0);
      if (!batched) {
        out = out.squeeze(1);
        hOut = hOut.squeeze(1);
        cOut = cOut.squeeze(1);
      } else if (batchFirst) {
        out = out.transpose(0, 1).contiguous();
      }
      return new RNNBase.Output(out, hOut, cOut);
    }
  }

  private Tensor state(String what, Tensor s, boolean batched, int[] shape, Tensor input) {
    if (s == null) return Tensor.zeros(shape);
    Tensor t = batched ? s : s.unsqueeze(1);
    if (!Arrays.equals(t.shape(), shape)) {
      int[] want = batched ? shape : new int[] {shape[0], shape[2]};
      throw Check.fail(OP, what + " must have shape " + Arrays.toString(want), what, s, "input", input);
    }
    return t.to(dev.ember.tensor.DType.F32);
  }

  /** One layer in one direction over x [T, N, in]: {output [T, N, H], h_T, c_T}. */
  private Tensor[] direction(Tensor x, Int8Linear[] w, int dir, Tensor h, Tensor c, Tensor input) {
    int steps = x.size(0);
    int batch = x.size(1);
    int g = 4 * hiddenSize;
    // the input projection of every step at once, its activations quantized over the whole sequence
    float[] xp = w[0].apply(this, OP, input, x.contiguous().toFloatArray(), steps * batch);
    Tensor[] outs = new Tensor[steps];
    for (int s = 0; s < steps; s++) {
      int t = dir == 0 ? s : steps - 1 - s;
      float[] gates = w[1].apply(this, OP, input, h.contiguous().toFloatArray(), batch);
      for (int i = 0; i < gates.length; i++) gates[i] += xp[t * batch * g + i];
      Tensor hc = Recurrent.lstmCell(Tensor.of(gates, batch, g), c); // [2, N, H]: h', c'
      h = hc.select(0, 0);
      c = hc.select(0, 1);
      outs[t] = h;
    }
    return new Tensor[] {Tensor.stack(Arrays.asList(outs), 0), h, c};
  }

  @Override
  protected String extraRepr() {
    StringBuilder sb = new StringBuilder().append(inputSize).append(", ").append(hiddenSize);
    if (numLayers != 1) sb.append(", num_layers=").append(numLayers);
    if (!bias) sb.append(", bias=False");
    if (batchFirst) sb.append(", batch_first=True");
    if (bidirectional) sb.append(", bidirectional=True");
    return sb.append(", dtype=qint8").toString();
  }
}
