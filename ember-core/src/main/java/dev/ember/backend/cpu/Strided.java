package dev.ember.backend.cpu;

/**
 * Geometry helpers for strided loops. {@link #coalesce} merges dimensions that every operand
 * walks contiguously relative to each other, so most elementwise ops become one flat loop (or a
 * loop of contiguous rows, e.g. a [B, N] + [N] bias add), which the contiguous kernels handle.
 */
final class Strided {
  private Strided() {}

  /**
   * Returns {shape, strides0, strides1, ...} with size-1 dims dropped and mergeable neighbours
   * merged; always at least rank 1.
   */
  static int[][] coalesce(int[] shape, int[]... strides) {
    int r = shape.length;
    int ops = strides.length;
    int[] s = new int[Math.max(r, 1)];
    int[][] st = new int[ops][Math.max(r, 1)];
    int n = 0;
    for (int d = 0; d < r; d++) {
      if (shape[d] == 1) continue;
      if (n > 0) {
        boolean merge = true;
        for (int k = 0; k < ops; k++) {
          if (st[k][n - 1] != strides[k][d] * shape[d]) {
            merge = false;
            break;
          }
        }
        if (merge) {
          s[n - 1] *= shape[d];
          for (int k = 0; k < ops; k++) st[k][n - 1] = strides[k][d];
          continue;
        }
      }
      s[n] = shape[d];
      for (int k = 0; k < ops; k++) st[k][n] = strides[k][d];
      n++;
    }
    if (n == 0) { // all size-1 (or rank 0): one element
      s[0] = 1;
      for (int k = 0; k < ops; k++) st[k][0] = 1;
      n = 1;
    }
    int[][] out = new int[ops + 1][];
    out[0] = java.util.Arrays.copyOf(s, n);
    for (int k = 0; k < ops; k++) out[k + 1] = java.util.Arrays.copyOf(st[k], n);
    return out;
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
