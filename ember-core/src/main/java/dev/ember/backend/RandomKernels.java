package dev.ember.backend;

import dev.ember.tensor.Generator;

/**
 * Random fills drawn from a {@link Generator}, as PyTorch draws them, so the same seed gives the same values.
 * Outputs are contiguous views of F32 or F64 (the dtype the values are drawn in); every element is written,
 * in row-major order.
 */
public interface RandomKernels {
  /** out = U(from, to) values, as {@code uniform_(from, to)}. */
  void uniform(View out, double from, double to, Generator gen);

  /** out = N(mean, std^2) values, as {@code normal_(mean, std)}. */
  void normal(View out, double mean, double std, Generator gen);

  /**
   * out = N(mean, std^2) values truncated to [a, b], as {@code trunc_normal_}: uniforms between the two CDF
   * values, the inverse normal CDF, then a clamp to [a, b], each step in out's dtype.
   */
  void truncatedNormal(View out, double mean, double std, double a, double b, Generator gen);

  /** out = value with probability keepProb, else 0: one {@link Generator#nextDouble()} per element. */
  void bernoulli(View out, double keepProb, double value, Generator gen);
}
