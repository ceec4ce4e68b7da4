package dev.ember.cuda.kernels;

import dev.ember.backend.View;
import dev.ember.cuda.lib.CublasLt;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.runtime.CudaSettings;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.cuda.runtime.Workspace;
import dev.ember.tensor.DType;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Batched matmul through cuBLASLt. Ember's views are row-major; cuBLAS is column-major, and a row-major matrix
 * is the column-major storage of its transpose, so {@code C = A B} is computed as {@code C^T = B^T A^T}: Ember's
 * b is cuBLAS's A and a its B, m and n swap. An operand with unit column stride is passed as stored (leading
 * dimension its row stride); one with unit row stride (a transposed view) is passed with the transpose op
 * (leading dimension its column stride); a batch stride of 0 broadcasts one matrix over the batch. Any other
 * layout, or an address that is not 256-byte aligned for every batch, is first copied to a contiguous buffer:
 * {@link CublasLt} picks its algorithm per shape with cuBLASLt's default alignment preference (256 bytes), so an
 * operand must be that aligned for every algorithm it may choose (device allocations are; views at offsets of
 * whole rows of 64 floats are too).
 *
 * <p>float32 computes in float32 unless {@link #allowTf32(boolean)} opts into TF32 tensor cores (off by default,
 * as {@code torch.backends.cuda.matmul.allow_tf32}); float64 in float64; bfloat16 and float16 operands (autocast's)
 * on tensor cores, accumulated in and written as float32. cuBLASLt gets a 32 MiB workspace per
 * context; its algorithm choice is cached per product shape by {@link CublasLt}.
 */
public final class CudaMatmul {
  /** The workspace cuBLASLt may use per context. */
  public static final long WORKSPACE_BYTES = 32L << 20;
  private static final Map<Integer, Long> WORKSPACES = new ConcurrentHashMap<>();

  private final CudaContext ctx;
  private final KernelCache cache;
  private final Workspace tmpA;
  private final Workspace tmpB;
  private final Workspace tmpOut;

  public CudaMatmul(CudaContext ctx, KernelCache cache) {
    this.ctx = ctx;
    this.cache = cache;
    this.tmpA = new Workspace(ctx);
    this.tmpB = new Workspace(ctx);
    this.tmpOut = new Workspace(ctx);
  }

  /**
   * Lets float32 products use TF32 tensor cores (10-bit mantissas in the products), as PyTorch's flag: the
   * process-wide {@link CudaSettings#allowTf32(boolean)}, which the convolutions' products follow too.
   */
  public static void allowTf32(boolean allow) {
    CudaSettings.allowTf32(allow);
  }

  public static boolean allowTf32() {
    return CudaSettings.allowTf32();
  }

  private long workspace() {
    return WORKSPACES.computeIfAbsent(ctx.ordinal(), o -> {
      ctx.makeCurrent();
      return ctx.driver().memAlloc(WORKSPACE_BYTES);
    });
  }

  /**
   * How cuBLAS reads one rank-3 operand [B, r, c] of row-major Ember: {@code trans} false when its columns are
   * unit-stride (column-major storage of its transpose, leading dimension {@code ld} = the row stride), true when
   * its rows are (a transposed view: column-major storage of itself, ld = the column stride).
   */
  record Operand(boolean trans, long ld, long batchStride) {}

  /** The operand's cuBLAS form, or null when its layout needs a contiguous copy first. */
  static Operand operand(int[] shape, int[] strides) {
    int r = shape[1];
    int c = shape[2];
    boolean rowMajor = (strides[2] == 1 || c == 1) && strides[1] >= Math.max(1, c);
    boolean colMajor = (strides[1] == 1 || r == 1) && strides[2] >= Math.max(1, r);
    long bs = shape[0] == 1 ? 0 : strides[0];
    if (rowMajor) return new Operand(false, Math.max(strides[1], Math.max(1, c)), bs);
    if (colMajor) return new Operand(true, Math.max(strides[2], Math.max(1, r)), bs);
    return null;
  }

  /** The alignment cuBLASLt's heuristic assumes of every operand unless told otherwise. */
  static final int ALIGNMENT = 256;

  /** Whether cuBLASLt can read the operand at {@code address} directly: {@link #ALIGNMENT}-aligned in every batch. */
  static boolean aligned(long address, long batchStride, int itemSize) {
    return address % ALIGNMENT == 0 && (batchStride * itemSize) % ALIGNMENT == 0;
  }

  /**
   * out[b] = a[b] @ b[b] + beta * out[b] for a [B, m, k], b [B, k, n], out [B, m, n]: float32 or float64 throughout,
   * or bfloat16 or float16 a and b (one dtype) into a float32 out or one of their dtype, on tensor cores with float32
   * accumulation (the products of two 16-bit floats are exact in float32; a half out is rounded once, on store).
   */
  public synchronized void matmul(View a, View b, View out, float beta) {
    DType dt = out.dtype();
    DType in = a.dtype();
    boolean half = in.isHalf() && b.dtype() == in && (dt == DType.F32 || dt == in);
    if (!half && ((dt != DType.F32 && dt != DType.F64) || in != dt || b.dtype() != dt)) {
      throw new IllegalArgumentException("matmul: cuda multiplies float32 or float64 operands of one dtype, or "
          + "bfloat16 or float16 ones of one dtype into float32 or their dtype, got a " + a.dtype().torchName()
          + ", b " + b.dtype().torchName() + ", out " + dt.torchName() + ": a=" + Arrays.toString(a.shapeRef())
          + ", b=" + Arrays.toString(b.shapeRef()));
    }
    if (a.rank() != 3 || b.rank() != 3 || out.rank() != 3 || a.shapeRef()[2] != b.shapeRef()[1]
        || a.shapeRef()[0] != out.shapeRef()[0] || b.shapeRef()[0] != out.shapeRef()[0]
        || a.shapeRef()[1] != out.shapeRef()[1] || b.shapeRef()[2] != out.shapeRef()[2]) {
      throw new IllegalArgumentException("matmul: cuda takes [B, m, k] x [B, k, n] -> [B, m, n], got a="
          + Arrays.toString(a.shapeRef()) + ", b=" + Arrays.toString(b.shapeRef()) + ", out="
          + Arrays.toString(out.shapeRef()));
    }
    int batch = out.shapeRef()[0];
    int m = out.shapeRef()[1];
    int n = out.shapeRef()[2];
    int k = a.shapeRef()[2];
    long ap = Geometry.base("matmul", "a", a);
    long bp = Geometry.base("matmul", "b", b);
    long op = Geometry.base("matmul", "out", out);
    if (batch == 0 || m == 0 || n == 0) return;
    ctx.makeCurrent();
    String t = Geometry.tag(dt);
    int item = dt.itemSize();
    int inItem = in.itemSize();
    if (k == 0 && dt.isHalf()) {
      throw new IllegalArgumentException("matmul: an empty product (k = 0) into a " + dt.torchName() + " out is the "
          + "caller's to scale (CudaBackend widens it): out=" + Arrays.toString(out.shapeRef()));
    }
    if (k == 0) { // an empty sum: out = beta * out
      KernelArgs s = KernelArgs.begin().ptr(op);
      s.bytes(Geometry.pack("matmul", out), Geometry.ALIGN);
      if (dt == DType.F32) s.f32(beta);
      else s.f64(beta);
      s.i64(out.numel());
      cache.launch1d(indexing(dt, "scale_" + t), out.numel(), s);
      return;
    }
    Operand oa = operand(a.shapeRef(), a.stridesRef());
    long aAddr = ap + (long) a.offset() * inItem;
    if (oa == null || !aligned(aAddr, oa.batchStride(), inItem)) {
      aAddr = contiguousCopy(a, ap, tmpA);
      oa = operand(a.shapeRef(), contiguousStrides(a.shapeRef()));
    }
    Operand ob = operand(b.shapeRef(), b.stridesRef());
    long bAddr = bp + (long) b.offset() * inItem;
    if (ob == null || !aligned(bAddr, ob.batchStride(), inItem)) {
      bAddr = contiguousCopy(b, bp, tmpB);
      ob = operand(b.shapeRef(), contiguousStrides(b.shapeRef()));
    }
    Operand oc = operand(out.shapeRef(), out.stridesRef());
    long cAddr = op + (long) out.offset() * item;
    boolean copyOut = oc == null || oc.trans() || !aligned(cAddr, oc.batchStride(), item)
        || (batch > 1 && oc.batchStride() == 0);
    if (copyOut) {
      cAddr = tmpOut.get((long) batch * m * n * item);
      if (beta != 0) copy(out, op, cAddr, contiguousStrides(out.shapeRef()));
      oc = new Operand(false, n, (long) m * n);
    }
    int compute = dt == DType.F64 ? CublasLt.COMPUTE_64F
        : allowTf32() && !half ? CublasLt.COMPUTE_32F_FAST_TF32 : CublasLt.COMPUTE_32F;
    int abType = !half ? (dt == DType.F64 ? CublasLt.R_64F : CublasLt.R_32F)
        : in == DType.BF16 ? CublasLt.R_16BF : CublasLt.R_16F;
    int type = dt == DType.F64 ? CublasLt.R_64F : dt == DType.F32 ? CublasLt.R_32F : abType; // C and D
    CublasLt.MatmulSpec spec = new CublasLt.MatmulSpec(compute, abType, type, ob.trans(), oa.trans(), n, m, k, ob.ld(),
        oa.ld(), oc.ld(), ob.batchStride(), oa.batchStride(), batch == 1 ? 0 : oc.batchStride(), batch, WORKSPACE_BYTES);
    CublasLt.get().matmul(spec, 1.0, bAddr, aAddr, beta, cAddr, workspace(), ctx.stream());
    if (copyOut) copyBack(cAddr, out, op);
  }

  /**
   * A product on raw device buffers in cuBLAS's column-major convention, {@code C = alpha * op(A) op(B) + beta *
   * C} for {@code batch} strided matrices, accumulated in float32: for bfloat16 ({@link CublasLt#R_16BF}) or
   * float16 ({@link CublasLt#R_16F}) A and B (Ember has no such dtype yet; the benchmarks' GEMMs use this), C of
   * the same type or float32. TF32 follows {@link #allowTf32(boolean)} for float32 operands.
   *
   * @throws IllegalArgumentException for other types or non-positive sizes
   */
  public synchronized void matmulRaw(int abType, int cType, boolean transA, boolean transB, long m, long n, long k,
      long a, long lda, long strideA, long b, long ldb, long strideB, long c, long ldc, long strideC, int batch,
      float alpha, float beta) {
    boolean half = abType == CublasLt.R_16BF || abType == CublasLt.R_16F;
    if (!(half || abType == CublasLt.R_32F) || (cType != abType && cType != CublasLt.R_32F)) {
      throw new IllegalArgumentException("matmulRaw: A and B must be bfloat16, float16 or float32 (cudaDataType "
          + CublasLt.R_16BF + ", " + CublasLt.R_16F + ", " + CublasLt.R_32F + ") and C of their type or float32, got "
          + abType + " and " + cType);
    }
    if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) {
      throw new IllegalArgumentException("matmulRaw: m, n, k and batch must be positive, got m=" + m + ", n=" + n
          + ", k=" + k + ", batch=" + batch);
    }
    ctx.makeCurrent();
    int compute = abType == CublasLt.R_32F && allowTf32() ? CublasLt.COMPUTE_32F_FAST_TF32 : CublasLt.COMPUTE_32F;
    CublasLt.MatmulSpec spec = new CublasLt.MatmulSpec(compute, abType, cType, transA, transB, m, n, k, lda, ldb,
        ldc, strideA, strideB, strideC, batch, WORKSPACE_BYTES);
    CublasLt.get().matmul(spec, alpha, a, b, beta, c, workspace(), ctx.stream());
  }

  private long indexing(DType t, String kernel) {
    return CudaIndexing.fn(cache, t, kernel);
  }

  static int[] contiguousStrides(int[] shape) {
    int[] s = new int[shape.length];
    int acc = 1;
    for (int d = shape.length - 1; d >= 0; d--) {
      s[d] = acc;
      acc *= Math.max(shape[d], 1);
    }
    return s;
  }

  /** A contiguous copy of v (whose storage starts at {@code base}) in {@code into}; returns its address. */
  private long contiguousCopy(View v, long base, Workspace into) {
    long dst = into.get(v.numel() * v.dtype().itemSize());
    copy(v, base, dst, contiguousStrides(v.shapeRef()));
    return dst;
  }

  /** Copies view v (storage at {@code base}) to {@code dst} laid out with {@code dstStrides} from offset 0. */
  private void copy(View v, long base, long dst, int[] dstStrides) {
    KernelArgs c = KernelArgs.begin().ptr(base).ptr(dst);
    c.bytes(Geometry.pack("matmul", v), Geometry.ALIGN);
    c.bytes(Geometry.pack("matmul", v.shapeRef(), dstStrides, 0), Geometry.ALIGN);
    c.i64(v.numel());
    cache.launch1d(indexing(v.dtype(), "copy_" + Geometry.moveTag(v.dtype())), v.numel(), c);
  }

  /** Copies a contiguous result at {@code src} into the view out (storage at {@code base}). */
  private void copyBack(long src, View out, long base) {
    KernelArgs c = KernelArgs.begin().ptr(src).ptr(base);
    c.bytes(Geometry.pack("matmul", out.shapeRef(), contiguousStrides(out.shapeRef()), 0), Geometry.ALIGN);
    c.bytes(Geometry.pack("matmul", out), Geometry.ALIGN);
    c.i64(out.numel());
    cache.launch1d(indexing(out.dtype(), "copy_" + Geometry.moveTag(out.dtype())), out.numel(), c);
  }
}
