package dev.ember.tensor;

/**
 * The value of a float32 {@link Storage} that is computed when something first reads it, rather than
 * when it is made: a weight gradient dY^T X kept as its two small factors. An optimizer may consume the
 * value {@linkplain #computeBlocks block by block} while each block is in cache, so that the gradient is
 * never written to memory and read back; any other read {@linkplain #computeInto computes} it whole. Both
 * give the same bits.
 *
 * <p>Backward defers a leaf's gradient only if an optimizer that consumes it in blocks has {@linkplain
 * #consumeInBlocks declared} so when it took the parameter: an optimizer that reads the gradient whole would
 * only pay for the copies of the factors it is kept from.
 */
public interface Deferred {
  /** Writes the value into {@code dst[off .. off + size)}. */
  void computeInto(float[] dst, int off);

  /**
   * Computes the value in blocks of elements that cover it once each, in any order and possibly on several
   * threads at once, handing each to {@code blocks} without storing the value whole. The value stays
   * deferred: a later read computes it again.
   */
  void computeBlocks(Blocks blocks);

  /** A consumer of {@link #computeBlocks}' blocks. */
  @FunctionalInterface
  interface Blocks {
    /**
     * Elements {@code lo .. hi} (exclusive) of the value: element i is {@code values[off + i - lo]}. The
     * array is scratch, valid only during the call.
     */
    void accept(int lo, int hi, float[] values, int off);
  }

  /**
   * SGD's update of the float32 parameter {@code param} (contiguous, this value's size) by this value, made while
   * the value is computed and without storing it, if the value can: {@code param = param - lr (sign value + wd
   * param)}, each product and sum rounded to float32, the bits of that update applied to {@link #computeBlocks}'
   * blocks. Returns false, having done nothing, where it cannot (this default); the caller then updates from the
   * blocks. The value stays deferred.
   */
  default boolean sgdInto(dev.ember.backend.View param, float lr, float wd, float sign) {
    return false;
  }

  /** Hands back the buffers the value is computed from; called once, after which it is not computed again. */
  void release();

  /**
   * Declares whether {@code param}'s gradient is consumed {@linkplain #computeBlocks in blocks}: an optimizer
   * that takes gradients that way says so for each parameter when it takes the parameter, and backward may then
   * leave that parameter's float32 gradient deferred, from the first step on. The declaration is a property of
   * the parameter, held on it (the last optimizer to take the parameter decides); results never depend on it,
   * only where the GEMM runs and what memory it takes.
   */
  static void consumeInBlocks(Tensor param, boolean inBlocks) {
    param.gradInBlocks = inBlocks;
  }

  /** Whether {@code param}'s gradient is {@linkplain #consumeInBlocks declared} to be consumed in blocks. */
  static boolean consumedInBlocks(Tensor param) {
    return param.gradInBlocks;
  }
}
