package dev.ember.backend.cpu;

import dev.ember.backend.Dims;

/**
 * Geometry helpers for strided loops. {@link #coalesce} merges dimensions that every operand
 * walks contiguously relative to each other, so most elementwise ops become one flat loop (or a
 * loop of contiguous rows, e.g. a [B, N] + [N] bias add), which the contiguous kernels handle.
 */
final class Strided {
  private Strided() {}

  /**
   * Returns {shape, strides0, strides1, ...} with size-1 dims dropped and mergeable neighbours
   * merged ({@link Dims#coalesce}); always at least rank 1.
   */
  static int[][] coalesce(int[] shape, int[]... strides) {
    return atLeastRank1(Dims.coalesce(shape, strides));
  }

  /** {@code c} (a coalesced {shape, strides...}), or for a single element of rank 0 shape [1] and strides [1]. */
  static int[][] atLeastRank1(int[][] c) {
    if (c[0].length > 0) return c;
    int[][] one = new int[c.length][];
    for (int k = 0; k < c.length; k++) one[k] = new int[] {1};
    return one;
  }

  /** Offset of "row" {@code row} (an index over all dims but the last) for one operand. */
  static int rowOffset(int row, int[] shape, int[] strides, int base) {
    int off = base;
    for (int d = shape.length - 2; d >= 0; d--) {
      int i = row % shape[d];
      row /= shape[d];
      off += i * strides[d];
    }
    return off;
  }

  /** Flat element {@code i} (row-major over shape) to a storage offset. */
  static int elementOffset(long i, int[] shape, int[] strides, int base) {
    int off = base;
    for (int d = shape.length - 1; d >= 0; d--) {
      int sz = shape[d];
      off += (int) (i % sz) * strides[d];
      i /= sz;
    }
    return off;
  }
}
