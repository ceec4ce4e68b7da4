package dev.ember.cuda.kernels;

import dev.ember.backend.View;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import java.util.Arrays;

/**
 * gather, scatter, index_select and index_add on a CUDA device, one thread per element, for every dtype and
 * int64 or int32 indices (validated by the op layer: the kernels trust them). Plain moves copy each element's
 * bits, so int64 values beyond 2^53 survive exactly.
 *
 * <p>Nondeterminism: {@link #scatter} without accumulation leaves one of the values written to a target that
 * several indices name (the CPU backend: the last in index order); the accumulating {@link #scatter} and
 * {@link #indexAdd} add with atomics, so float32 and float64 sums into one element are added in an order that
 * varies between runs and may differ in the last bits (as PyTorch's CUDA scatter_add_ and index_add_). Integer
 * sums are exact and bool ones a logical or.
 */
public final class CudaIndexing {
  private final CudaContext ctx;
  private final KernelCache cache;

  public CudaIndexing(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
  }

  /** A kernel of the indexing source compiled for elements of {@code t}. */
  static long fn(KernelCache cache, DType t, String kernel) {
    return cache.function("ember_indexing_" + Geometry.tag(t), Sources.indexing(t), kernel);
  }

  private long fn(DType t, String kernel) {
    return fn(cache, t, kernel);
  }

  /** Every kernel this class (and CudaMatmul's copies) may launch on elements of {@code t}, for the compile check. */
  static java.util.List<String> kernelNames(DType t) {
    java.util.List<String> names = new java.util.ArrayList<>();
    String mv = Geometry.moveTag(t);
    for (String it : new String[] {"i64", "i32"}) {
      names.add("gather_" + mv + "_" + it);
      names.add("scatter_" + mv + "_" + it);
      names.add("index_select_" + mv + "_" + it);
      if (t.isHalf()) continue; // 16-bit floats: moves only
      names.add("scatter_add_" + Geometry.tag(t) + "_" + it);
      names.add("index_add_" + Geometry.tag(t) + "_" + it);
    }
    names.add("copy_" + mv);
    if (t.isFloatingPoint() && !t.isHalf()) names.add("scale_" + Geometry.tag(t));
    return names;
  }

  private static String indexTag(String op, View index) {
    if (index.dtype() != DType.I64 && index.dtype() != DType.I32) {
      throw new IllegalArgumentException(op + ": index must be int64 or int32, got " + index.dtype().torchName()
          + ": index=" + Arrays.toString(index.shapeRef()));
    }
    return Geometry.tag(index.dtype());
  }

  /**
   * Fails for a BF16/F16 {@code out} of an accumulating op: their sums have no CUDA kernels (atomic adds of 16-bit
   * floats would round every partial sum); the moves take every dtype.
   */
  private static void computes(String op, View out) {
    if (out.dtype().isHalf()) {
      throw new IllegalArgumentException(op + ": cuda accumulates float32, float64 and integer tensors, got "
          + out.dtype().torchName() + " (shape " + Arrays.toString(out.shapeRef()) + "); accumulate into a float32 "
          + "tensor and convert");
    }
  }

  private static void sameDtype(String op, String a, View va, String b, View vb) {
    if (va.dtype() != vb.dtype()) {
      throw new IllegalArgumentException(op + ": " + a + " and " + b + " must have one dtype, got "
          + va.dtype().torchName() + " and " + vb.dtype().torchName() + ": " + a + "=" + Arrays.toString(va.shapeRef())
          + ", " + b + "=" + Arrays.toString(vb.shapeRef()));
    }
  }

  /** out[..i..] = x[..index[..i..]..] along dim (index of x's rank, out of index's shape). */
  public void gather(View x, int dim, View index, View out) {
    sameDtype("gather", "x", x, "out", out);
    String it = indexTag("gather", index);
    long xp = Geometry.base("gather", "x", x);
    long ip = Geometry.base("gather", "index", index);
    long op = Geometry.base("gather", "out", out);
    long n = index.numel();
    if (n == 0 || x.shapeRef()[dim] == 0) return; // an empty dim: every index is out of range (the check reports it)
    int[] shape = index.shapeRef();
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(xp).ptr(ip).ptr(op);
    a.bytes(Geometry.pack("gather", shape, x), Geometry.ALIGN);
    a.bytes(Geometry.pack("gather", index), Geometry.ALIGN);
    a.bytes(Geometry.pack("gather", shape, out), Geometry.ALIGN);
    a.i32(dim).i64(n).i64(x.shapeRef()[dim]);
    cache.launch1d(fn(x.dtype(), "gather_" + Geometry.moveTag(x.dtype()) + "_" + it), n, a);
  }

  /**
   * out[..index[..i..]..] = src[..i..] along dim, or += with {@code accumulate}; out is modified in place. See the
   * class comment on duplicate indices.
   */
  public void scatter(View out, int dim, View index, View src, boolean accumulate) {
    String name = accumulate ? "scatter_add" : "scatter";
    sameDtype(name, "out", out, "src", src);
    if (accumulate) computes(name, out);
    String it = indexTag(name, index);
    long op = Geometry.base(name, "out", out);
    long ip = Geometry.base(name, "index", index);
    long sp = Geometry.base(name, "src", src);
    long n = index.numel();
    if (n == 0 || out.shapeRef()[dim] == 0) return; // an empty dim: every index is out of range (the check reports it)
    int[] shape = index.shapeRef();
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(op).ptr(ip).ptr(sp);
    a.bytes(Geometry.pack(name, shape, out), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, index), Geometry.ALIGN);
    a.bytes(Geometry.pack(name, shape, src), Geometry.ALIGN);
    a.i32(dim).i64(n).i64(out.shapeRef()[dim]);
    String kernel = accumulate ? "scatter_add_" + Geometry.tag(out.dtype()) : "scatter_" + Geometry.moveTag(out.dtype());
    cache.launch1d(fn(out.dtype(), kernel + "_" + it), n, a);
  }

  /** out = x selected at positions {@code index} (1-d) along dim. */
  public void indexSelect(View x, int dim, View index, View out) {
    sameDtype("index_select", "x", x, "out", out);
    String it = indexTag("index_select", index);
    long xp = Geometry.base("index_select", "x", x);
    long ip = Geometry.base("index_select", "index", index);
    long op = Geometry.base("index_select", "out", out);
    long n = out.numel();
    if (n == 0 || x.shapeRef()[dim] == 0) return; // an empty dim: every index is out of range (the check reports it)
    int[] shape = out.shapeRef();
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(xp).ptr(ip).ptr(op);
    a.bytes(Geometry.pack("index_select", shape, x), Geometry.ALIGN);
    a.bytes(Geometry.pack("index_select", out), Geometry.ALIGN);
    a.i32(dim).i64(index.rank() == 0 ? 0 : index.stridesRef()[0]).i64(index.offset()).i64(n);
    a.i64(x.shapeRef()[dim]); // the bound the kernel clamps indices into
    cache.launch1d(fn(x.dtype(), "index_select_" + Geometry.moveTag(x.dtype()) + "_" + it), n, a);
  }

  /** out[.., index[i], ..] += src[.., i, ..] along dim (the backward of indexSelect). See the class comment. */
  public void indexAdd(View out, int dim, View index, View src) {
    sameDtype("index_add", "out", out, "src", src);
    computes("index_add", out);
    String it = indexTag("index_add", index);
    long op = Geometry.base("index_add", "out", out);
    long ip = Geometry.base("index_add", "index", index);
    long sp = Geometry.base("index_add", "src", src);
    long n = src.numel();
    if (n == 0 || out.shapeRef()[dim] == 0) return; // an empty dim: every index is out of range (the check reports it)
    int[] shape = src.shapeRef();
    ctx.makeCurrent();
    KernelArgs a = KernelArgs.begin().ptr(op).ptr(ip).ptr(sp);
    a.bytes(Geometry.pack("index_add", shape, out), Geometry.ALIGN);
    a.bytes(Geometry.pack("index_add", src), Geometry.ALIGN);
    a.i32(dim).i64(index.rank() == 0 ? 0 : index.stridesRef()[0]).i64(index.offset()).i64(n);
    a.i64(out.shapeRef()[dim]); // the bound the kernel clamps indices into
    cache.launch1d(fn(out.dtype(), "index_add_" + Geometry.tag(out.dtype()) + "_" + it), n, a);
  }
}
