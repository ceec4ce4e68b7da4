package dev.ember.cuda.kernels;

import dev.ember.backend.Dims.AxisSplit;
import dev.ember.backend.ReduceOp;
import dev.ember.backend.StridedView;
import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Arrays;
import java.util.Set;

/**
 * Reductions, arg-reductions, softmax (and its backward), cumsum and allFinite on a CUDA device, with the
 * semantics of the CPU backend's: MAX and MIN propagate NaN, argmax and argmin return the first index and count
 * NaN as the largest, float32 cumsum accumulates in float32, integer and bool sums and cumsums give int64.
 *
 * <p>Every result is deterministic: each output element is reduced in an order fixed by the shapes alone. A short
 * reduction (fewer than {@value #THREAD_MAX} elements per output) runs one thread per output, in index order;
 * a longer one one block per output, each thread combining every blockDim-th element in order and the block
 * combining its threads as a fixed tree; a long reduction into few outputs is cut into chunks whose partials a
 * second kernel combines in chunk order. Floating sums and products accumulate in double (exact enough that
 * results rarely differ from a sequential float64 sum in the last float32 bit), integers in int64.
 */
public final class CudaReduce {
  /** Below this many elements per output a thread reduces an output alone. */
  static final int THREAD_MAX = 32;
  /** Rows of at least this many elements are split into chunks when there are few outputs. */
  static final long SPLIT_MIN = 1L << 16;
  /** Blocks a split reduction aims for (several per multiprocessor). */
  static final long TARGET_BLOCKS = 1024;
  /** The smallest chunk of a split row. */
  static final long MIN_CHUNK = 1L << 13;
  private static final int MAX_GRID = 1 << 20;

  /** {input dtype, output dtype} pairs of reduce. */
  private static final Set<String> REDUCE_TYPES = Set.of("f32>f32", "f64>f64", "i64>i64", "i32>i64", "i32>i32",
      "b8>i64", "b8>b8");
  private static final Set<String> CUMSUM_TYPES = Set.of("f32>f32", "f64>f64", "i64>i64", "i32>i64", "i32>i32",
      "b8>i64");

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace partials;
  private final Workspace rowSums;

  public CudaReduce(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.partials = new Workspace(ctx);
    this.rowSums = new Workspace(ctx);
  }

  /** A kernel of the reduction source compiled for inputs of {@code t}. */
  private long fn(DType t, String kernel) {
    return cache.function("ember_reduce_" + Geometry.tag(t), Sources.reduce(t), kernel);
  }

  /** Every kernel this class may launch on inputs of {@code t} (the compile check looks each up in the cubin). */
  static java.util.List<String> kernelNames(DType t) {
    String tag = Geometry.tag(t);
    java.util.List<String> names = new java.util.ArrayList<>();
    for (ReduceOp op : ReduceOp.values()) {
      for (String types : REDUCE_TYPES) {
        if (!types.startsWith(tag + ">")) continue;
        String suffix = opName(op) + "_" + types.replace('>', '_');
        for (String k : new String[] {"reduce_thread_", "reduce_block_", "reduce_finish_"}) names.add(k + suffix);
      }
    }
    names.add("argmax_" + tag);
    names.add("argmin_" + tag);
    if (t.isFloatingPoint()) {
      names.add("softmax_" + tag);
      names.add("softmax_bwd_prep_" + tag);
      names.add("softmax_bwd_finish_" + tag);
      names.add("allfinite_" + tag);
    }
    for (String types : CUMSUM_TYPES) if (types.startsWith(tag + ">")) names.add("cumsum_" + types.replace('>', '_'));
    return names;
  }

  private static String opName(ReduceOp op) {
    return op.name().toLowerCase(java.util.Locale.ROOT);
  }

  /**
   * The number of chunks each output's {@code nInner} elements are cut into: 1 unless the row is long and the
   * outputs too few to fill the GPU. Depends on the shape only.
   */
  static long chunks(long nOuter, long nInner) {
    if (nInner < SPLIT_MIN || nOuter >= TARGET_BLOCKS / 4) return 1;
    long byLength = (nInner + MIN_CHUNK - 1) / MIN_CHUNK;
    return Math.max(1, Math.min(byLength, TARGET_BLOCKS / nOuter));
  }

  /** Reduces x over {@code axes} (sorted, distinct) into out, which has x's rank with size 1 at those axes. */
  public synchronized void reduce(ReduceOp op, View x, int[] axes, View out) {
    String name = opName(op);
    String types = Geometry.tag(x.dtype()) + ">" + Geometry.tag(out.dtype());
    if (!REDUCE_TYPES.contains(types)) {
      throw new IllegalArgumentException(name + ": cuda cannot reduce " + x.dtype().torchName() + " into "
          + out.dtype().torchName() + " (supported: float32 and float64 into themselves, int32, int64 and"
          + " bool into int64, int32 and bool into themselves): x=" + Arrays.toString(x.shapeRef()) + ", out="
          + Arrays.toString(out.shapeRef()));
    }
    long xBase = Geometry.base(name, "x", x);
    long oBase = Geometry.base(name, "out", out);
    launchReduce(name, x.dtype(), out.dtype(), AxisSplit.of(x, axes, out), xBase, x.offset(), oBase, out.offset());
  }

  private void launchReduce(String name, DType tin, DType tout, AxisSplit s, long xBase, long xOff, long oBase,
      long oOff) {
    if (s.nOuter() == 0) return;
    ctx.makeCurrent();
    String suffix = name + "_" + Geometry.tag(tin) + "_" + Geometry.tag(tout);
    if (s.nInner() < THREAD_MAX) {
      KernelArgs a = KernelArgs.begin().ptr(xBase).ptr(oBase);
      a.bytes(Geometry.pack(name, s.outerShape(), s.outerX(), xOff), Geometry.ALIGN);
      a.bytes(Geometry.pack(name, s.innerShape(), s.innerX(), 0), Geometry.ALIGN);
      a.bytes(Geometry.pack(name, s.outerShape(), s.outerOut(), oOff), Geometry.ALIGN);
      a.i64(s.nOuter()).i64(s.nInner());
      cache.launch1d(fn(tin, "reduce_thread_" + suffix), s.nOuter(), a);
      return;
    }
    long nChunks = chunks(s.nOuter(), s.nInner());
    long chunk = (s.nInner() + nChunks - 1) / nChunks;
    long partial = nChunks > 1 ? partials.get(8 * s.nOuter() * nChunks) : 0;
    KernelArgs a = KernelArgs.begin().ptr(xBase).ptr(oBase).ptr(partial);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerX(), xOff), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, s.innerShape(), s.innerX(), 0), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerOut(), oOff), Geometry.ALIGN);
    a.i64(s.nOuter()).i64(s.nInner()).i64(chunk).i64(nChunks);
    cache.launch(fn(tin, "reduce_block_" + suffix), grid(s.nOuter() * nChunks), 1, Geometry.blockFor(chunk), 0, a);
    if (nChunks > 1) {
      KernelArgs f = KernelArgs.begin().ptr(partial).ptr(oBase);
      f.bytes(Geometry.pack(name, s.outerShape(), s.outerOut(), oOff), Geometry.ALIGN);
      f.i64(s.nOuter()).i64(nChunks);
      cache.launch(fn(tin, "reduce_finish_" + suffix), grid(s.nOuter()), 1, Geometry.blockFor(nChunks), 0, f);
    }
  }

  private static int grid(long blocks) {
    return (int) Math.min(blocks, MAX_GRID);
  }

  /** Index (I64) of the first max (or min) along {@code axis}; NaN counts as the largest. out has size 1 there. */
  public synchronized void argReduce(boolean max, View x, int axis, View out) {
    String name = max ? "argmax" : "argmin";
    if (out.dtype() != DType.I64) {
      throw new IllegalArgumentException(name + ": out must be int64, got " + out.dtype().torchName() + ": x="
          + Arrays.toString(x.shapeRef()) + ", out=" + Arrays.toString(out.shapeRef()));
    }
    long xBase = Geometry.base(name, "x", x);
    long oBase = Geometry.base(name, "out", out);
    AxisSplit s = AxisSplit.alongAxis(x, axis, out);
    if (s.nOuter() == 0 || s.nInner() == 0) return;
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(xBase).ptr(oBase);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerX(), x.offset()), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerOut(), out.offset()), Geometry.ALIGN);
    a.i64(s.nOuter()).i64(s.nInner()).i64(s.innerStep());
    cache.launch(fn(x.dtype(), name + "_" + Geometry.tag(x.dtype())), grid(s.nOuter()), 1, Geometry.blockFor(s.nInner()), 0, a);
  }

  /** Numerically stable softmax or log-softmax along {@code axis} (float32 or float64; out of x's dtype and shape). */
  public synchronized void softmax(View x, int axis, boolean log, View out) {
    String name = log ? "log_softmax" : "softmax";
    DType dt = x.dtype();
    if ((dt != DType.F32 && dt != DType.F64) || out.dtype() != dt || !Arrays.equals(x.shapeRef(), out.shapeRef())) {
      throw new IllegalArgumentException(name + ": x and out must be float32 or float64 of one dtype and shape, got x "
          + dt.torchName() + Arrays.toString(x.shapeRef()) + ", out " + out.dtype().torchName()
          + Arrays.toString(out.shapeRef()));
    }
    long xBase = Geometry.base(name, "x", x);
    long oBase = Geometry.base(name, "out", out);
    if (x.numel() == 0) return;
    int n = x.shapeRef()[axis];
    int[] one = x.shapeRef().clone();
    one[axis] = 1;
    // the kept axes, walked over x's and out's strides (out seen with size 1 at axis, same strides)
    AxisSplit s = AxisSplit.of(x, new int[] {axis}, new StridedView(out.storage(), one, out.stridesRef(), out.offset()));
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(xBase).ptr(oBase);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerX(), x.offset()), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, s.outerShape(), s.outerOut(), out.offset()), Geometry.ALIGN);
    a.i64(s.nOuter()).i64(n).i64(x.stridesRef()[axis]).i64(out.stridesRef()[axis]).i32(log ? 1 : 0);
    cache.launch(fn(dt, "softmax_" + Geometry.tag(dt)), grid(s.nOuter()), 1, Geometry.blockFor(n), 0, a);
  }

  /**
   * The backward of softmax or log_softmax along the last axis, as the composite {@code y * (g - sum(g * y))} or
   * {@code g - exp(y) * sum(g)} computes it on this device: the same elementwise roundings (no fused
   * multiply-adds) and each row's sum taken by {@link #reduce}'s kernels for that shape, so the bits are the
   * composite's. g, y and out are contiguous, of one floating dtype and one shape.
   *
   * @throws IllegalArgumentException if they are not
   */
  public synchronized void softmaxBackward(View g, View y, boolean log, View out) {
    DType dt = y.dtype();
    if ((dt != DType.F32 && dt != DType.F64) || g.dtype() != dt || out.dtype() != dt
        || !Arrays.equals(g.shapeRef(), y.shapeRef()) || !Arrays.equals(out.shapeRef(), y.shapeRef())
        || !g.isContiguous() || !y.isContiguous() || !out.isContiguous() || y.rank() == 0) {
      throw new IllegalArgumentException((log ? "log_softmax" : "softmax") + " backward: g, y and out must be contiguous"
          + " tensors of one floating dtype and shape, got g " + g.dtype().torchName() + Arrays.toString(g.shapeRef())
          + ", y " + dt.torchName() + Arrays.toString(y.shapeRef()) + ", out " + out.dtype().torchName()
          + Arrays.toString(out.shapeRef()));
    }
    String name = log ? "log_softmax_backward" : "softmax_backward";
    long gp = Geometry.first(name, "g", g);
    long yp = Geometry.first(name, "y", y);
    long op = Geometry.first(name, "out", out);
    int cols = y.shapeRef()[y.rank() - 1];
    long n = y.numel();
    if (cols == 0 || n == 0) return;
    int rows = (int) (n / cols);
    String t = Geometry.tag(dt);
    ctx.makeCurrent();
    cache.launch1d(fn(dt, "softmax_bwd_prep_" + t), n, KernelArgs.begin().ptr(gp).ptr(yp).ptr(op).i64(n).i32(log ? 1 : 0));
    // the row sums of out (g * y) or of g, as sum(-1, keepdim) of a contiguous [.., cols] tensor reduces them
    long sums = rowSums.get((long) rows * dt.itemSize());
    StridedView rowsView = new StridedView(y.storage(), new int[] {rows, cols}, new int[] {cols, 1}, 0);
    StridedView sumsView = new StridedView(y.storage(), new int[] {rows, 1}, new int[] {1, 1}, 0);
    launchReduce("sum", dt, dt, AxisSplit.of(rowsView, new int[] {1}, sumsView), log ? gp : op, 0, sums, 0);
    cache.launch1d(fn(dt, "softmax_bwd_finish_" + t), n,
        KernelArgs.begin().ptr(gp).ptr(yp).ptr(sums).ptr(op).i64(n).i64(cols).i32(log ? 1 : 0));
  }

  /** out = the running sum of x along {@code axis}, accumulated in order from index 0. */
  public synchronized void cumsum(View x, int axis, View out) {
    String types = Geometry.tag(x.dtype()) + ">" + Geometry.tag(out.dtype());
    if (!CUMSUM_TYPES.contains(types) || !Arrays.equals(x.shapeRef(), out.shapeRef())) {
      throw new IllegalArgumentException("cumsum: cuda sums float32 and float64 into themselves and int32, int64 and"
          + " bool into int64 (int32 also into int32), over one shape; got x " + x.dtype().torchName()
          + Arrays.toString(x.shapeRef()) + ", out " + out.dtype().torchName() + Arrays.toString(out.shapeRef()));
    }
    long xBase = Geometry.base("cumsum", "x", x);
    long oBase = Geometry.base("cumsum", "out", out);
    if (x.numel() == 0) return;
    int[] one = x.shapeRef().clone();
    one[axis] = 1;
    AxisSplit s = AxisSplit.of(x, new int[] {axis}, new StridedView(out.storage(), one, out.stridesRef(), out.offset()));
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(xBase).ptr(oBase);
    a.bytes(Geometry.pack("cumsum", s.outerShape(), s.outerX(), x.offset()), Geometry.ALIGN);
    a.bytes(Geometry.pack("cumsum", s.outerShape(), s.outerOut(), out.offset()), Geometry.ALIGN);
    a.i64(s.nOuter()).i64(x.shapeRef()[axis]).i64(x.stridesRef()[axis]).i64(out.stridesRef()[axis]);
    cache.launch1d(fn(x.dtype(), "cumsum_" + types.replace('>', '_')), s.nOuter(), a);
  }

  /**
   * Whether every element of x (contiguous, float32 or float64) is finite; reads each element once and waits for
   * the answer (one 4-byte copy back to the host).
   */
  public synchronized boolean allFinite(View x) {
    DType dt = x.dtype();
    if ((dt != DType.F32 && dt != DType.F64) || !x.isContiguous()) {
      throw new IllegalArgumentException("allFinite: x must be a contiguous float32 or float64 tensor, got "
          + dt.torchName() + Arrays.toString(x.shapeRef()) + (x.isContiguous() ? "" : " (not contiguous)"));
    }
    long xp = Geometry.first("allFinite", "x", x);
    long n = x.numel();
    if (n == 0) return true;
    ctx.makeCurrent();
    long flag = partials.get(4);
    ctx.driver().memsetD32(flag, 1, 1, ctx.stream());
    cache.launch1d(fn(dt, "allfinite_" + Geometry.tag(dt)), n, KernelArgs.begin().ptr(xp).i64(n).ptr(flag));
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment host = arena.allocate(4);
      ctx.driver().memcpyDtoHSync(host, flag, 4);
      return host.get(ValueLayout.JAVA_INT, 0) != 0;
    }
  }
}
