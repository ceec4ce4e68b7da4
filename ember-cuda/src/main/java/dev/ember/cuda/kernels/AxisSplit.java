package dev.ember.cuda.kernels;

import dev.ember.backend.View;
import dev.ember.tensor.Shapes;

/**
 * A view's dimensions split into kept ("outer") ones, walked in row-major order over the output, and reduced
 * ("inner") ones, each side coalesced: the launch geometry of a reduction or of a row kernel along one axis.
 *
 * @param outerShape the kept dimensions, coalesced
 * @param outerX x's strides over them
 * @param outerOut out's strides over them
 * @param innerShape the reduced dimensions, coalesced
 * @param innerX x's strides over them
 * @param nOuter elements of the output (rows)
 * @param nInner elements reduced into each
 */
record AxisSplit(int[] outerShape, int[] outerX, int[] outerOut, int[] innerShape, int[] innerX, long nOuter,
    long nInner) {

  /** The split of x over {@code axes} (sorted, distinct), out having x's rank with size 1 at those axes. */
  static AxisSplit of(View x, int[] axes, View out) {
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
    int[][] co = Geometry.coalesce(oShape, oxs, oos);
    int[][] ci = Geometry.coalesce(iShape, ixs);
    return new AxisSplit(co[0], co[1], co[2], ci[0], ci[1], Shapes.numel(oShape), Shapes.numel(iShape));
  }

  /** The split along one axis, out of x's shape (cumsum, softmax) or of size 1 there (argmax). */
  static AxisSplit alongAxis(View x, int axis, View out) {
    return of(x, new int[] {axis}, out);
  }

  /** x's stride along the single reduced axis (1 when it has at most one element). */
  long innerStep() {
    return innerX.length == 0 ? 1 : innerX[0];
  }
}
