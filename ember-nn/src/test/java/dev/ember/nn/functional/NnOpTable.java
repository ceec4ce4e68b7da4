package dev.ember.nn.functional;

import static dev.ember.ops.OpInfo.op;

import dev.ember.nn.functional.Attention.Kernel;
import dev.ember.ops.OpInfo;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.Arr;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * ember-nn's op table: every nn op (convolution, padding, pooling, interpolation, normalization, attention,
 * losses, embedding, the LSTM cell, dropout) with samples, an oracle where one is cheap to write (the others are
 * checked against PyTorch in the FixtureTests), and error cases with their exact messages. Entries are keyed to
 * the op's definition in {@link NnOps} by name; a variant is named {@code op:variant}. {@link NnOpTableTest}
 * generates the checks from them with core's {@code OpChecks}.
 */
public final class NnOpTable {
  private NnOpTable() {}

  public static Stream<OpInfo> all() {
    return build().stream();
  }

  static Stream<OpInfo> differentiable() {
    return build().stream().filter(OpInfo::differentiable);
  }

  static List<OpInfo> build() {
    List<OpInfo> t = new ArrayList<>();
    ConvPoolEntries.add(t);
    norms(t);
    attention(t);
    embeddingRecurrentDropout(t);
    LossEntries.add(t);
    for (OpInfo o : t) { // a variant op:variant tests the definition op
      int colon = o.name().indexOf(':');
      if (colon > 0) o.def(o.name().substring(0, colon));
    }
    return t;
  }

  private static int[] a(int... v) {
    return v;
  }

  /** Group norm over [N, C, *]: each (n, group) row normalized, then {@code * w + b} per channel. */
  private static Arr groupNorm(Arr x, int groups, Arr w, Arr b) {
    int n = x.shape()[0];
    int c = x.shape()[1];
    int s = x.numel() / Math.max(1, n * c);
    Arr y = NnRef.rowNorm(x, c / groups * s, null, null, 1e-5, false);
    for (int i = 0; i < y.numel(); i++) {
      int ch = i / s % c;
      if (w != null) y.data()[i] *= w.data()[ch];
      if (b != null) y.data()[i] += b.data()[ch];
    }
    return y;
  }

  /** Training batch norm of [N, C, *]: each channel normalized with its batch mean and biased variance. */
  private static Arr batchNormTrain(Arr x, Arr w, Arr b) {
    int n = x.shape()[0];
    int c = x.shape()[1];
    int s = x.numel() / (n * c);
    Arr y = Arr.zeros(x.shape());
    for (int ch = 0; ch < c; ch++) {
      double mean = 0;
      double var = 0;
      for (int i = 0; i < n; i++) for (int j = 0; j < s; j++) mean += x.data()[(i * c + ch) * s + j];
      mean /= n * s;
      for (int i = 0; i < n; i++) for (int j = 0; j < s; j++) var += Math.pow(x.data()[(i * c + ch) * s + j] - mean, 2);
      double inv = 1 / Math.sqrt(var / (n * s) + 1e-5);
      for (int i = 0; i < n; i++) {
        for (int j = 0; j < s; j++) {
          int f = (i * c + ch) * s + j;
          y.data()[f] = (x.data()[f] - mean) * inv * (w == null ? 1 : w.data()[ch]) + (b == null ? 0 : b.data()[ch]);
        }
      }
    }
    return y;
  }

  private static void norms(List<OpInfo> t) {
    // training mode normalizes with the batch statistics; the running ones are updated in place (made per call)
    t.add(op("batch_norm:train").fn(l -> Normalization.batchNorm(l.get(0), l.get(0).newZeros(
            l.get(0).size(1)), l.get(0).newFull(1, l.get(0).size(1)), l.get(1), l.get(2), true))
        .ref(l -> batchNormTrain(l.get(0), l.get(1), l.get(2)))
        .shapes("[4, 3] x [3] x [3]", "[2, 3, 5] x [3] x [3]", "[2, 2, 3, 3] x [2] x [2]", "[1, 2, 4] x [2] x [2]")
        .error(l -> Normalization.batchNorm(l.get(0), null, null, l.get(1), null, true), "[2, 3] x [4]",
            "batch_norm: weight must have shape [C] = [3]: input=[2, 3], weight=[4]")
        .error(l -> Normalization.batchNorm(l.get(0), null, null, null, null, true), "[1, 3]",
            "batch_norm: expected more than 1 value per channel when training (got 1): input=[1, 3]"));
    t.add(op("batch_norm:train_no_affine").unary(x -> Normalization.batchNorm(x, null, null, null, null, true))
        .ref(l -> batchNormTrain(l.get(0), null, null))
        .shapes("[4, 3]", "[2, 3, 5]", "[2, 2, 3, 3]", "[1, 2, 4]"));
    double[] rm = {0.5, -1, 2};
    double[] rv = {0.3, 2, 1.5};
    t.add(op("batch_norm").fn(l -> Normalization.batchNorm(l.get(0), Tensor.of(rm).to(l.get(0).dtype()).to(l.get(0).device()),
            Tensor.of(rv).to(l.get(0).dtype()).to(l.get(0).device()), l.get(1), l.get(2), false))
        .ref(l -> {
          Arr x = l.get(0);
          Arr y = Arr.zeros(x.shape());
          int s = x.numel() / (x.shape()[0] * 3);
          for (int i = 0; i < x.numel(); i++) {
            int ch = i / s % 3;
            y.data()[i] = (x.data()[i] - rm[ch]) / Math.sqrt(rv[ch] + 1e-5) * l.get(1).data()[ch] + l.get(2).data()[ch];
          }
          return y;
        })
        .shapes("[4, 3, 2] x [3] x [3]", "[5, 3] x [3] x [3]")
        .error(l -> Normalization.batchNorm(l.get(0), null, null, null, null, false), "[2, 3]",
            "batch_norm: eval mode needs running_mean and running_var: input=[2, 3];"
                + " hint: pass training=true to normalize with the batch statistics"));
    t.add(op("layer_norm").fn(l -> Normalization.layerNorm(l.get(0), a(4), l.get(1), l.get(2)))
        .ref(l -> NnRef.rowNorm(l.get(0), 4, l.get(1), l.get(2), 1e-5, false)).shapes("[3, 4] x [4] x [4]")
        .error(l -> Normalization.layerNorm(l.get(0), a(4), null, null), "[2, 3]",
            "layer_norm: the input's trailing dims must equal normalized_shape [4]: input=[2, 3]"));
    t.add(op("layer_norm:2d_eps").fn(l -> Normalization.layerNorm(l.get(0), a(2, 3), l.get(1), l.get(2), 1e-3))
        .ref(l -> NnRef.rowNorm(l.get(0), 6, l.get(1), l.get(2), 1e-3, false)).shapes("[2, 2, 3] x [2, 3] x [2, 3]"));
    t.add(op("layer_norm:no_affine").unary(x -> Normalization.layerNorm(x, a(5), null, null))
        .ref(l -> NnRef.rowNorm(l.get(0), 5, null, null, 1e-5, false)).shapes("[5]", "[3, 5]"));
    t.add(op("group_norm").fn(l -> Normalization.groupNorm(l.get(0), 2, l.get(1), l.get(2)))
        .ref(l -> groupNorm(l.get(0), 2, l.get(1), l.get(2))).shapes("[2, 4, 3] x [4] x [4]")
        .error(l -> Normalization.groupNorm(l.get(0), 4, null, null), "[2, 6, 3]",
            "group_norm: the number of channels must be divisible by num_groups (6 channels, 4 groups):"
                + " input=[2, 6, 3]"));
    t.add(op("group_norm:1_group_4d").fn(l -> Normalization.groupNorm(l.get(0), 1, l.get(1), null))
        .ref(l -> groupNorm(l.get(0), 1, l.get(1), null)).shapes("[1, 3, 2, 2] x [3]"));
    t.add(op("group_norm:one_channel_per_group").unary(x -> Normalization.groupNorm(x, 3, null, null))
        .ref(l -> groupNorm(l.get(0), 3, null, null)).shapes("[2, 3, 4]"));
    // eps null is the dtype's machine epsilon: the float64 one in the oracle (float32's is within the tolerance)
    t.add(op("rms_norm").fn(l -> Normalization.rmsNorm(l.get(0), a(4), l.get(1), null))
        .ref(l -> NnRef.rowNorm(l.get(0), 4, l.get(1), null, Math.ulp(1.0), true)).shapes("[3, 4] x [4]")
        .error(l -> Normalization.rmsNorm(l.get(0), a(3), l.get(1), null), "[2, 3] x [2]",
            "rms_norm: weight must have shape normalized_shape [3]: input=[2, 3], weight=[2]"));
    t.add(op("rms_norm:2x2_eps").unary(x -> Normalization.rmsNorm(x, a(2, 2), null, 1e-3))
        .ref(l -> NnRef.rowNorm(l.get(0), 4, null, null, 1e-3, true)).shapes("[3, 2, 2]"));
  }

  private static Tensor sdpa(List<Tensor> in, Tensor mask, double p, boolean causal, int window, Kernel kernel) {
    Tensor m = mask == null ? null : mask.to(in.get(0).device()); // a fixed mask goes where the query is
    return Attention.scaledDotProductAttention(in.get(0), in.get(1), in.get(2), m, p, causal, null, window,
        new Generator(77), kernel);
  }

  /** Both paths (plain, and tiled with blocks small enough to split every sample) with the same samples. */
  private static void attention(List<OpInfo> t) {
    Tensor boolMask = Tensor.rand(new Generator(9), 5, 7).gt(0.3);
    for (int j = 0; j < 5; j++) boolMask.storage().setDouble(j * 7 + j, 1); // every row sees a key
    String sdpa = "scaled_dot_product_attention:";
    for (Kernel kernel : new Kernel[] {Kernel.plain(), Kernel.tiled(2, 3)}) {
      String k = kernel.path().name().toLowerCase(Locale.ROOT);
      OpInfo plain = op(sdpa + k).fn(l -> sdpa(l, null, 0, false, -1, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2)))
          .shapes("[2, 5, 3] x [2, 7, 3] x [2, 7, 4]", "[1, 3] x [4, 3] x [4, 2]");
      if (kernel.path() == Attention.Path.PLAIN) {
        plain.error(l -> Attention.scaledDotProductAttention(l.get(0), l.get(1), l.get(2)),
                "[2, 3, 4] x [2, 6, 3] x [2, 6, 5]", "scaled_dot_product_attention: query and key embedding dims "
                    + "differ (4 vs 3): query=[2, 3, 4], key=[2, 6, 3], value=[2, 6, 5]")
            .error(l -> Attention.scaledDotProductAttention(l.get(0), l.get(1), l.get(2), null, 1.2, false, null,
                null), "[2, 3, 4] x [2, 6, 4] x [2, 6, 5]",
                "scaled_dot_product_attention: dropout_p must be in [0, 1] (got 1.2): query=[2, 3, 4]");
      }
      t.add(plain);
      t.add(op(sdpa + k + "_bool_mask_4d").fn(l -> sdpa(l, boolMask, 0, false, -1, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2), Arr.of(boolMask), true, false, -1))
          .shapes("[2, 2, 5, 3] x [2, 2, 7, 3] x [2, 2, 7, 2]"));
      t.add(op(sdpa + k + "_causal").fn(l -> sdpa(l, null, 0, true, -1, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2), null, false, true, -1))
          .shapes("[1, 6, 2] x [1, 6, 2] x [1, 6, 3]"));
      t.add(op(sdpa + k + "_window_1").fn(l -> sdpa(l, null, 0, false, 1, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2), null, false, false, 1))
          .shapes("[2, 7, 3] x [2, 7, 3] x [2, 7, 2]"));
      t.add(op(sdpa + k + "_causal_window_2").fn(l -> sdpa(l, null, 0, true, 2, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2), null, false, true, 2))
          .shapes("[1, 7, 2] x [1, 7, 2] x [1, 7, 2]"));
      t.add(op(sdpa + k + "_dropout").fn(l -> sdpa(l, null, 0.3, false, -1, kernel))
          .shapes("[2, 4, 3] x [2, 5, 3] x [2, 5, 2]"));
      t.add(op(sdpa + k + "_float_mask").fn(l -> sdpa(l.subList(0, 3), l.get(3), 0, false, -1, kernel))
          .ref(l -> NnRef.attention(l.get(0), l.get(1), l.get(2), l.get(3), false, false, -1))
          .shapes("[2, 2, 4, 3] x [2, 2, 5, 3] x [2, 2, 5, 2] x [2, 1, 4, 5]"));
    }
  }

  private static final long[] INDICES = {2, 0, 2, 4, 1, 2};

  private static void embeddingRecurrentDropout(List<OpInfo> t) {
    Tensor idx = Tensor.of(INDICES, 2, 3);
    t.add(op("embedding").unary(w -> Embeddings.embedding(idx.to(w.device()), w))
        .ref(l -> NnRef.embedding(INDICES, a(2, 3), l.get(0))).shapes("[5, 3]")
        .error(l -> Embeddings.embedding(l.get(0), l.get(1)), "[1] x [5, 4]",
            "embedding: indices must be int64 or int32, got float32: input=[1], weight=[5, 4]")
        .error(l -> Embeddings.embedding(Tensor.of(new long[] {0, 1, 2, 3, 4, 7}, 2, 3), l.get(0)), "[5, 4]",
            "embedding: index out of range (7 at position [1, 2], num_embeddings 5): input=[2, 3], weight=[5, 4];"
                + " hint: indices must be in [0, num_embeddings)"));
    // the padding row's gradient is zero by definition (not the numeric one): pad an unreferenced row
    t.add(op("embedding:padding_idx").unary(w -> Embeddings.embedding(idx.to(w.device()), w, -2, null, 2))
        .ref(l -> NnRef.embedding(INDICES, a(2, 3), l.get(0))).shapes("[5, 3]"));
    t.add(op("embedding:0d_index").unary(w -> Embeddings.embedding(Tensor.of(new long[] {3}).reshape().to(w.device()), w))
        .ref(l -> NnRef.embedding(new long[] {3}, new int[0], l.get(0))).shapes("[5, 2]"));

    t.add(op("lstm_cell").binary(Recurrent::lstmCell).ref(l -> NnRef.lstmCell(l.get(0), l.get(1)))
        .shapes("[5, 12] x [5, 3]", "[12] x [3]", "[1, 4] x [1, 1]").domain(0, -4, 4)
        .error("[3, 8] x [3, 3]", "lstm_cell: cell state must be [3, 2] for these gates: gates=[3, 8], c=[3, 3]")
        .error("[3, 7] x [3, 1]", "lstm_cell: gates must be [N, 4*hidden] or [4*hidden]: gates=[3, 7], c=[3, 1]"));
    t.add(op("gru_cell").fn(l -> Recurrent.gruCell(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5)))
        .shapes("[3, 4] x [3, 2] x [6, 4] x [6, 2] x [6] x [6]", "[4] x [2] x [6, 4] x [6, 2] x [6] x [6]")
        .error("[3, 4] x [3, 2] x [6, 5] x [6, 2] x [6] x [6]", "gru_cell: weight_ih must be [3 * hidden_size,"
            + " input_size] = [6, 4]: input=[3, 4], hx=[3, 2], weight_ih=[6, 5], weight_hh=[6, 2]")
        .error("[3, 4] x [2, 2] x [6, 4] x [6, 2] x [6] x [6]", "gru_cell: hx must be [N, hidden_size] for an input"
            + " [N, input_size] ([hidden_size] unbatched): input=[3, 4], hx=[2, 2], weight_ih=[6, 4], weight_hh=[6, 2]"));
    t.add(op("gru_cell:nobias").fn(l -> Recurrent.gruCell(l.get(0), l.get(1), l.get(2), l.get(3), null, null))
        .shapes("[2, 3] x [2, 4] x [12, 3] x [12, 4]"));
    // the whole-sequence layers: fused on the CPU (float64 gradchecks here), composed per step on the fake device,
    // whose check compares the two; hidden sizes 3 and 18 (past one float vector: the vector loops and their tails)
    t.add(op("lstm").fn(l -> Recurrent.lstm(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5), l.get(6),
        false)).shapes("[3, 2, 4] x [2, 3] x [2, 3] x [12, 4] x [12, 3] x [12] x [12]",
        "[2, 3, 2] x [3, 18] x [3, 18] x [72, 2] x [72, 18] x [72] x [72]")
        .error("[3, 2, 4] x [2, 3] x [2, 3] x [12, 5] x [12, 3] x [12] x [12]", "lstm: weight_ih must be"
            + " [4 * hidden_size, input_size] = [12, 4]: input=[3, 2, 4], h0=[2, 3], weight_ih=[12, 5],"
            + " weight_hh=[12, 3]")
        .error("[3, 2, 4] x [2, 3] x [2, 2] x [12, 4] x [12, 3] x [12] x [12]", "lstm: c0 must have h0's shape"
            + " [2, 3]: input=[3, 2, 4], h0=[2, 3], c0=[2, 2]")
        .error("[0, 2, 4] x [2, 3] x [2, 3] x [12, 4] x [12, 3] x [12] x [12]", "lstm: input must be [T, N,"
            + " input_size] with T >= 1: input=[0, 2, 4], h0=[2, 3], weight_ih=[12, 4], weight_hh=[12, 3]"));
    t.add(op("lstm:reverse").fn(l -> Recurrent.lstm(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5),
        l.get(6), true)).shapes("[3, 2, 4] x [2, 3] x [2, 3] x [12, 4] x [12, 3] x [12] x [12]"));
    t.add(op("lstm:nobias").fn(l -> Recurrent.lstm(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), null, null,
        false)).shapes("[2, 2, 3] x [2, 2] x [2, 2] x [8, 3] x [8, 2]"));
    t.add(op("gru").fn(l -> Recurrent.gru(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5), false))
        .shapes("[3, 2, 4] x [2, 3] x [9, 4] x [9, 3] x [9] x [9]",
            "[2, 3, 2] x [3, 18] x [54, 2] x [54, 18] x [54] x [54]")
        .error("[3, 2, 4] x [2, 3] x [9, 4] x [9, 3] x [8] x [9]", "gru: biases must be [3 * hidden_size] = [9]:"
            + " input=[3, 2, 4], bias_ih=[8]")
        .error("[3, 2, 4] x [3, 3] x [9, 4] x [9, 3] x [9] x [9]", "gru: h0 must be [N, hidden_size] for an input"
            + " [T, N, input_size]: input=[3, 2, 4], h0=[3, 3], weight_ih=[9, 4], weight_hh=[9, 3]"));
    t.add(op("gru:reverse").fn(l -> Recurrent.gru(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5), true))
        .shapes("[3, 2, 4] x [2, 3] x [9, 4] x [9, 3] x [9] x [9]"));
    t.add(op("gru:nobias").fn(l -> Recurrent.gru(l.get(0), l.get(1), l.get(2), l.get(3), null, null, false))
        .shapes("[2, 2, 3] x [2, 2] x [6, 3] x [6, 2]"));
    t.add(op("rnn_cell").fn(l -> Recurrent.rnnCell(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5),
        "tanh")).shapes("[3, 4] x [3, 5] x [5, 4] x [5, 5] x [5] x [5]", "[4] x [5] x [5, 4] x [5, 5] x [5] x [5]")
        .error("[3, 4] x [3, 5] x [5, 4] x [5, 5] x [4] x [5]", "rnn_cell: biases must be [1 * hidden_size] = [5]:"
            + " input=[3, 4], bias_ih=[4]"));
    t.add(op("rnn_cell:relu").fn(l -> Recurrent.rnnCell(l.get(0), l.get(1), l.get(2), l.get(3), l.get(4), l.get(5),
        "relu")).shapes("[3, 4] x [3, 5] x [5, 4] x [5, 5] x [5] x [5]")
        .error(l -> Recurrent.rnnCell(l.get(0), l.get(1), l.get(2), l.get(3), null, null, "gelu"),
            "[3, 4] x [3, 5] x [5, 4] x [5, 5]", "rnn_cell: nonlinearity must be 'tanh' or 'relu', got 'gelu':"
            + " input=[3, 4]"));
    t.add(op("bilinear").fn(l -> F.bilinear(l.get(0), l.get(1), l.get(2), l.get(3)))
        .shapes("[3, 4] x [3, 5] x [2, 4, 5] x [2]", "[2, 3, 4] x [2, 3, 2] x [3, 4, 2] x [3]")
        .error("[3, 4] x [2, 5] x [2, 4, 5] x [2]", "bilinear: inputs must be [..., in1_features] and"
            + " [..., in2_features] with the same leading dims, weight [out_features, in1_features, in2_features]:"
            + " input1=[3, 4], input2=[2, 5], weight=[2, 4, 5]"));
    t.add(op("bilinear:nobias").fn(l -> F.bilinear(l.get(0), l.get(1), l.get(2), null)).shapes("[4] x [5] x [2, 4, 5]"));

    // in training with a fixed generator (the same mask on every call); in eval the identity
    t.add(op("dropout").unary(x -> Dropouts.dropout(x, 0.4, true, new Generator(8))).shapes("[3, 5]", "[2, 3, 4]")
        .error(l -> Dropouts.dropout(l.get(0), 1.5, true, new Generator(1)), "[2, 3]",
            "dropout: probability must be in [0, 1] (got 1.5): input=[2, 3]"));
    t.add(op("dropout:eval").unary(x -> Dropouts.dropout(x, 0.4, false, new Generator(8)))
        .ref(l -> l.get(0)).shapes("[3, 5]", "[2, 3, 4]"));
    t.add(op("dropout2d").unary(x -> Dropouts.dropout2d(x, 0.5, true, new Generator(8))).shapes("[2, 3, 2, 2]")
        .error(l -> Dropouts.dropout2d(l.get(0), -0.1, false, new Generator(1)), "[2, 3, 4, 4]",
            "dropout2d: probability must be in [0, 1] (got -0.1): input=[2, 3, 4, 4]")
        .error(l -> Dropouts.dropout2d(l.get(0), 0.5, true, new Generator(1)), "[2, 3]",
            "dropout2d: expected a 4-d batched or 3-d unbatched input, got rank 2: input=[2, 3]"));
    t.add(op("dropout2d:eval").unary(x -> Dropouts.dropout2d(x, 0.5, false, new Generator(8)))
        .ref(l -> l.get(0)).shapes("[2, 3, 2, 2]"));
    t.add(op("dropout1d").unary(x -> Dropouts.dropout1d(x, 0.5, true, new Generator(8))).shapes("[2, 3, 4]"));
    t.add(op("dropout1d:eval").unary(x -> Dropouts.dropout1d(x, 0.5, false, new Generator(8)))
        .ref(l -> l.get(0)).shapes("[2, 3, 4]"));
    t.add(op("alpha_dropout").unary(x -> Dropouts.alphaDropout(x, 0.3, true, new Generator(8))).shapes("[3, 4]"));
    t.add(op("alpha_dropout:eval").unary(x -> Dropouts.alphaDropout(x, 0.3, false, new Generator(8)))
        .ref(l -> l.get(0)).shapes("[3, 4]"));
  }
}
