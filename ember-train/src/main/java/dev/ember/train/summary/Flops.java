package dev.ember.train.summary;

import dev.ember.nn.AdaptiveAvgPool2d;
import dev.ember.nn.AdaptiveMaxPool2d;
import dev.ember.nn.AvgPool1d;
import dev.ember.nn.AvgPool2d;
import dev.ember.nn.BatchNorm1d;
import dev.ember.nn.BatchNorm2d;
import dev.ember.nn.Bilinear;
import dev.ember.nn.Conv1d;
import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvTranspose2d;
import dev.ember.nn.Dropout;
import dev.ember.nn.Dropout2d;
import dev.ember.nn.ELU;
import dev.ember.nn.Embedding;
import dev.ember.nn.Flatten;
import dev.ember.nn.GELU;
import dev.ember.nn.GroupNorm;
import dev.ember.nn.Hardswish;
import dev.ember.nn.Identity;
import dev.ember.nn.LayerNorm;
import dev.ember.nn.LeakyReLU;
import dev.ember.nn.LearnedPositionalEmbedding;
import dev.ember.nn.Linear;
import dev.ember.nn.LogSoftmax;
import dev.ember.nn.MaxPool1d;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Mish;
import dev.ember.nn.Module;
import dev.ember.nn.ModuleDict;
import dev.ember.nn.ModuleList;
import dev.ember.nn.MultiheadAttention;
import dev.ember.nn.RMSNorm;
import dev.ember.nn.RNNBase;
import dev.ember.nn.ReLU;
import dev.ember.nn.Residual;
import dev.ember.nn.Sequential;
import dev.ember.nn.SiLU;
import dev.ember.nn.Sigmoid;
import dev.ember.nn.SinusoidalPositionalEncoding;
import dev.ember.nn.Softmax;
import dev.ember.nn.Softplus;
import dev.ember.nn.Tanh;
import dev.ember.nn.Transformer;
import dev.ember.nn.TransformerDecoder;
import dev.ember.nn.TransformerDecoderLayer;
import dev.ember.nn.TransformerEncoder;
import dev.ember.nn.TransformerEncoderLayer;
import dev.ember.nn.Unflatten;
import dev.ember.nn.Upsample;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.OptionalLong;

/**
 * Forward FLOPs of one module call, from its configuration and the shapes of its inputs and
 * output. A multiply-add counts as 2 FLOPs; a transcendental function (exp, log, tanh, erf) as 1.
 * Only the work the module does itself is counted: a container's children are counted on their
 * own rows. The rules, per type ({@code N} = elements of the output unless said otherwise):
 *
 * <ul>
 *   <li>Linear: {@code 2 * in * out * rows}, plus {@code out * rows} for the bias ({@code rows}:
 *       the output's elements over {@code out}). Bilinear: {@code (2 * in1 * in2 + 2 * in1)} per
 *       output element, plus 1 for the bias.
 *   <li>Conv1d, Conv2d: {@code 2 * (Cin / groups) * kernel elements} per output element, i.e.
 *       {@code 2 * Cin/groups * kh * kw * Cout * Hout * Wout * batch}, plus N for the bias.
 *       ConvTranspose2d: {@code 2 * (Cout / groups) * kh * kw} per input element, plus N.
 *   <li>BatchNorm1d/2d: 2 per element when using running statistics (the per-channel scale and
 *       shift folded); with batch statistics (training) 6 per element (4 for mean and variance,
 *       2 to normalise) plus 1 each for the weight and the bias. LayerNorm, GroupNorm: 6 per
 *       element plus 1 each for weight and bias. RMSNorm: 3 per element plus 1 for the weight.
 *   <li>Activations, per element: ReLU 1, LeakyReLU 2, ELU 4, Sigmoid 4, Hardswish 4, Softplus 3,
 *       Tanh 5, SiLU 5, GELU 8, Mish 9; Softmax and LogSoftmax 5 (max, subtract, exp, sum, divide
 *       or subtract).
 *   <li>Pooling: max pools 1 comparison per input element (exact for windows that do not
 *       overlap, the usual {@code stride = kernel}); average pools 1 add per input element plus 1
 *       divide per output element; adaptive pools likewise.
 *   <li>Upsample: nearest 0; (bi/tri)linear {@code 3 * (2^d - 1)} per output element (one
 *       3-FLOP lerp per pair of neighbours, {@code d} spatial dimensions); bicubic
 *       {@code 2 * 4^d} per output element.
 *   <li>Dropout: 0 in eval mode, 2 per element in training. Identity, Flatten, Unflatten,
 *       Embedding (a gather): 0. Positional encodings: 1 per element (the add).
 *   <li>RNN, LSTM, GRU, per time step, sample, layer and direction: {@code 2 * G * H * (in + H)} for
 *       the two projections, {@code 2 * G * H} for the biases, and 6 per gate element for the
 *       projection sum, the nonlinearity and the state update ({@code G} = 1, 4, 3 gates).
 *   <li>MultiheadAttention (its output projection is the child {@code out_proj}): the q, k and v
 *       projections ({@code 2 * E * E} per token each, plus {@code E} for the bias), the scores
 *       {@code 2 * L * S * E} per sample, their scaling {@code H * L * S}, softmax
 *       {@code 5 * H * L * S} and the weighted sum of values {@code 2 * L * S * E}.
 *   <li>Residual: N (the add). TransformerEncoderLayer: 2 N for the residual adds plus 1 per
 *       element of the feed-forward hidden layer for its activation (counted as ReLU);
 *       TransformerDecoderLayer: 3 N plus the same.
 *   <li>Sequential, ModuleList, ModuleDict, TransformerEncoder/Decoder, Transformer: 0.
 * </ul>
 *
 * <p>A leaf module of any other type is unknown: {@link #of} returns empty and the summary shows
 * "?". A container of another type (a user's model class) is counted as 0: tensor operations its
 * own {@code forward} runs between children are not seen.
 */
public final class Flops {
  private Flops() {}

  /**
   * The forward FLOPs of {@code module} called on {@code inputs} with result {@code output}, or
   * empty when the module's type is not known.
   */
  public static OptionalLong of(Module module, List<Tensor> inputs, Tensor output) {
    long n = output.numel();
    Tensor in = inputs.isEmpty() ? output : inputs.get(0);
    long flops;
    switch (module) {
      case Linear m -> {
        Tensor w = m.param("weight");
        long out = w.size(0);
        long rows = out == 0 ? 0 : n / out;
        flops = 2L * w.size(1) * out * rows + (m.hasParam("bias") ? n : 0);
      }
      case Bilinear m -> {
        Tensor w = m.param("weight");
        flops = n * (2L * w.size(1) * w.size(2) + 2L * w.size(1)) + (m.hasParam("bias") ? n : 0);
      }
      case Conv1d m -> flops = 2L * elementsPerRow(m.param("weight")) * n + (m.hasParam("bias") ? n : 0);
      case Conv2d m -> flops = 2L * elementsPerRow(m.param("weight")) * n + (m.hasParam("bias") ? n : 0);
      case ConvTranspose2d m -> flops = 2L * elementsPerRow(m.param("weight")) * in.numel() + (m.hasParam("bias") ? n : 0);
      case BatchNorm1d m -> flops = batchNorm(m, n);
      case BatchNorm2d m -> flops = batchNorm(m, n);
      case LayerNorm m -> flops = n * (6 + affine(m));
      case GroupNorm m -> flops = n * (6 + affine(m));
      case RMSNorm m -> flops = n * (3 + (m.hasParam("weight") ? 1 : 0));
      case ReLU m -> flops = n;
      case LeakyReLU m -> flops = 2 * n;
      case ELU m -> flops = 4 * n;
      case Sigmoid m -> flops = 4 * n;
      case Hardswish m -> flops = 4 * n;
      case Softplus m -> flops = 3 * n;
      case Tanh m -> flops = 5 * n;
      case SiLU m -> flops = 5 * n;
      case GELU m -> flops = 8 * n;
      case Mish m -> flops = 9 * n;
      case Softmax m -> flops = 5 * n;
      case LogSoftmax m -> flops = 5 * n;
      case MaxPool1d m -> flops = in.numel();
      case MaxPool2d m -> flops = in.numel();
      case AdaptiveMaxPool2d m -> flops = in.numel();
      case AvgPool1d m -> flops = in.numel() + n;
      case AvgPool2d m -> flops = in.numel() + n;
      case AdaptiveAvgPool2d m -> flops = in.numel() + n;
      case Upsample m -> flops = upsample(m, output);
      case Dropout m -> flops = m.isTraining() ? 2 * n : 0;
      case Dropout2d m -> flops = m.isTraining() ? 2 * n : 0;
      case Identity m -> flops = 0;
      case Flatten m -> flops = 0;
      case Unflatten m -> flops = 0;
      case Embedding m -> flops = 0;
      case LearnedPositionalEmbedding m -> flops = n;
      case SinusoidalPositionalEncoding m -> flops = n;
      case RNNBase m -> flops = recurrent(m, in);
      case MultiheadAttention m -> flops = attention(m, inputs.isEmpty() ? List.of(output) : inputs);
      case Residual m -> flops = n;
      case TransformerEncoderLayer m -> flops = 2 * n + feedForwardHidden(m, n);
      case TransformerDecoderLayer m -> flops = 3 * n + feedForwardHidden(m, n);
      case Sequential m -> flops = 0;
      case ModuleList m -> flops = 0;
      case ModuleDict m -> flops = 0;
      case TransformerEncoder m -> flops = 0;
      case TransformerDecoder m -> flops = 0;
      case Transformer m -> flops = 0;
      default -> {
        if (module.namedChildren().isEmpty()) return OptionalLong.empty();
        flops = 0;
      }
    }
    return OptionalLong.of(flops);
  }

  /** Elements of a weight per output row: all dimensions but the first ({@code Cin/groups * kh * kw}). */
  private static long elementsPerRow(Tensor w) {
    long e = 1;
    for (int d = 1; d < w.dim(); d++) e *= w.size(d);
    return e;
  }

  private static int affine(Module m) {
    return (m.hasParam("weight") ? 1 : 0) + (m.hasParam("bias") ? 1 : 0);
  }

  private static long batchNorm(Module m, long n) {
    boolean runningStats = !m.isTraining() && m.hasBuffer("running_mean");
    return runningStats ? 2 * n : n * (6 + affine(m));
  }

  private static long upsample(Upsample m, Tensor output) {
    // the mode is part of the module's PyTorch repr: Upsample(scale_factor=2.0, mode='bilinear')
    String repr = m.toString();
    int d = Math.max(1, output.dim() - 2);
    if (repr.contains("mode='nearest") || !repr.contains("mode=")) return 0;
    if (repr.contains("mode='bicubic'")) return output.numel() * 2L * (1L << (2 * d));
    return output.numel() * 3L * ((1L << d) - 1);
  }

  private static long recurrent(RNNBase m, Tensor input) {
    long flops = 0;
    int hidden = m.hiddenSize();
    long inputSize = m.param("weight_ih_l0").size(1);
    for (int layer = 0; layer < m.numLayers(); layer++) {
      for (String sfx : new String[] {"_l" + layer, "_l" + layer + "_reverse"}) {
        if (!m.hasParam("weight_ih" + sfx)) continue;
        Tensor wih = m.param("weight_ih" + sfx);
        long gateRows = wih.size(0); // G * H
        long steps = input.numel() / inputSize; // T * N
        long perStep = 2 * gateRows * (wih.size(1) + hidden) + 6 * gateRows;
        if (m.hasParam("bias_ih" + sfx)) perStep += 2 * gateRows;
        flops += steps * perStep;
      }
    }
    return flops;
  }

  private static long attention(MultiheadAttention m, List<Tensor> inputs) {
    Tensor q = inputs.get(0);
    Tensor kv = inputs.size() > 1 ? inputs.get(1) : q;
    long e = m.embedDim();
    long h = m.numHeads();
    long batch = q.dim() == 3 ? q.size(m.batchFirst() ? 0 : 1) : 1;
    long qTokens = q.numel() / e; // L * N
    long kvTokens = kv.numel() / e; // S * N
    boolean bias = m.hasParam("in_proj_bias");
    long projections = (2 * e * e + (bias ? e : 0)) * (qTokens + 2 * kvTokens);
    long lsn = qTokens * (kvTokens / Math.max(1, batch)); // L * S * N
    return projections + 2 * lsn * e + h * lsn + 5 * h * lsn + 2 * lsn * e;
  }

  private static long feedForwardHidden(Module layer, long outputElements) {
    long dModel = layer.child("linear1").param("weight").size(1);
    long dff = layer.child("linear1").param("weight").size(0);
    return outputElements / dModel * dff;
  }
}
