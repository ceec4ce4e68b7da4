package dev.ember.backend;

/**
 * Receives the rows of a float32 product from {@link Backend#matmulRows} as they are finished, so that the
 * caller consumes each block while it is in cache rather than having the whole product written to memory
 * and read back (an optimizer updating a layer with its weight gradient, row block by row block).
 */
@FunctionalInterface
public interface RowSink {
  /**
   * Rows {@code r0 .. r1} (exclusive) of the [m, n] product: element (i, j) is at
   * {@code c[off + (i - r0) * n + j]}. The array is the backend's scratch, valid only during the call.
   */
  void rows(int r0, int r1, float[] c, int off);
}
