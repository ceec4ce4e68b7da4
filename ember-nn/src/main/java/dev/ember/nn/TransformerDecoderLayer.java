package dev.ember.nn;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * One transformer decoder block, as {@code nn.TransformerDecoderLayer}: self-attention over the
 * target, cross-attention ({@code multihead_attn}) from the target to the encoder's output
 * ({@code memory}), and a feed-forward network, each with a residual connection and a LayerNorm,
 * after it ({@code norm_first = false}, the default) or before it. Children carry PyTorch's names
 * and order ({@code self_attn}, {@code multihead_attn}, {@code linear1}, {@code dropout},
 * {@code linear2}, {@code norm1..3}, {@code dropout1..3}), so a PyTorch state dict loads as it is.
 * Inputs are [T, N, E] and [S, N, E] ([N, T, E] with batch_first, or unbatched).
 */
public class TransformerDecoderLayer extends Module {
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
  private final MultiheadAttention multiheadAttn;
  private final Linear linear1;
  private final Dropout dropout;
  private final Linear linear2;
  private final LayerNorm norm1;
  private final LayerNorm norm2;
  private final LayerNorm norm3;
  private final Dropout dropout1;
  private final Dropout dropout2;
  private final Dropout dropout3;

  /** PyTorch's defaults: dim_feedforward 2048, dropout 0.1, relu, eps 1e-5, sequence-first, post-norm, biases. */
  public TransformerDecoderLayer(int dModel, int nhead) {
    this(dModel, nhead, 2048, 0.1, "relu", 1e-5, false, false, true, Generator.global());
  }

  /**
   * @param activation "relu" or "gelu"
   * @param gen the generator for initialisation and dropout
   */
  public TransformerDecoderLayer(int dModel, int nhead, int dimFeedforward, double dropout, String activation,
      double layerNormEps, boolean batchFirst, boolean normFirst, boolean bias, Generator gen) {
    TransformerEncoderLayer.checkActivation(name(), activation);
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
    multiheadAttn = registerModule("multihead_attn", new MultiheadAttention(dModel, nhead, dropout, bias, batchFirst, gen));
    linear1 = registerModule("linear1", new Linear(dModel, dimFeedforward, bias, gen));
    this.dropout = registerModule("dropout", new Dropout(dropout, gen));
    linear2 = registerModule("linear2", new Linear(dimFeedforward, dModel, bias, gen));
    norm1 = registerModule("norm1", new LayerNorm(new int[] {dModel}, layerNormEps, true, bias));
    norm2 = registerModule("norm2", new LayerNorm(new int[] {dModel}, layerNormEps, true, bias));
    norm3 = registerModule("norm3", new LayerNorm(new int[] {dModel}, layerNormEps, true, bias));
    dropout1 = registerModule("dropout1", new Dropout(dropout, gen));
    dropout2 = registerModule("dropout2", new Dropout(dropout, gen));
    dropout3 = registerModule("dropout3", new Dropout(dropout, gen));
  }

  /** A layer with the same configuration and a copy of this one's parameters (PyTorch's deepcopy). */
  public TransformerDecoderLayer copy() {
    TransformerDecoderLayer c = new TransformerDecoderLayer(dModel, nhead, dimFeedforward, dropoutP, activation,
        layerNormEps, batchFirst, normFirst, bias, gen);
    TransformerEncoderLayer.copyInto(this, c);
    return c;
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

  /** {@link #forward(Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, boolean, boolean)} without masks. */
  public Tensor forward(Tensor tgt, Tensor memory) {
    return forward(tgt, memory, null, null, null, null, false, false);
  }

  /**
   * @param tgtMask [T, T] or [N * nhead, T, T] (bool true = masked, or additive float), or null
   * @param memoryMask [T, S] or [N * nhead, T, S], or null
   * @param tgtKeyPaddingMask [N, T] (bool true = padding, or additive float), or null
   * @param memoryKeyPaddingMask [N, S], or null
   * @param tgtIsCausal masks the target keys after each target position (on top of tgtMask; PyTorch
   *     takes this flag as a hint that tgtMask is that mask)
   * @param memoryIsCausal likewise for the memory keys (top-left aligned)
   */
  public Tensor forward(Tensor tgt, Tensor memory, Tensor tgtMask, Tensor memoryMask, Tensor tgtKeyPaddingMask,
      Tensor memoryKeyPaddingMask, boolean tgtIsCausal, boolean memoryIsCausal) {
    TransformerEncoderLayer.checkInput(name(), "tgt", tgt, dModel, batchFirst);
    TransformerEncoderLayer.checkInput(name(), "memory", memory, dModel, batchFirst);
    Tensor x = tgt;
    if (normFirst) {
      x = x.add(saBlock(norm1.call(x), tgtMask, tgtKeyPaddingMask, tgtIsCausal));
      x = x.add(mhaBlock(norm2.call(x), memory, memoryMask, memoryKeyPaddingMask, memoryIsCausal));
      x = x.add(ffBlock(norm3.call(x)));
    } else {
      x = norm1.call(x.add(saBlock(x, tgtMask, tgtKeyPaddingMask, tgtIsCausal)));
      x = norm2.call(x.add(mhaBlock(x, memory, memoryMask, memoryKeyPaddingMask, memoryIsCausal)));
      x = norm3.call(x.add(ffBlock(x)));
    }
    return x;
  }

  private Tensor saBlock(Tensor x, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
    return dropout1.call(selfAttn.call(List.of(x),
        () -> selfAttn.forward(x, x, x, keyPaddingMask, mask, false, isCausal).output()));
  }

  private Tensor mhaBlock(Tensor x, Tensor mem, Tensor mask, Tensor keyPaddingMask, boolean isCausal) {
    return dropout2.call(multiheadAttn.call(List.of(x, mem),
        () -> multiheadAttn.forward(x, mem, mem, keyPaddingMask, mask, false, isCausal).output()));
  }

  private Tensor ffBlock(Tensor x) {
    return dropout3.call(linear2.call(dropout.call(TransformerEncoderLayer.activate(activation,
        linear1.call(x)))));
  }
}
