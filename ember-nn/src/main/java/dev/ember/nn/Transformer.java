package dev.ember.nn;

import dev.ember.nn.init.Init;
import dev.ember.tensor.Check;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;

/**
 * The encoder-decoder transformer of "Attention Is All You Need", as {@code nn.Transformer}:
 * children {@code encoder} ({@link TransformerEncoder} with a final LayerNorm) and {@code decoder}
 * ({@link TransformerDecoder} with a final LayerNorm); every parameter with more than one dimension
 * is re-initialised xavier-uniform, as PyTorch's {@code _reset_parameters}.
 */
public class Transformer extends Module {
  private final int dModel;
  private final boolean batchFirst;
  private final TransformerEncoder encoder;
  private final TransformerDecoder decoder;

  /** PyTorch's defaults: d_model 512, 8 heads, 6 + 6 layers, feed-forward 2048, dropout 0.1, relu. */
  public Transformer() {
    this(512, 8, 6, 6, 2048, 0.1, "relu", 1e-5, false, false, true, Generator.global());
  }

  public Transformer(int dModel, int nhead, int numEncoderLayers, int numDecoderLayers, int dimFeedforward,
      double dropout, String activation, double layerNormEps, boolean batchFirst, boolean normFirst, boolean bias,
      Generator gen) {
    this.dModel = dModel;
    this.batchFirst = batchFirst;
    TransformerEncoderLayer el = new TransformerEncoderLayer(dModel, nhead, dimFeedforward, dropout, activation,
        layerNormEps, batchFirst, normFirst, bias, gen);
    encoder = registerModule("encoder", new TransformerEncoder(el, numEncoderLayers,
        new LayerNorm(new int[] {dModel}, layerNormEps, true, bias)));
    TransformerDecoderLayer dl = new TransformerDecoderLayer(dModel, nhead, dimFeedforward, dropout, activation,
        layerNormEps, batchFirst, normFirst, bias, gen);
    decoder = registerModule("decoder", new TransformerDecoder(dl, numDecoderLayers,
        new LayerNorm(new int[] {dModel}, layerNormEps, true, bias)));
    for (Tensor p : parameters()) if (p.dim() > 1) Init.xavierUniform_(p, 1.0, gen);
  }

  public TransformerEncoder encoder() {
    return encoder;
  }

  public TransformerDecoder decoder() {
    return decoder;
  }

  /** Without masks. */
  public Tensor forward(Tensor src, Tensor tgt) {
    return forward(src, tgt, null, null, null, null, null, null, false, false, false);
  }

  /**
   * Encodes {@code src} [S, N, E] and decodes {@code tgt} [T, N, E] against it ([N, *, E] with
   * batch_first); masks as {@link TransformerEncoderLayer} and {@link TransformerDecoderLayer}.
   */
  public Tensor forward(Tensor src, Tensor tgt, Tensor srcMask, Tensor tgtMask, Tensor memoryMask,
      Tensor srcKeyPaddingMask, Tensor tgtKeyPaddingMask, Tensor memoryKeyPaddingMask, boolean srcIsCausal,
      boolean tgtIsCausal, boolean memoryIsCausal) {
    int b = batchFirst ? 0 : 1;
    if (src.dim() == 3 && tgt.dim() == 3 && src.size(b) != tgt.size(b)) {
      throw Check.fail(name(), "the batch number of src and tgt must be equal (" + src.size(b) + " vs " + tgt.size(b)
          + ")", "src", src, "tgt", tgt);
    }
    if (src.dim() == 0 || tgt.dim() == 0 || src.size(-1) != dModel || tgt.size(-1) != dModel) {
      throw Check.fail(name(), "the feature number of src and tgt must be equal to d_model (" + dModel + ")",
          "src", src, "tgt", tgt);
    }
    Tensor memory = encoder.call(List.of(src), () -> encoder.forward(src, srcMask, srcKeyPaddingMask, srcIsCausal));
    return decoder.call(List.of(tgt, memory), () -> decoder.forward(tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask,
        memoryKeyPaddingMask, tgtIsCausal, memoryIsCausal));
  }

  /** A float32 [sz, sz] causal mask: 0 on and below the diagonal, -inf above, as PyTorch's helper. */
  public static Tensor generateSquareSubsequentMask(int sz) {
    return generateSquareSubsequentMask(sz, DType.F32);
  }

  /** {@link #generateSquareSubsequentMask(int)} in a floating-point {@code dtype}. */
  public static Tensor generateSquareSubsequentMask(int sz, DType dtype) {
    if (sz < 0) throw new IllegalArgumentException("generate_square_subsequent_mask: sz must be >= 0, got " + sz);
    Check.floatingType("generate_square_subsequent_mask", dtype);
    double[] m = new double[sz * sz];
    for (int i = 0; i < sz; i++) for (int j = i + 1; j < sz; j++) m[i * sz + j] = Double.NEGATIVE_INFINITY;
    return Tensor.of(m, sz, sz).to(dtype);
  }
}
