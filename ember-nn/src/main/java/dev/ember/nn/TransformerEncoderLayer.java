package dev.ember.nn;

import dev.ember.nn.functional.Activations;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * One transformer encoder block, as {@code nn.TransformerEncoderLayer}: self-attention and a
 * feed-forward network {@code linear2(dropout(activation(linear1(x))))}, each with a residual
 * connection and a LayerNorm, after it ({@code norm_first = false}, the default) or before it.
 * Children are registered under PyTorch's names and in its order ({@code self_attn}, {@code linear1},
 * {@code dropout}, {@code linear2}, {@code norm1}, {@code norm2}, {@code dropout1}, {@code dropout2}),
 * so a PyTorch state dict loads as it is. Inputs are [S, N, E] ([N, S, E] with batch_first, or
 * unbatched [S, E]); masks follow {@link MultiheadAttention} (bool true = masked, or additive float).
 */
public class TransformerEncoderLayer extends Module {
  private final int dModel;
  private final int nhead;
  private final int dimFeedforward;
  private final double dropoutP;
  private final String activation;
  private final double layerNormEps;
  private final boolean batchFirst;
  private final boolean normFirst;
  private final boolean bias;
  private final Generator gen;
  private final MultiheadAttention selfAttn;
  private final Linear linear1;
  private final Dropout dropout;
  private final Linear linear2;
  private final LayerNorm norm1;
  private final LayerNorm norm2;
  private final Dropout dropout1;
  private final Dropout dropout2;

  /** PyTorch's defaults: dim_feedforward 2048, dropout 0.1, relu, eps 1e-5, sequence-first, post-norm, biases. */
  public TransformerEncoderLayer(int dModel, int nhead) {
    this(dModel, nhead, 2048, 0.1, "relu", 1e-5, false, false, true, Generator.global());
  }

  /**
   * @param activation "relu" or "gelu"
   * @param gen the generator for initialisation and dropout
   */
  public TransformerEncoderLayer(int dModel, int nhead, int dimFeedforward, double dropout, String activation,
      double layerNormEps, boolean batchFirst, boolean normFirst, boolean bias, Generator gen) {
    checkActivation(name(), activation);
    if (dimFeedforward <= 0) {
      throw new IllegalArgumentException(name() + ": dim_feedforward must be positive, got " + dimFeedforward);
    }
    this.dModel = dModel;
    this.nhead = nhead;
    this.dimFeedforward = dimFeedforward;
    this.dropoutP = dropout;
    this.activation = activation;
    this.layerNormEps = layerNormEps;
    this.batchFirst = batchFirst;
    this.normFirst = normFirst;
    this.bias = bias;
    this.gen = gen;
    selfAttn = registerModule("self_attn", new MultiheadAttention(dModel, nhead, dropout, bias, batchFirst, gen));
    linear1 = registerModule("linear1", new Linear(dModel, dimFeedforward, bias, gen));
    this.dropout = registerModule("dropout", new Dropout(dropout, gen));
    linear2 = registerModule("linear2", new Linear(dimFeedforward, dModel, bias, gen));
    norm1 = registerModule("norm1", new LayerNorm(new int[] {dModel}, layerNormEps, true, bias));
    norm2 = registerModule("norm2", new LayerNorm(new int[] {dModel}, layerNormEps, true, bias));
    dropout1 = registerModule("dropout1", new Dropout(dropout, gen));
    dropout2 = registerModule("dropout2", new Dropout(dropout, gen));
  }

  static void checkActivation(String owner, String activation) {
    if (!"relu".equals(activation) && !"gelu".equals(activation)) {
      throw new IllegalArgumentException(owner + ": activation should be relu/gelu, not " + activation);
    }
  }

  static Tensor activate(String activation, Tensor x) {
    return "relu".equals(activation) ? Activations.relu(x) : Activations.gelu(x, false);
  }

  /** A layer with the same configuration and a copy of this one's parameters (PyTorch's deepcopy). */
  public TransformerEncoderLayer copy() {
    TransformerEncoderLayer c = new TransformerEncoderLayer(dModel, nhead, dimFeedforward, dropoutP, activation,
        layerNormEps, batchFirst, normFirst, bias, gen);
    copyInto(this, c);
    return c;
  }

  /**
   * Gives {@code to}, a module of the same structure, the dtype, values and requires-grad flags of
   * {@code from}'s parameters, its mode and its attention kernels.
   */
  static void copyInto(Module from, Module to) {
    to.to(from.parameters().get(0).dtype());
    to.loadStateDict(from.stateDict());
    List<Tensor> src = from.parameters();
    List<Tensor> dst = to.parameters();
    for (int i = 0; i < src.size(); i++) dst.get(i).requiresGrad(src.get(i).requiresGrad());
    List<Module> a = from.modules();
    List<Module> b = to.modules();
    for (int i = 0; i < a.size(); i++) {
      if (a.get(i) instanceof MultiheadAttention m) ((MultiheadAttention) b.get(i)).attentionKernel(m.attentionKernel());
    }
    to.train(from.isTraining());
  }

  /** The feed-forward activation, "relu" or "gelu". */
  public String activation() {
    return activation;
  }

  public int dModel() {
    return dModel;
  }

  public boolean batchFirst() {
    return batchFirst;
  }

  public boolean normFirst() {
    return normFirst;
  }

  public MultiheadAttention selfAttn() {
    return selfAttn;
  }

  /** Self-attention over {@code src} without masks. */
  @Override
  public Tensor forward(Tensor src) {
    return forward(src, null, null, false);
  }

  /**
   * @param srcMask [S, S] or [N * nhead, S, S] (bool true = masked, or additive float), or null
   * @param srcKeyPaddingMask [N, S] ([S] unbatched; bool true = padding, or additive float), or null
   * @param isCausal masks the keys after each query position (on top of srcMask)
   */
  public Tensor forward(Tensor src, Tensor srcMask, Tensor srcKeyPaddingMask, boolean isCausal) {
    checkInput(name(), "src", src, dModel, batchFirst);
    Tensor x = src;
    if (normFirst) {
      x = x.add(saBlock(norm1.call(x), srcMask, srcKeyPaddingMask, isCausal));
      x = x.add(ffBlock(norm2.call(x)));
    } else {
      x = norm1.call(x.add(saBlock(x, srcMask, srcKeyPaddingMask, isCausal)));
      x = norm2.call(x.add(ffBlock(x)));
    }
    return x;
  }

  private Tensor saBlock(Tensor x, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
    return dropout1.call(selfAttn.call(List.of(x),
        () -> selfAttn.forward(x, x, x, keyPaddingMask, mask, false, isCausal).output()));
  }

  private Tensor ffBlock(Tensor x) {
    return dropout2.call(linear2.call(dropout.call(activate(activation, linear1.call(x)))));
  }

  static void checkInput(String op, String name, Tensor x, int dModel, boolean batchFirst) {
    if ((x.dim() != 2 && x.dim() != 3) || x.size(-1) != dModel) {
      throw Check.fail(op, name + " must be " + (batchFirst ? "[N, S, E]" : "[S, N, E]") + " or unbatched [S, E] with E = d_model ("
          + dModel + ")", name, x);
    }
  }
}
