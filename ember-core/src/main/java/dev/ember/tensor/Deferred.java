package dev.ember.tensor;

/**
 * The value of a float32 {@link Storage} that is computed when something first reads it, rather than
 * when it is made: a weight gradient dY^T X kept as its two small factors. An optimizer that can fold
 * the value into its own state may use {@link #computeInto} with a {@code beta} and never materialize
 * the storage; any other read computes it with beta 0, so everyone sees the same bits.
 */
public interface Deferred {
  /**
   * Writes the value into {@code dst[off .. off + size)} as {@code dst = value + beta * dst}, element by
   * element, where {@code beta * dst} is rounded to float before the sum and {@code value} has the bits
   * that beta 0 writes. With beta 0 the old contents of dst are not read.
   */
  void computeInto(float[] dst, int off, float beta);

  /** Hands back the buffers the value is computed from; called once, after which it is not computed again. */
  void release();
}
