package dev.ember.backend.cpu;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.Dims;
import dev.ember.backend.ReduceOp;
import dev.ember.backend.StridedView;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;

/**
 * Reductions, softmax and cumsum. Three shapes of work, chosen after moving the reduced axes last
 * and coalescing: contiguous rows (a kernel per output element), columns (the kept axes are the
 * contiguous ones, e.g. a bias gradient summing [B, N] over B: accumulate whole rows with the
 * vector add), and a generic strided loop. Each output element is always accumulated in the same
 * order, and a full reduction sums fixed-size chunks whose partials are added in chunk order, so
 * results do not depend on the thread count.
 */
final class Reductions {
  private Reductions() {}

  /** Rows [r0, r1) of a row-wise kernel. */
  @FunctionalInterface
  private interface RowBlock {
    void run(int r0, int r1);
  }

  /**
   * Runs {@code body} over {@code rows} rows of {@code rowLen} elements: as one block on the calling thread
   * below {@code parallelMin} elements, else in blocks of about {@link CpuBackend#CHUNK} elements (at
   * least one row) over the pool. The blocks depend on the shape only, never on the thread count.
   */
  private static void rowBlocks(int rows, int rowLen, int parallelMin, RowBlock body) {
    int per = (long) rows * rowLen < parallelMin ? Math.max(1, rows) : Math.max(1, CpuBackend.CHUNK / rowLen);
    Parallel.forEach(Parallel.chunks(rows, per), t -> body.run(t * per, Math.min(rows, (t + 1) * per)));
  }

  static void reduce(FloatKernels k, ReduceOp op, View x, int[] axes, View out) {
    Dims.AxisSplit split = Dims.AxisSplit.of(x, axes, out);
    int[][] co = Strided.atLeastRank1(new int[][] {split.outerShape(), split.outerX(), split.outerOut()});
    int[][] ci = Strided.atLeastRank1(new int[][] {split.innerShape(), split.innerX()});
    long nOuter = split.nOuter();
    long nInner = split.nInner();
    Storage xs = x.storage();
    Storage os = out.storage();
    boolean f32 = xs.dtype() == DType.F32 && os.dtype() == DType.F32;
    if (nOuter == 0) return;
    if (nInner == 0) {
      double identity = op == ReduceOp.SUM ? 0 : op == ReduceOp.PROD ? 1
          : op == ReduceOp.MAX ? Double.NEGATIVE_INFINITY : Double.POSITIVE_INFINITY;
      // BOOL's own identities, false for MAX (any) and true for MIN (all), as torch: -inf stored as a BOOL was true
      if (os.dtype() == DType.BOOL && (op == ReduceOp.MAX || op == ReduceOp.MIN)) identity = op == ReduceOp.MAX ? 0 : 1;
      for (long o = 0; o < nOuter; o++) os.setDouble(Strided.elementOffset(o, co[0], co[2], out.offset()), identity);
      return;
    }
    boolean innerContiguous = ci[0].length == 1 && ci[1][0] == 1;
    boolean bools = xs.dtype() == DType.BOOL && os.dtype() == DType.BOOL && (op == ReduceOp.MIN || op == ReduceOp.MAX);
    if (f32 && op != ReduceOp.PROD && innerContiguous) {
      rowsKernel(k, op, x, out, co, (int) nOuter, (int) nInner);
    } else if (bools && innerContiguous) {
      boolRows(op == ReduceOp.MAX, x, out, co, (int) nOuter, (int) nInner);
    } else if (f32 && co[0].length == 1 && co[1][0] == 1 && co[2][0] == 1 && nOuter > 1) {
      columns(k, op, x, out, ci, (int) nOuter, (int) nInner);
    } else {
      generic(op, x, out, co, ci, nOuter, nInner);
    }
  }

  private static void rowsKernel(FloatKernels k, ReduceOp op, View x, View out, int[][] co, int nOuter, int nInner) {
    float[] xa = x.storage().floats();
    float[] oa = out.storage().floats();
    if (nOuter == 1 && nInner >= CpuBackend.PARALLEL_MIN) {
      int chunks = Parallel.chunks(nInner, CpuBackend.CHUNK);
      float[] partial = new float[chunks];
      int base = x.offset();
      Parallel.forEach(chunks, t -> {
        int j0 = t * CpuBackend.CHUNK;
        partial[t] = rowOp(k, op, xa, base + j0, Math.min(nInner, j0 + CpuBackend.CHUNK) - j0);
      });
      float acc = partial[0];
      for (int t = 1; t < chunks; t++) acc = combine(op, acc, partial[t]);
      oa[out.offset()] = acc;
      return;
    }
    rowBlocks(nOuter, nInner, CpuBackend.PARALLEL_MIN, (o0, o1) -> {
      for (int o = o0; o < o1; o++) {
        int xo = Strided.elementOffset(o, co[0], co[1], x.offset());
        int oo = Strided.elementOffset(o, co[0], co[2], out.offset());
        oa[oo] = rowOp(k, op, xa, xo, nInner);
      }
    });
  }

  /**
   * any (MAX) or all (MIN) over contiguous rows of a BOOL tensor, whose elements are 0 or 1: each row is
   * scanned until an element decides it.
   */
  private static void boolRows(boolean any, View x, View out, int[][] co, int nOuter, int nInner) {
    byte[] xa = x.storage().bools();
    byte[] oa = out.storage().bools();
    rowBlocks(nOuter, nInner, CpuBackend.PARALLEL_MIN, (o0, o1) -> {
      for (int o = o0; o < o1; o++) {
        int xo = Strided.elementOffset(o, co[0], co[1], x.offset());
        int j = 0;
        if (any) {
          while (j < nInner && xa[xo + j] == 0) j++;
        } else {
          while (j < nInner && xa[xo + j] != 0) j++;
        }
        boolean decided = j < nInner; // any: found a 1; all: found a 0
        oa[Strided.elementOffset(o, co[0], co[2], out.offset())] = (byte) (decided == any ? 1 : 0);
      }
    });
  }

  private static float rowOp(FloatKernels k, ReduceOp op, float[] x, int off, int n) {
    return switch (op) {
      case SUM -> k.sum(x, off, n);
      case MAX -> k.max(x, off, n);
      case MIN -> k.min(x, off, n);
      case PROD -> throw new AssertionError("PROD takes the generic path");
    };
  }

  private static float combine(ReduceOp op, float a, float b) {
    return switch (op) {
      case SUM -> a + b;
      case PROD -> a * b;
      case MAX -> Float.isNaN(a) || Float.isNaN(b) ? Float.NaN : Math.max(a, b);
      case MIN -> Float.isNaN(a) || Float.isNaN(b) ? Float.NaN : Math.min(a, b);
    };
  }

  /** out[j] = op over reduced positions p (in order) of x[p + j]: whole contiguous rows at a time. */
  private static void columns(FloatKernels k, ReduceOp op, View x, View out, int[][] ci, int nOuter, int nInner) {
    float[] xa = x.storage().floats();
    float[] oa = out.storage().floats();
    BinaryOp bop = switch (op) {
      case SUM -> BinaryOp.ADD;
      case PROD -> BinaryOp.MUL;
      case MAX -> BinaryOp.MAXIMUM;
      case MIN -> BinaryOp.MINIMUM;
    };
    int oo = out.offset();
    boolean big = (long) nOuter * nInner >= CpuBackend.PARALLEL_MIN;
    int pieces = big ? Parallel.chunks(nOuter, 1024) : 1;
    int width = big ? 1024 : nOuter;
    Parallel.forEach(pieces, t -> {
      int j0 = t * width;
      int n = Math.min(nOuter, j0 + width) - j0;
      System.arraycopy(xa, Strided.elementOffset(0, ci[0], ci[1], x.offset()) + j0, oa, oo + j0, n);
      for (int p = 1; p < nInner; p++) {
        int xo = Strided.elementOffset(p, ci[0], ci[1], x.offset()) + j0;
        k.binary(bop, oa, oo + j0, xa, xo, oa, oo + j0, n);
      }
    });
  }

  private static void generic(ReduceOp op, View x, View out, int[][] co, int[][] ci, long nOuter, long nInner) {
    Storage xs = x.storage();
    Storage os = out.storage();
    // integers in 64 bits: exact beyond 2^53 (max and min through double rounded them), products and sums wrapping
    boolean integral = !xs.dtype().isFloatingPoint();
    int tasks = nOuter * nInner < CpuBackend.PARALLEL_MIN ? 1 : (int) Math.min(nOuter, 256);
    Parallel.forEach(tasks, t -> {
      long o0 = nOuter * t / tasks;
      long o1 = nOuter * (t + 1) / tasks;
      for (long o = o0; o < o1; o++) {
        int xo = Strided.elementOffset(o, co[0], co[1], x.offset());
        int oo = Strided.elementOffset(o, co[0], co[2], out.offset());
        if (integral) {
          long acc = xs.getLong(xo); // nInner >= 1 here; the element at p = 0
          for (long p = 1; p < nInner; p++) {
            long v = xs.getLong(Strided.elementOffset(p, ci[0], ci[1], xo));
            acc = switch (op) {
              case SUM -> acc + v;
              case PROD -> acc * v;
              case MAX -> Math.max(acc, v);
              case MIN -> Math.min(acc, v);
            };
          }
          os.setLong(oo, acc);
          continue;
        }
        double acc = switch (op) {
          case SUM -> 0;
          case PROD -> 1;
          case MAX -> Double.NEGATIVE_INFINITY;
          case MIN -> Double.POSITIVE_INFINITY;
        };
        for (long p = 0; p < nInner; p++) {
          double v = xs.getDouble(Strided.elementOffset(p, ci[0], ci[1], xo));
          acc = switch (op) {
            case SUM -> acc + v;
            case PROD -> acc * v;
            case MAX -> Double.isNaN(v) || Double.isNaN(acc) ? Double.NaN : Math.max(acc, v);
            case MIN -> Double.isNaN(v) || Double.isNaN(acc) ? Double.NaN : Math.min(acc, v);
          };
        }
        os.setDouble(oo, acc);
      }
    });
  }

  static void argReduce(FloatKernels k, boolean max, View x, int axis, View out) {
    int last = x.rank() - 1;
    DType dt = x.dtype();
    if (axis == last && x.isContiguous() && out.isContiguous() && (dt == DType.F32 || dt == DType.F64)) {
      argRows(k, max, x, out);
      return;
    }
    View xm = StridedView.transpose(x, axis, -1);
    View om = StridedView.transpose(out, axis, -1);
    int n = xm.shapeRef()[xm.rank() - 1];
    int step = xm.stridesRef()[xm.rank() - 1];
    int[] oShape = java.util.Arrays.copyOf(xm.shapeRef(), xm.rank() - 1);
    int[] oxs = java.util.Arrays.copyOf(xm.stridesRef(), xm.rank() - 1);
    int[] oos = java.util.Arrays.copyOf(om.stridesRef(), om.rank() - 1);
    long nOuter = Shapes.numel(oShape);
    Storage xs = x.storage();
    Storage os = out.storage();
    if (!dt.isFloatingPoint()) { // as longs: through double, int64 neighbours above 2^53 compared equal
      for (long o = 0; o < nOuter; o++) {
        int xo = Strided.elementOffset(o, oShape, oxs, x.offset());
        int best = 0;
        long bv = xs.getLong(xo);
        for (int j = 1; j < n; j++) {
          long v = xs.getLong(xo + j * step);
          if (max ? v > bv : v < bv) {
            best = j;
            bv = v;
          }
        }
        os.setLong(Strided.elementOffset(o, oShape, oos, out.offset()), best);
      }
      return;
    }
    for (long o = 0; o < nOuter; o++) {
      int xo = Strided.elementOffset(o, oShape, oxs, x.offset());
      int best = 0;
      double bv = xs.getDouble(xo);
      for (int j = 1; j < n && !Double.isNaN(bv); j++) {
        double v = xs.getDouble(xo + j * step);
        if (Double.isNaN(v) || (max ? v > bv : v < bv)) {
          best = j;
          bv = v;
        }
      }
      os.setLong(Strided.elementOffset(o, oShape, oos, out.offset()), best);
    }
  }

  /** argmax/argmin over the last axis of contiguous float rows: a row kernel per row, rows split over the pool. */
  private static void argRows(FloatKernels k, boolean max, View x, View out) {
    int cols = x.shapeRef()[x.rank() - 1];
    if (x.numel() == 0) return;
    int rows = (int) (x.numel() / cols);
    long[] oa = out.storage().longs();
    rowBlocks(rows, cols, CpuBackend.PARALLEL_MIN, (r0, r1) -> {
      int n = r1 - r0;
      int xo = x.offset() + r0 * cols;
      if (x.dtype() == DType.F32) k.argExtremeRows(max, x.storage().floats(), xo, n, cols, oa, out.offset() + r0);
      else ScalarKernels.argExtremeRows(max, x.storage().doubles(), xo, n, cols, oa, out.offset() + r0);
    });
  }

  static void softmax(FloatKernels k, View x, int axis, boolean log, View out) {
    int last = x.rank() - 1;
    if (axis != last || !x.isContiguous() || !out.isContiguous()) {
      // move the axis last, compute on contiguous rows, write back through the permuted view
      View xt = StridedView.uninitialized(x.dtype(), StridedView.transpose(x, axis, -1).shapeRef());
      copyInto(StridedView.transpose(x, axis, -1), xt);
      View ot = StridedView.uninitialized(out.dtype(), xt.shapeRef());
      softmax(k, xt, xt.rank() - 1, log, ot);
      copyInto(ot, StridedView.transpose(out, axis, -1));
      return;
    }
    int cols = x.shapeRef()[last];
    if (cols == 0 || x.numel() == 0) return;
    int rows = (int) (x.numel() / cols);
    rowBlocks(rows, cols, CpuBackend.PARALLEL_MIN, (r0, r1) -> { // exp-bound
      int n = r1 - r0;
      if (x.dtype() == DType.F32) {
        k.softmaxRows(x.storage().floats(), x.offset() + r0 * cols, out.storage().floats(), out.offset() + r0 * cols, n, cols, log);
      } else {
        ScalarKernels.softmaxRows(x.storage().doubles(), x.offset() + r0 * cols, out.storage().doubles(),
            out.offset() + r0 * cols, n, cols, log);
      }
    });
  }

  static void softmaxBackward(FloatKernels k, View g, View y, boolean log, View out) {
    DType dt = y.dtype();
    if ((dt != DType.F32 && dt != DType.F64) || g.dtype() != dt || out.dtype() != dt
        || !java.util.Arrays.equals(g.shapeRef(), y.shapeRef()) || !java.util.Arrays.equals(out.shapeRef(), y.shapeRef())
        || !g.isContiguous() || !y.isContiguous() || !out.isContiguous() || y.rank() == 0) {
      throw new IllegalArgumentException((log ? "log_softmax" : "softmax") + " backward: g, y and out must be contiguous"
          + " tensors of one floating dtype and shape, got g " + g.dtype().torchName() + java.util.Arrays.toString(g.shapeRef())
          + ", y " + dt.torchName() + java.util.Arrays.toString(y.shapeRef()) + ", out " + out.dtype().torchName()
          + java.util.Arrays.toString(out.shapeRef()));
    }
    // exp(y) first, as one elementwise pass over the whole tensor like the composite's y.exp(): a vector
    // kernel's exp and its scalar tail may differ in the last bit, so a row-by-row exp would not match
    if (log) Device.CPU.backend().unary(UnaryOp.EXP, 0, y, out);
    int cols = y.shapeRef()[y.rank() - 1];
    if (cols == 0 || y.numel() == 0) return;
    int rows = (int) (y.numel() / cols);
    boolean lone = rows == 1 && cols >= CpuBackend.PARALLEL_MIN; // reduce() sums such a row in chunk partials
    rowBlocks(rows, cols, CpuBackend.PARALLEL_MIN, (r0, r1) -> {
      for (int r = r0; r < r1; r++) {
        int go = g.offset() + r * cols;
        int yo = y.offset() + r * cols;
        int oo = out.offset() + r * cols;
        if (dt == DType.F32) softmaxBackwardRow(k, log, g.storage().floats(), go, y.storage().floats(), yo,
            out.storage().floats(), oo, cols, lone);
        else softmaxBackwardRow(log, g.storage().doubles(), go, y.storage().doubles(), yo, out.storage().doubles(), oo, cols);
      }
    });
  }

  /** One row in float, op by op as the composite runs them (the kernels it would call, in its order; exp(y) already in out for log). */
  private static void softmaxBackwardRow(FloatKernels k, boolean log, float[] g, int go, float[] y, int yo,
      float[] out, int oo, int n, boolean lone) {
    if (log) { // g - exp(y) * sum(g), exp(y) already in out
      float s = rowSum(k, g, go, n, lone);
      k.binaryScalarRight(BinaryOp.MUL, out, oo, s, out, oo, n);
      k.binary(BinaryOp.SUB, g, go, out, oo, out, oo, n);
    } else { // y * (g - sum(g * y))
      k.binary(BinaryOp.MUL, g, go, y, yo, out, oo, n);
      float s = rowSum(k, out, oo, n, lone);
      k.binaryScalarRight(BinaryOp.SUB, g, go, s, out, oo, n);
      k.binary(BinaryOp.MUL, y, yo, out, oo, out, oo, n);
    }
  }

  /** A row's sum with reduce()'s bits: one kernel call, or for a lone long row its chunk partials added in order. */
  private static float rowSum(FloatKernels k, float[] x, int off, int n, boolean lone) {
    if (!lone) return k.sum(x, off, n);
    float acc = 0;
    for (int j0 = 0; j0 < n; j0 += CpuBackend.CHUNK) {
      float part = k.sum(x, off + j0, Math.min(n, j0 + CpuBackend.CHUNK) - j0);
      acc = j0 == 0 ? part : acc + part;
    }
    return acc;
  }

  /** One row in double (for log_softmax, exp(y) already in out); the sum in order from 0, as reduce()'s generic loop takes it. */
  private static void softmaxBackwardRow(boolean log, double[] g, int go, double[] y, int yo, double[] out, int oo, int n) {
    double s = 0;
    if (log) {
      for (int j = 0; j < n; j++) s += g[go + j];
      for (int j = 0; j < n; j++) out[oo + j] = g[go + j] - out[oo + j] * s;
    } else {
      for (int j = 0; j < n; j++) s += g[go + j] * y[yo + j];
      for (int j = 0; j < n; j++) out[oo + j] = y[yo + j] * (g[go + j] - s);
    }
  }

  private static void copyInto(View src, View dst) {
    Device.CPU.backend().copy(src, dst);
  }

  static void cumsum(View x, int axis, View out) {
    View xm = StridedView.transpose(x, axis, -1);
    View om = StridedView.transpose(out, axis, -1);
    int n = xm.shapeRef()[xm.rank() - 1];
    int xstep = xm.stridesRef()[xm.rank() - 1];
    int ostep = om.stridesRef()[om.rank() - 1];
    int[] oShape = java.util.Arrays.copyOf(xm.shapeRef(), xm.rank() - 1);
    int[] oxs = java.util.Arrays.copyOf(xm.stridesRef(), xm.rank() - 1);
    int[] oos = java.util.Arrays.copyOf(om.stridesRef(), om.rank() - 1);
    long nOuter = n == 0 ? 0 : Shapes.numel(oShape);
    Storage xs = x.storage();
    Storage os = out.storage();
    boolean integral = !os.dtype().isFloatingPoint();
    for (long o = 0; o < nOuter; o++) {
      int xo = Strided.elementOffset(o, oShape, oxs, x.offset());
      int oo = Strided.elementOffset(o, oShape, oos, out.offset());
      if (integral) {
        long acc = 0;
        for (int j = 0; j < n; j++) {
          acc += xs.getLong(xo + j * xstep);
          os.setLong(oo + j * ostep, acc);
        }
      } else if (os.dtype() == DType.F32) {
        float acc = 0; // float accumulation, as PyTorch's CPU cumsum of float32
        for (int j = 0; j < n; j++) {
          acc += (float) xs.getDouble(xo + j * xstep);
          os.setDouble(oo + j * ostep, acc);
        }
      } else {
        double acc = 0;
        for (int j = 0; j < n; j++) {
          acc += xs.getDouble(xo + j * xstep);
          os.setDouble(oo + j * ostep, acc);
        }
      }
    }
  }
}
