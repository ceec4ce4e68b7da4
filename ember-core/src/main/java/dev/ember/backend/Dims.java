package dev.ember.backend;

import dev.ember.tensor.Shapes;
import java.util.Arrays;

/**
 * The dimension merging every backend's loops and launches share: operands walked over one shape with their own
 * strides need only as many axes as they step over differently, so size-1 axes are dropped and neighbours that
 * every operand walks contiguously (outer stride = inner stride x inner size) are merged. A contiguous operand set
 * becomes one axis, a [B, N] + [N] bias add two.
 */
public final class Dims {
  private Dims() {}

  /**
   * Returns {shape, strides0, strides1, ...} with size-1 dims dropped and mergeable neighbours merged. A single
   * element (every axis of size 1, or rank 0) gives rank 0; a backend that wants at least one axis pads it.
   */
  public static int[][] coalesce(int[] shape, int[]... strides) {
    int r = shape.length;
    int ops = strides.length;
    int[] s = new int[r];
    int[][] st = new int[ops][r];
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
    int[][] out = new int[ops + 1][];
    out[0] = Arrays.copyOf(s, n);
    for (int k = 0; k < ops; k++) out[k + 1] = Arrays.copyOf(st[k], n);
    return out;
  }

  /**
   * A reduction's dimensions split into kept ("outer") ones, walked in row-major order over the output, and reduced
   * ("inner") ones, each side {@linkplain #coalesce coalesced} (either may be rank 0).
   *
   * @param outerShape the kept dimensions, coalesced
   * @param outerX x's strides over them
   * @param outerOut out's strides over them
   * @param innerShape the reduced dimensions, coalesced
   * @param innerX x's strides over them
   * @param nOuter elements of the output (rows)
   * @param nInner elements reduced into each
   */
  public record AxisSplit(int[] outerShape, int[] outerX, int[] outerOut, int[] innerShape, int[] innerX,
      long nOuter, long nInner) {

    /** The split of x over {@code axes} (sorted, distinct), out having x's rank with size 1 at those axes. */
    public static AxisSplit of(View x, int[] axes, View out) {
      int r = x.rank();
      boolean[] red = new boolean[r];
      for (int a : axes) red[a] = true;
      int nk = r - axes.length;
      int[] oShape = new int[nk];
      int[] oxs = new int[nk];
      int[] oos = new int[nk];
      int[] iShape = new int[axes.length];
      int[] ixs = new int[axes.length];
      int ko = 0;
      int ki = 0;
      for (int d = 0; d < r; d++) {
        if (red[d]) {
          iShape[ki] = x.shapeRef()[d];
          ixs[ki++] = x.stridesRef()[d];
        } else {
          oShape[ko] = x.shapeRef()[d];
          oxs[ko] = x.stridesRef()[d];
          oos[ko++] = out.stridesRef()[d];
        }
      }
      int[][] co = coalesce(oShape, oxs, oos);
      int[][] ci = coalesce(iShape, ixs);
      return new AxisSplit(co[0], co[1], co[2], ci[0], ci[1], Shapes.numel(oShape), Shapes.numel(iShape));
    }

    /** The split along one axis, out of x's shape (cumsum, softmax) or of size 1 there (argmax). */
    public static AxisSplit alongAxis(View x, int axis, View out) {
      return of(x, new int[] {axis}, out);
    }

    /** x's stride along the single reduced axis (1 when it has at most one element). */
    public long innerStep() {
      return innerX.length == 0 ? 1 : innerX[0];
    }
  }
}
