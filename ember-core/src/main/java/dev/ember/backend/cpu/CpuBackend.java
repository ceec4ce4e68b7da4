package dev.ember.backend.cpu;

import dev.ember.backend.AttentionKernels;
import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.Int8Matrix;
import dev.ember.backend.ConvolutionKernels;
import dev.ember.backend.NormalizationKernels;
import dev.ember.backend.OptimizerKernels;
import dev.ember.backend.PoolingKernels;
import dev.ember.backend.RandomKernels;
import dev.ember.backend.RecurrentKernels;
import dev.ember.backend.ReduceOp;
import dev.ember.backend.ResamplingKernels;
import dev.ember.backend.RowSink;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.backend.cpu.conv.CpuConvolution;
import dev.ember.tensor.DType;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;

/**
 * The CPU backend: strided iteration, broadcasting, dtype dispatch and threading, on top of a
 * {@link FloatKernels} set for the contiguous float32 inner loops. Float64 runs the scalar double
 * kernels (it is for gradient checks); integer and bool tensors take a generic element loop.
 *
 * <p>Threading: work is cut into tasks of a fixed number of elements ({@link #CHUNK}), never by the
 * thread count, and reductions combine per-task partials in task order, so results are bitwise the
 * same on any number of threads. Ops under {@link #PARALLEL_MIN} elements stay on the calling thread.
 */
public final class CpuBackend implements Backend {
  static final int CHUNK = 1 << 15;
  /**
   * Below this many elements (two chunks) an op stays on the calling thread. At 64K floats on two
   * threads, in MemoryScopes and with Parallel keeping each chunk on the core that wrote it (68e4618):
   * add 100 -> 169 GB/s, relu 93 -> 147, a*x+b 45 -> 76, sum 97 -> 132, relu forward+backward at
   * 256^2 14.6 -> 8.6 us. The earlier threshold of 256K was measured with a fresh output per call
   * (its zeroing most of the cost) and tasks handed out in any order: a 64K neg then took 28 us on one
   * thread and 38 on two. Exp-bound ops already split from here.
   */
  static final int PARALLEL_MIN = 2 * CHUNK;
  private final FloatKernels k;
  private final CpuNormalization normalization = new CpuNormalization();
  private final CpuAttention attention = new CpuAttention(this);
  private final CpuRecurrent recurrent = new CpuRecurrent(this);
  private final CpuRandom random = new CpuRandom();

  public CpuBackend(FloatKernels kernels) {
    this.k = kernels;
  }

  @Override
  public String name() {
    return k.name();
  }

  public FloatKernels floatKernels() {
    return k;
  }

  /** A piece of one "row" (all dims but the last) of an elementwise op: columns [j0, j1). */
  @FunctionalInterface
  private interface Segment {
    void run(int row, int j0, int j1);
  }

  /** Runs {@code body} over rows x inner, split into fixed-size tasks from {@link #PARALLEL_MIN} elements on. */
  private static void segments(int rows, int inner, Segment body) {
    long total = (long) rows * inner;
    if (total < PARALLEL_MIN) {
      for (int r = 0; r < rows; r++) body.run(r, 0, inner);
    } else if (inner >= CHUNK) {
      int pieces = Parallel.chunks(inner, CHUNK);
      Parallel.forEach(rows * pieces, t -> {
        int r = t / pieces;
        int j0 = (t % pieces) * CHUNK;
        body.run(r, j0, Math.min(inner, j0 + CHUNK));
      });
    } else {
      int rowsPerTask = Math.max(1, CHUNK / inner);
      Parallel.forEach(Parallel.chunks(rows, rowsPerTask), t -> {
        int r1 = Math.min(rows, (t + 1) * rowsPerTask);
        for (int r = t * rowsPerTask; r < r1; r++) body.run(r, 0, inner);
      });
    }
  }

  // ------------------------------------------------------------------ elementwise

  @Override
  public void unary(UnaryOp op, double param, View x, View out) {
    int[][] c = Strided.coalesce(out.shapeRef(), out.stridesRef(), x.stridesRef());
    int[] shape = c[0];
    int[] so = c[1];
    int[] sx = c[2];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    int iso = so[last];
    int isx = sx[last];
    Storage xs = x.storage();
    Storage os = out.storage();
    if (xs.dtype() == DType.F32 && os.dtype() == DType.F32) {
      float[] xa = xs.floats();
      float[] oa = os.floats();
      float p = (float) param;
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
        int xo = Strided.rowOffset(r, shape, sx, x.offset()) + j0 * isx;
        if (iso == 1 && isx == 1) {
          k.unary(op, p, xa, xo, oa, oo, j1 - j0);
        } else if (iso == 1 && isx == 0) { // one input value along the row (an expanded gradient): once, then a fill
          java.util.Arrays.fill(oa, oo, oo + j1 - j0, (float) ScalarKernels.apply(op, xa[xo], p));
        } else {
          for (int j = 0; j < j1 - j0; j++) oa[oo + j * iso] = (float) ScalarKernels.apply(op, xa[xo + j * isx], p);
        }
      });
    } else if (xs.dtype() == DType.F64 && os.dtype() == DType.F64) {
      double[] xa = xs.doubles();
      double[] oa = os.doubles();
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
        int xo = Strided.rowOffset(r, shape, sx, x.offset()) + j0 * isx;
        if (iso == 1 && isx == 1) {
          ScalarKernels.unary(op, param, xa, xo, oa, oo, j1 - j0);
        } else {
          for (int j = 0; j < j1 - j0; j++) oa[oo + j * iso] = ScalarKernels.apply(op, xa[xo + j * isx], param);
        }
      });
    } else if (!xs.dtype().isFloatingPoint() && !os.dtype().isFloatingPoint() && ScalarKernels.definedOnIntegers(op)) {
      // in integer arithmetic, wrapping as PyTorch: through double, int64 above 2^53 rounded and neg saturated
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset());
        int xo = Strided.rowOffset(r, shape, sx, x.offset());
        for (int j = j0; j < j1; j++) os.setLong(oo + j * iso, ScalarKernels.applyInteger(op, xs.getLong(xo + j * isx)));
      });
    } else {
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset());
        int xo = Strided.rowOffset(r, shape, sx, x.offset());
        for (int j = j0; j < j1; j++) os.setDouble(oo + j * iso, ScalarKernels.apply(op, xs.getDouble(xo + j * isx), param));
      });
    }
  }

  /**
   * Contiguous float32 programs in one pass over the pool ({@link CpuFused}) with this kernel set's
   * {@link FloatKernels#fused} kernel; anything else step by step, as the SPI's default.
   */
  @Override
  public void fusedElementwise(dev.ember.backend.ElementwiseProgram program, View[] inputs, View out) {
    if (CpuFused.applies(program, inputs, out)) {
      CpuFused.run(k.fused(program), program, inputs, out);
    } else {
      Backend.super.fusedElementwise(program, inputs, out);
    }
  }

  /** out = a + b^T over [rows, cols] (see FloatKernels.addTransposed), in 64-row blocks over the pool. */
  private void addTransposed(float[] a, int ao, float[] b, int bo, int ldb, float[] out, int oo, int rows, int cols) {
    int block = 64;
    int tasks = (long) rows * cols < PARALLEL_MIN ? 1 : Parallel.chunks(rows, block);
    int per = tasks == 1 ? rows : block;
    Parallel.forEach(tasks, t -> {
      int r0 = t * per;
      int n = Math.min(rows, r0 + per) - r0;
      k.addTransposed(a, ao + r0 * cols, b, bo + r0, ldb, out, oo + r0 * cols, n, cols);
    });
  }

  /** The comparison that gives {@code b op' a} what {@code a op b} gives. */
  private static BinaryOp mirrored(BinaryOp op) {
    return switch (op) {
      case LT -> BinaryOp.GT;
      case GT -> BinaryOp.LT;
      case LE -> BinaryOp.GE;
      case GE -> BinaryOp.LE;
      default -> op; // EQ, NE
    };
  }

  @Override
  public void binary(BinaryOp op, View a, View b, View out) {
    int[][] c = Strided.coalesce(out.shapeRef(), out.stridesRef(), a.stridesRef(), b.stridesRef());
    int[] shape = c[0];
    int[] so = c[1];
    int[] sa = c[2];
    int[] sb = c[3];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    int iso = so[last];
    int isa = sa[last];
    int isb = sb[last];
    Storage as = a.storage();
    Storage bs = b.storage();
    Storage os = out.storage();
    if (!op.returnsBool() && as.dtype() == DType.F32 && bs.dtype() == DType.F32 && os.dtype() == DType.F32) {
      float[] aa = as.floats();
      float[] ba = bs.floats();
      float[] oa = os.floats();
      if (op == BinaryOp.ADD && shape.length == 2 && so[0] == inner && iso == 1 && oa != (isa == 1 ? ba : aa)) {
        // a contiguous [R, C] plus a transposed one (a gradient accumulated into a weight): tiles, not a strided loop
        if (sa[0] == inner && isa == 1 && sb[0] == 1 && isb >= rows) {
          addTransposed(aa, a.offset(), ba, b.offset(), isb, oa, out.offset(), rows, inner);
          return;
        }
        if (sb[0] == inner && isb == 1 && sa[0] == 1 && isa >= rows) {
          addTransposed(ba, b.offset(), aa, a.offset(), isa, oa, out.offset(), rows, inner);
          return;
        }
      }
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
        int ao = Strided.rowOffset(r, shape, sa, a.offset()) + j0 * isa;
        int bo = Strided.rowOffset(r, shape, sb, b.offset()) + j0 * isb;
        int n = j1 - j0;
        if (iso == 1 && isa == 1 && isb == 1) {
          k.binary(op, aa, ao, ba, bo, oa, oo, n);
        } else if (iso == 1 && isa == 1 && isb == 0) {
          k.binaryScalarRight(op, aa, ao, ba[bo], oa, oo, n);
        } else if (iso == 1 && isa == 0 && isb == 1) {
          k.binaryScalarLeft(op, aa[ao], ba, bo, oa, oo, n);
        } else {
          for (int j = 0; j < n; j++) {
            oa[oo + j * iso] = (float) ScalarKernels.apply(op, aa[ao + j * isa], ba[bo + j * isb]);
          }
        }
      });
    } else if (!op.returnsBool() && as.dtype() == DType.F64 && bs.dtype() == DType.F64 && os.dtype() == DType.F64) {
      double[] aa = as.doubles();
      double[] ba = bs.doubles();
      double[] oa = os.doubles();
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
        int ao = Strided.rowOffset(r, shape, sa, a.offset()) + j0 * isa;
        int bo = Strided.rowOffset(r, shape, sb, b.offset()) + j0 * isb;
        int n = j1 - j0;
        if (iso == 1 && isa == 1 && isb == 1) {
          ScalarKernels.binary(op, aa, ao, ba, bo, oa, oo, n);
        } else {
          for (int j = 0; j < n; j++) oa[oo + j * iso] = ScalarKernels.apply(op, aa[ao + j * isa], ba[bo + j * isb]);
        }
      });
    } else if (op.isComparison() && as.dtype() == DType.F32 && bs.dtype() == DType.F32 && os.dtype() == DType.BOOL) {
      float[] aa = as.floats();
      float[] ba = bs.floats();
      byte[] oa = os.bools();
      segments(rows, inner, (r, j0, j1) -> {
        int ao = Strided.rowOffset(r, shape, sa, a.offset()) + j0 * isa;
        int bo = Strided.rowOffset(r, shape, sb, b.offset()) + j0 * isb;
        int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
        if (iso == 1 && isa == 1 && (isb == 1 || isb == 0)) {
          k.compare(op, aa, ao, ba, bo, isb == 0, oa, oo, j1 - j0);
        } else if (iso == 1 && isa == 0 && isb == 1) { // s op b is b op' s, op' the mirrored comparison
          k.compare(mirrored(op), ba, bo, aa, ao, true, oa, oo, j1 - j0);
        } else {
          ScalarKernels.compare(op, aa, ao, isa, ba, bo, isb, oa, oo, iso, j1 - j0);
        }
      });
    } else if (op.isLogical() && as.dtype() == DType.BOOL && bs.dtype() == DType.BOOL && os.dtype() == DType.BOOL) {
      byte[] aa = as.bools();
      byte[] ba = bs.bools();
      byte[] oa = os.bools();
      segments(rows, inner, (r, j0, j1) -> ScalarKernels.logical(op, aa, Strided.rowOffset(r, shape, sa, a.offset()) + j0 * isa,
          isa, ba, Strided.rowOffset(r, shape, sb, b.offset()) + j0 * isb, isb, oa,
          Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso, iso, j1 - j0));
    } else {
      // integers in 64-bit arithmetic (exact beyond 2^53, wrapping as PyTorch): arithmetic into an integer dtype, and
      // comparisons and logical ops of two integer operands (a float operand compares as a float)
      boolean integral = op.returnsBool() ? !as.dtype().isFloatingPoint() && !bs.dtype().isFloatingPoint()
          : !os.dtype().isFloatingPoint();
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, so, out.offset());
        int ao = Strided.rowOffset(r, shape, sa, a.offset());
        int bo = Strided.rowOffset(r, shape, sb, b.offset());
        for (int j = j0; j < j1; j++) {
          if (integral) {
            os.setLong(oo + j * iso, ScalarKernels.applyInteger(op, as.getLong(ao + j * isa), bs.getLong(bo + j * isb)));
          } else {
            os.setDouble(oo + j * iso, ScalarKernels.apply(op, as.getDouble(ao + j * isa), bs.getDouble(bo + j * isb)));
          }
        }
      });
    }
  }

  /**
   * Activation then residual add on one block of {@link #EPILOGUE_BLOCK} elements at a time (in parallel over the
   * blocks), so that the add reads the activation's result from L1 rather than memory: for contiguous float32
   * views. The blocks start at multiples of every vector length, as the chunks of {@link #unary} do, so each
   * element goes through the same vector or scalar path as there and has its bits. Other layouts and dtypes take
   * the two whole-tensor passes.
   */
  @Override
  public void epilogue(UnaryOp op, double param, View z, View a, View residual, View out) {
    boolean f32 = z.dtype() == DType.F32 && a.dtype() == DType.F32 && z.isContiguous() && a.isContiguous()
        && (residual == null || residual.dtype() == DType.F32 && residual.isContiguous() && out.dtype() == DType.F32
        && out.isContiguous());
    if (!f32 || op == null) {
      Backend.super.epilogue(op, param, z, a, residual, out);
      return;
    }
    int n = (int) z.numel();
    float[] za = z.storage().floats();
    float[] aa = a.storage().floats();
    float[] ra = residual == null ? null : residual.storage().floats();
    float[] oa = residual == null ? null : out.storage().floats();
    float p = (float) param;
    int zo = z.offset();
    int ao = a.offset();
    int ro = residual == null ? 0 : residual.offset();
    int oo = residual == null ? 0 : out.offset();
    int blocks = (n + EPILOGUE_BLOCK - 1) / EPILOGUE_BLOCK;
    java.util.function.IntConsumer block = t -> {
      int e0 = t * EPILOGUE_BLOCK;
      int len = Math.min(n, e0 + EPILOGUE_BLOCK) - e0;
      k.unary(op, p, za, zo + e0, aa, ao + e0, len);
      if (ra != null) k.binary(BinaryOp.ADD, aa, ao + e0, ra, ro + e0, oa, oo + e0, len);
    };
    if (n < PARALLEL_MIN) {
      for (int t = 0; t < blocks; t++) block.accept(t);
    } else {
      Parallel.forEach(blocks, block);
    }
  }

  /** Elements of one epilogue block: 32 KiB of float32, a multiple of every vector length. */
  static final int EPILOGUE_BLOCK = 1 << 13;

  @Override
  public void unaryBackward(UnaryOp op, View g, View ref, View out) {
    ScalarKernels.requireFusedBackward(op);
    int[][] c = Strided.coalesce(out.shapeRef(), out.stridesRef(), g.stridesRef(), ref.stridesRef());
    int[] shape = c[0];
    int[] so = c[1];
    int[] sg = c[2];
    int[] sr = c[3];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    int iso = so[last];
    int isg = sg[last];
    int isr = sr[last];
    Storage gs = g.storage();
    Storage rs = ref.storage();
    Storage os = out.storage();
    boolean f32 = gs.dtype() == DType.F32 && rs.dtype() == DType.F32 && os.dtype() == DType.F32;
    boolean f64 = gs.dtype() == DType.F64 && rs.dtype() == DType.F64 && os.dtype() == DType.F64;
    segments(rows, inner, (r, j0, j1) -> {
      int oo = Strided.rowOffset(r, shape, so, out.offset()) + j0 * iso;
      int go = Strided.rowOffset(r, shape, sg, g.offset()) + j0 * isg;
      int ro = Strided.rowOffset(r, shape, sr, ref.offset()) + j0 * isr;
      int n = j1 - j0;
      boolean unit = iso == 1 && isg == 1 && isr == 1;
      if (f32 && unit) {
        k.unaryBackward(op, gs.floats(), go, rs.floats(), ro, os.floats(), oo, n);
      } else if (f64 && unit) {
        ScalarKernels.unaryBackward(op, gs.doubles(), go, rs.doubles(), ro, os.doubles(), oo, n);
      } else if (f32) {
        for (int j = 0; j < n; j++) { // in float, rounding where the kernels round
          float v = ScalarKernels.unaryBackward(op, (float) gs.getDouble(go + j * isg), (float) rs.getDouble(ro + j * isr));
          os.setDouble(oo + j * iso, v);
        }
      } else {
        for (int j = 0; j < n; j++) {
          os.setDouble(oo + j * iso, ScalarKernels.unaryBackward(op, gs.getDouble(go + j * isg), rs.getDouble(ro + j * isr)));
        }
      }
    });
  }

  @Override
  public void copy(View src, View dst) {
    if (copyBroadcastRow(src, dst)) return;
    int[][] c = Strided.coalesce(dst.shapeRef(), dst.stridesRef(), src.stridesRef());
    int[] shape = c[0];
    int[] sd = c[1];
    int[] ss = c[2];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    int isd = sd[last];
    int iss = ss[last];
    Storage s = src.storage();
    Storage d = dst.storage();
    boolean sameType = s.dtype() == d.dtype();
    segments(rows, inner, (r, j0, j1) -> {
      int doff = Strided.rowOffset(r, shape, sd, dst.offset()) + j0 * isd;
      int soff = Strided.rowOffset(r, shape, ss, src.offset()) + j0 * iss;
      int n = j1 - j0;
      if (sameType && isd == 1 && iss == 1) {
        System.arraycopy(s.array(), soff, d.array(), doff, n);
      } else if (isd == 1 && iss == 1 && convertHalf(s, soff, d, doff, n)) {
        // float32 <-> bfloat16 / float16: the bulk conversion kernels
      } else if (s.dtype() == DType.F32 && d.dtype() == DType.F32 && isd == 1 && iss == 0) {
        // a broadcast (expand) row, e.g. sum's gradient materialized: one value repeated
        java.util.Arrays.fill(d.floats(), doff, doff + n, s.floats()[soff]);
      } else if (s.dtype() == DType.F32 && d.dtype() == DType.F32) {
        float[] sa = s.floats();
        float[] da = d.floats();
        for (int j = 0; j < n; j++) da[doff + j * isd] = sa[soff + j * iss];
      } else if (s.dtype() == DType.I64 || d.dtype() == DType.I64) {
        for (int j = 0; j < n; j++) d.setLong(doff + j * isd, s.dtype().isFloatingPoint()
            ? (long) s.getDouble(soff + j * iss) : s.getLong(soff + j * iss));
      } else {
        for (int j = 0; j < n; j++) d.setDouble(doff + j * isd, s.getDouble(soff + j * iss));
      }
    });
  }

  /**
   * dst = src where src is one contiguous row broadcast over every leading axis (stride 0 there, 1 in the last), dst
   * is contiguous and both have one dtype, for outputs {@link #segments} would copy on one thread: one
   * {@code System.arraycopy} per row. linear's bias as GEMM's starting C takes this path: at batch 1 the coalescing and
   * the row lambda of the general copy cost more than the copy of its 128 floats. False (nothing done) otherwise.
   */
  private static boolean copyBroadcastRow(View src, View dst) {
    int[] shape = dst.shapeRef();
    int[] ss = src.stridesRef();
    int last = shape.length - 1;
    if (last < 0 || ss[last] != 1 || src.dtype() != dst.dtype()) return false;
    for (int i = 0; i < last; i++) if (ss[i] != 0) return false;
    long total = dst.numel();
    if (total >= PARALLEL_MIN || total == 0 || !dst.isContiguous()) return false;
    int inner = shape[last];
    int rows = (int) (total / inner);
    Object from = src.storage().array();
    Object to = dst.storage().array();
    int soff = src.offset();
    int doff = dst.offset();
    for (int r = 0; r < rows; r++) System.arraycopy(from, soff, to, doff + r * inner, inner);
    return true;
  }

  /**
   * Converts n contiguous elements between F32 and BF16 / F16 with the {@link HalfKernels} bulk loops; false (and
   * nothing done) for any other pair of dtypes.
   */
  private static boolean convertHalf(Storage s, int soff, Storage d, int doff, int n) {
    DType from = s.dtype();
    DType to = d.dtype();
    if (from == DType.F32 && to == DType.BF16) HALF.toBf16(s.floats(), soff, d.halves(), doff, n);
    else if (from == DType.F32 && to == DType.F16) HALF.toF16(s.floats(), soff, d.halves(), doff, n);
    else if (from == DType.BF16 && to == DType.F32) HALF.fromBf16(s.halves(), soff, d.floats(), doff, n);
    else if (from == DType.F16 && to == DType.F32) HALF.fromF16(s.halves(), soff, d.floats(), doff, n);
    else return false;
    return true;
  }

  private static final HalfKernels HALF = HalfKernels.instance();

  @Override
  public void fill(View dst, double value) {
    int[][] c = Strided.coalesce(dst.shapeRef(), dst.stridesRef());
    int[] shape = c[0];
    int[] sd = c[1];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    int isd = sd[last];
    Storage d = dst.storage();
    segments(rows, inner, (r, j0, j1) -> {
      int off = Strided.rowOffset(r, shape, sd, dst.offset());
      if (d.dtype() == DType.F32 && isd == 1) {
        java.util.Arrays.fill(d.floats(), off + j0, off + j1, (float) value);
      } else {
        for (int j = j0; j < j1; j++) d.setDouble(off + j * isd, value);
      }
    });
  }

  @Override
  public void where(View cond, View a, View b, View out) {
    int[][] c = Strided.coalesce(out.shapeRef(), out.stridesRef(), cond.stridesRef(), a.stridesRef(), b.stridesRef());
    int[] shape = c[0];
    int last = shape.length - 1;
    int inner = shape[last];
    int rows = (int) (Shapes.numel(shape) / Math.max(inner, 1));
    Storage os = out.storage();
    Storage cs = cond.storage();
    Storage as = a.storage();
    Storage bs = b.storage();
    int iso = c[1][last], isc = c[2][last], isa = c[3][last], isb = c[4][last];
    DType dt = os.dtype();
    if (cs.dtype() == DType.BOOL && (dt == DType.F32 || dt == DType.F64) && as.dtype() == dt && bs.dtype() == dt) {
      byte[] ca = cs.bools();
      segments(rows, inner, (r, j0, j1) -> {
        int oo = Strided.rowOffset(r, shape, c[1], out.offset()) + j0 * iso;
        int co = Strided.rowOffset(r, shape, c[2], cond.offset()) + j0 * isc;
        int ao = Strided.rowOffset(r, shape, c[3], a.offset()) + j0 * isa;
        int bo = Strided.rowOffset(r, shape, c[4], b.offset()) + j0 * isb;
        int n = j1 - j0;
        if (dt == DType.F32 && iso == 1 && isc == 1 && (isa == 0 || isa == 1) && (isb == 0 || isb == 1)) {
          k.where(ca, co, as.floats(), ao, isa == 0, bs.floats(), bo, isb == 0, os.floats(), oo, n);
        } else if (dt == DType.F32) {
          ScalarKernels.where(ca, co, isc, as.floats(), ao, isa, bs.floats(), bo, isb, os.floats(), oo, iso, n);
        } else {
          double[] oa = os.doubles(), aa = as.doubles(), ba = bs.doubles();
          for (int j = 0; j < n; j++) oa[oo + j * iso] = ca[co + j * isc] != 0 ? aa[ao + j * isa] : ba[bo + j * isb];
        }
      });
      return;
    }
    boolean integral = !dt.isFloatingPoint() && !as.dtype().isFloatingPoint() && !bs.dtype().isFloatingPoint();
    segments(rows, inner, (r, j0, j1) -> {
      int oo = Strided.rowOffset(r, shape, c[1], out.offset());
      int co = Strided.rowOffset(r, shape, c[2], cond.offset());
      int ao = Strided.rowOffset(r, shape, c[3], a.offset());
      int bo = Strided.rowOffset(r, shape, c[4], b.offset());
      for (int j = j0; j < j1; j++) {
        boolean take = cs.getDouble(co + j * c[2][last]) != 0;
        if (integral) { // the chosen element's own value: through double, int64 above 2^53 was rounded
          os.setLong(oo + j * c[1][last], take ? as.getLong(ao + j * c[3][last]) : bs.getLong(bo + j * c[4][last]));
        } else {
          os.setDouble(oo + j * c[1][last], take ? as.getDouble(ao + j * c[3][last]) : bs.getDouble(bo + j * c[4][last]));
        }
      }
    });
  }

  // ------------------------------------------------------------------ reductions

  @Override
  public void reduce(ReduceOp op, View x, int[] axes, View out) {
    Reductions.reduce(k, op, x, axes, out);
  }

  @Override
  public void argReduce(boolean max, View x, int axis, View out) {
    Reductions.argReduce(k, max, x, axis, out);
  }

  @Override
  public void softmax(View x, int axis, boolean log, View out) {
    Reductions.softmax(k, x, axis, log, out);
  }

  @Override
  public void softmaxBackward(View g, View y, boolean log, View out) {
    Reductions.softmaxBackward(k, g, y, log, out);
  }

  @Override
  public void cumsum(View x, int axis, View out) {
    Reductions.cumsum(x, axis, out);
  }

  // ------------------------------------------------------------------ matmul and indexing

  @Override
  public void matmul(View a, View b, View out, float beta) {
    Matmul.run(k, a, b, out, beta);
  }

  /** The Vector API int8 kernel ({@link Int8Gemm}): the same bits as the default, tiled and in parallel. */
  @Override
  public void int8LinearDequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m, int n, int k) {
    Int8Gemm.gemmDequantize(a, aZero, aScale, b, bRowSum, bScale, bias, out, m, n, k);
  }

  /** The Vector API int8 kernel with the requantizing epilogue ({@link Int8Gemm#gemmRequantize}): the same bits. */
  @Override
  public void int8LinearRequantize(byte[] a, int aZero, float aScale, byte[] b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int n, int k) {
    if (outMin > outMax || outMin < -128 || outMax > 255) {
      throw new IllegalArgumentException("int8LinearRequantize: output range must be an 8-bit range, got [" + outMin
          + ", " + outMax + "]");
    }
    Int8Gemm.gemmRequantize(a, aZero, aScale, b, bRowSum, bScale, bias, outScale, outZero, outMin, outMax, out, m, n, k);
  }

  /** The packed int8 kernel: B's panels are made on its first product and kept in it ({@link Int8Gemm#panels}). */
  @Override
  public void int8LinearDequantize(byte[] a, int aZero, float aScale, Int8Matrix b, int[] bRowSum, float[] bScale,
      float[] bias, float[] out, int m) {
    Int8Gemm.gemmDequantize(a, aZero, aScale, Int8Gemm.panels(b), bRowSum, bScale, bias, out, m);
  }

  /** The packed int8 kernel with the requantizing epilogue: B's panels are made on its first product and kept. */
  @Override
  public void int8LinearRequantize(byte[] a, int aZero, float aScale, Int8Matrix b, int[] bRowSum, float[] bScale,
      float[] bias, float outScale, int outZero, int outMin, int outMax, byte[] out, int m) {
    checkOutRange("int8LinearRequantize", outMin, outMax);
    Int8Gemm.gemmRequantize(a, aZero, aScale, Int8Gemm.panels(b), bRowSum, bScale, bias, outScale, outZero, outMin,
        outMax, out, m);
  }

  /** The packed int8 kernel in the weight-times-columns orientation ({@link Int8Gemm#convRequantize}). */
  @Override
  public void int8ConvRequantize(Int8Matrix w, int[] wRowSum, float[] wScale, float[] bias, byte[] x, int xZero,
      float xScale, float outScale, int outZero, int outMin, int outMax, byte[] out, int m, int plane, int outOff,
      int imageStride) {
    checkOutRange("int8ConvRequantize", outMin, outMax);
    Int8Gemm.convRequantize(w, wRowSum, wScale, bias, x, xZero, xScale, outScale, outZero, outMin, outMax, out, m,
        plane, outOff, imageStride);
  }

  private static void checkOutRange(String op, int outMin, int outMax) {
    if (outMin > outMax || outMin < -128 || outMax > 255) {
      throw new IllegalArgumentException(op + ": output range must be an 8-bit range, got [" + outMin + ", " + outMax
          + "]");
    }
  }

  /** The Vector API quantization loop ({@link Int8Kernels#quantize}): the same bits as the default. */
  @Override
  public void quantizeInt8(float[] x, int off, int n, float scale, int zeroPoint, int qmin, int qmax, byte[] out,
      int outOff) {
    Int8Gemm.kernels().quantize(x, off, n, scale, zeroPoint, qmin, qmax, out, outOff);
  }

  @Override
  public float[] minMax(float[] x, int off, int n) {
    return Int8Gemm.kernels().minMax(x, off, n);
  }

  /** GEMM widens BF16/F16 operands while it packs them: see {@link Matmul}. */
  @Override
  public boolean matmulReadsHalf() {
    return true;
  }

  @Override
  public void matmulWeightRows(View x, View w, View out, float beta) {
    if (!Matmul.weightRows(k, x, w, out, beta)) Backend.super.matmulWeightRows(x, w, out, beta);
  }

  @Override
  public boolean matmulRowsSgd(View a, View b, View w, float lr, float wd, float sign) {
    return Matmul.rowsSgd(k, a, b, w, lr, wd, sign);
  }

  @Override
  public void matmulRows(View a, View b, RowSink sink) {
    Matmul.rows(k, a, b, sink);
  }

  @Override
  public void gather(View x, int dim, View index, View out) {
    Indexing.gather(x, dim, index, out);
  }

  @Override
  public void scatter(View out, int dim, View index, View src, boolean accumulate) {
    Indexing.scatter(out, dim, index, src, accumulate);
  }

  @Override
  public void indexSelect(View x, int dim, View index, View out) {
    Indexing.indexSelect(x, dim, index, out);
  }

  @Override
  public void indexAdd(View out, int dim, View index, View src) {
    Indexing.indexAdd(out, dim, index, src);
  }

  @Override
  public void indexAddIntoZeros(View out, View index, View src) {
    if (!Indexing.indexAddIntoZeros(out, index, src)) Backend.super.indexAddIntoZeros(out, index, src);
  }

  @Override
  public NormalizationKernels normalization() {
    return normalization;
  }

  @Override
  public AttentionKernels attention() {
    return attention;
  }

  @Override
  public RecurrentKernels recurrent() {
    return recurrent;
  }

  @Override
  public RandomKernels random() {
    return random;
  }

  @Override
  public ConvolutionKernels convolution() {
    return CpuConvolution.INSTANCE;
  }

  @Override
  public PoolingKernels pooling() {
    return CpuPooling.INSTANCE;
  }

  @Override
  public ResamplingKernels resampling() {
    return CpuResampling.INSTANCE;
  }

  // ------------------------------------------------------------------ threads and checks

  @Override
  public int threads() {
    return Parallel.threads();
  }

  @Override
  public void setThreads(int n) {
    Parallel.setThreads(n);
  }

  @Override
  public boolean allFinite(View x) {
    return Finite.all(x);
  }

  @Override
  public OptimizerKernels optimizer() {
    return CpuOptimizer.instance();
  }
}
