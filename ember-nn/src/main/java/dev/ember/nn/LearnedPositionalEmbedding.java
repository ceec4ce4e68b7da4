package dev.ember.nn;

import dev.ember.nn.init.Init;
import dev.ember.tensor.Check;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;

/**
 * Adds a trained position vector to a batch-first input [N, T, d_model] (or [T, d_model]): the
 * parameter {@code weight} [max_len, d_model], initialised N(0, 1) like nn.Embedding (BERT and GPT-2
 * style models re-initialise it smaller with {@link Init#normal_}).
 */
public class LearnedPositionalEmbedding extends Module {
  private final int maxLen;
  private final int dModel;

  public LearnedPositionalEmbedding(int maxLen, int dModel) {
    this(maxLen, dModel, Generator.global());
  }

  public LearnedPositionalEmbedding(int maxLen, int dModel, Generator gen) {
    if (dModel <= 0 || maxLen <= 0) {
      throw new IllegalArgumentException("LearnedPositionalEmbedding: max_len and d_model must be positive, got "
          + maxLen + ", " + dModel);
    }
    this.maxLen = maxLen;
    this.dModel = dModel;
    registerParameter("weight", Init.normal_(Tensor.empty(maxLen, dModel), 0, 1, gen));
  }

  public Tensor weight() {
    return param("weight");
  }

  @Override
  public Tensor forward(Tensor x) {
    int t = x.dim() >= 2 ? x.size(x.dim() - 2) : -1;
    if (x.dim() < 2 || x.size(x.dim() - 1) != dModel || t > maxLen) {
      throw Check.fail(name(), "input must be [..., T <= max_len (" + maxLen + "), d_model (" + dModel + ")]", "input", x);
    }
    return x.add(weight().narrow(0, 0, t));
  }

  @Override
  protected String extraRepr() {
    return maxLen + ", " + dModel;
  }
}
