package dev.ember.nn;

import static dev.ember.nn.Reprs.fmt;

import dev.ember.autograd.Grad;
import dev.ember.nn.functional.Embeddings;
import dev.ember.nn.init.Init;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * A lookup table of {@code num_embeddings} vectors of size {@code embedding_dim}, as
 * {@code nn.Embedding}: parameter {@code weight} [num_embeddings, embedding_dim], initialised N(0, 1)
 * with the {@code padding_idx} row zeroed. The padding row gets no gradient; a negative padding_idx
 * counts from the end and is stored normalized. With {@code max_norm}, each looked-up row whose
 * {@code norm_type}-norm exceeds it is rescaled in place before the lookup.
 */
public class Embedding extends Module {
  private final int numEmbeddings;
  private final int embeddingDim;
  private final Integer paddingIdx;
  private final Double maxNorm;
  private final double normType;

  public Embedding(int numEmbeddings, int embeddingDim) {
    this(numEmbeddings, embeddingDim, null, null, 2.0, Generator.global());
  }

  public Embedding(int numEmbeddings, int embeddingDim, Integer paddingIdx) {
    this(numEmbeddings, embeddingDim, paddingIdx, null, 2.0, Generator.global());
  }

  /**
   * @param paddingIdx the row with no gradient (and zero at init), negative from the end, or null
   * @param maxNorm the largest norm a looked-up row may keep, or null
   * @param normType p of the p-norm for maxNorm (2 in PyTorch)
   */
  public Embedding(int numEmbeddings, int embeddingDim, Integer paddingIdx, Double maxNorm, double normType,
      Generator gen) {
    this(init(numEmbeddings, embeddingDim, paddingIdx, gen), paddingIdx, maxNorm, normType, true);
  }

  private Embedding(Tensor weight, Integer paddingIdx, Double maxNorm, double normType, boolean trainable) {
    this.numEmbeddings = weight.size(0);
    this.embeddingDim = weight.size(1);
    this.paddingIdx = normalizePadding(numEmbeddings, paddingIdx);
    if (maxNorm != null && !(maxNorm > 0)) {
      throw new IllegalArgumentException("Embedding: max_norm must be positive, got " + maxNorm);
    }
    this.maxNorm = maxNorm;
    this.normType = normType;
    registerParameter("weight", weight);
    if (!trainable) param("weight").requiresGrad(false);
  }

  private static Tensor init(int numEmbeddings, int embeddingDim, Integer paddingIdx, Generator gen) {
    if (numEmbeddings <= 0 || embeddingDim < 0) {
      throw new IllegalArgumentException("Embedding: num_embeddings must be positive and embedding_dim >= 0, got "
          + numEmbeddings + ", " + embeddingDim);
    }
    Integer pad = normalizePadding(numEmbeddings, paddingIdx);
    Tensor w = Init.normal_(Tensor.empty(numEmbeddings, embeddingDim), 0, 1, gen);
    if (pad != null) {
      try (Grad ignored = Grad.off()) {
        w.select(0, pad).zero_();
      }
    }
    return w;
  }

  private static Integer normalizePadding(int num, Integer paddingIdx) {
    if (paddingIdx == null) return null;
    if (paddingIdx < -num || paddingIdx >= num) {
      throw new IllegalArgumentException("Embedding: padding_idx must be within num_embeddings (" + paddingIdx
          + ", num_embeddings " + num + ")");
    }
    return paddingIdx < 0 ? paddingIdx + num : paddingIdx;
  }

  /** {@link #fromPretrained(Tensor, boolean, Integer, Double, double)} frozen, without padding. */
  public static Embedding fromPretrained(Tensor weight) {
    return fromPretrained(weight, true, null, null, 2.0);
  }

  public static Embedding fromPretrained(Tensor weight, boolean freeze, Integer paddingIdx) {
    return fromPretrained(weight, freeze, paddingIdx, null, 2.0);
  }

  /**
   * An embedding whose weight is {@code weight} [num_embeddings, embedding_dim] itself (shared, as
   * PyTorch's from_pretrained; the padding row is not zeroed), trainable unless {@code freeze}.
   */
  public static Embedding fromPretrained(Tensor weight, boolean freeze, Integer paddingIdx, Double maxNorm,
      double normType) {
    if (weight.dim() != 2) {
      throw Check.fail("Embedding.fromPretrained", "embeddings must be 2-d [num_embeddings, embedding_dim]",
          "weight", weight);
    }
    Check.floating("Embedding.fromPretrained", weight);
    return new Embedding(weight.detach(), paddingIdx, maxNorm, normType, !freeze);
  }

  public Tensor weight() {
    return param("weight");
  }

  public int numEmbeddings() {
    return numEmbeddings;
  }

  public int embeddingDim() {
    return embeddingDim;
  }

  /** The padding row (normalized to be non-negative), or null. */
  public Integer paddingIdx() {
    return paddingIdx;
  }

  /** The largest norm a looked-up row may keep (rows renormalized in forward), or null. */
  public Double maxNorm() {
    return maxNorm;
  }

  /** The rows of the weight at the integer indices {@code input}: shape input.shape + [embedding_dim]. */
  @Override
  public Tensor forward(Tensor input) {
    return Embeddings.embedding(input, weight(), paddingIdx, maxNorm, normType);
  }

  @Override
  protected String extraRepr() {
    StringBuilder s = new StringBuilder().append(numEmbeddings).append(", ").append(embeddingDim);
    if (paddingIdx != null) s.append(", padding_idx=").append(paddingIdx);
    if (maxNorm != null) s.append(", max_norm=").append(fmt(maxNorm.doubleValue()));
    if (normType != 2) s.append(", norm_type=").append(fmt(normType));
    return s.toString();
  }
}
