package dev.ember.cuda.lib;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * cuBLASLt ({@code libcublasLt.so.*}): strided-batched matrix products in cuBLAS's column-major convention,
 * {@code D = alpha * op(A) op(B) + beta * C} with D written over C. The descriptors and the algorithm chosen by
 * cuBLASLt's heuristic are made once per {@link MatmulSpec} and reused (a training step repeats the same shapes).
 */
public final class CublasLt {
  /** cudaDataType values. */
  public static final int R_32F = 0, R_64F = 1, R_16F = 2, R_16BF = 14;
  /** cublasComputeType_t values. */
  public static final int COMPUTE_32F = 68, COMPUTE_32F_FAST_TF32 = 77, COMPUTE_64F = 70;
  private static final int DESC_TRANSA = 3, DESC_TRANSB = 4;
  private static final int LAYOUT_BATCH_COUNT = 5, LAYOUT_STRIDED_BATCH_OFFSET = 6;
  private static final int PREF_MAX_WORKSPACE_BYTES = 1;
  private static final int HEURISTIC_BYTES = 96; // cublasLtMatmulHeuristicResult_t
  private static final int ALGO_BYTES = 64; // cublasLtMatmulAlgo_t

  private static final LoadOnce<CublasLt> INSTANCE =
      new LoadOnce<>(() -> new CublasLt(NativeLibraries.fromEnvironment().load("cublasLt", null, "cuBLASLt")));

  private final MethodHandle create, descCreate, descSetAttr, layoutCreate, layoutSetAttr, prefCreate,
      prefSetAttr, heuristic, matmul, statusString, getVersion;
  private final long handle;
  private final Map<MatmulSpec, Plan> plans = new ConcurrentHashMap<>();

  /**
   * One product's geometry in cuBLAS's column-major terms: {@code op(A)} is m x k, {@code op(B)} k x n, C and D
   * m x n with leading dimension ldc; A is stored lda-major ({@code transA}: A is k x m and used transposed).
   *
   * @param computeType {@link #COMPUTE_32F}, {@link #COMPUTE_32F_FAST_TF32} or {@link #COMPUTE_64F}
   * @param abType {@link #R_32F}, {@link #R_64F}, {@link #R_16BF} or {@link #R_16F}, of A and B
   * @param cType the type of C and D
   */
  public record MatmulSpec(int computeType, int abType, int cType, boolean transA, boolean transB, long m,
      long n, long k, long lda, long ldb, long ldc, long strideA, long strideB, long strideC, int batch,
      long workspaceBytes) {}

  private record Plan(long desc, long aLayout, long bLayout, long cLayout, MemorySegment algo) {}

  private CublasLt(SymbolLookup lib) {
    create = CudaDriver.bind(lib, "cublasLtCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    descCreate = CudaDriver.bind(lib, "cublasLtMatmulDescCreate",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT));
    descSetAttr = CudaDriver.bind(lib, "cublasLtMatmulDescSetAttribute",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    layoutCreate = CudaDriver.bind(lib, "cublasLtMatrixLayoutCreate",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG));
    layoutSetAttr = CudaDriver.bind(lib, "cublasLtMatrixLayoutSetAttribute",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    prefCreate = CudaDriver.bind(lib, "cublasLtMatmulPreferenceCreate", FunctionDescriptor.of(JAVA_INT, ADDRESS));
    prefSetAttr = CudaDriver.bind(lib, "cublasLtMatmulPreferenceSetAttribute",
        FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    heuristic = CudaDriver.bind(lib, "cublasLtMatmulAlgoGetHeuristic", FunctionDescriptor.of(JAVA_INT, JAVA_LONG,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, ADDRESS, ADDRESS));
    matmul = CudaDriver.bind(lib, "cublasLtMatmul", FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, ADDRESS,
        JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS,
        JAVA_LONG, JAVA_LONG, JAVA_LONG));
    statusString = CudaDriver.bind(lib, "cublasLtGetStatusString", FunctionDescriptor.of(ADDRESS, JAVA_INT));
    getVersion = CudaDriver.bind(lib, "cublasLtGetVersion", FunctionDescriptor.of(JAVA_LONG));
    try (Arena a = Arena.ofConfined()) {
      MemorySegment h = a.allocate(JAVA_LONG);
      check((int) create.invokeExact(h), "cublasLtCreate");
      handle = h.get(JAVA_LONG, 0);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  /**
   * cuBLASLt, loaded and its handle created on first use (a CUDA context must be current).
   *
   * @throws CudaUnavailableException when no libcublasLt is found
   */
  public static CublasLt get() {
    return INSTANCE.get();
  }

  public static Optional<CublasLt> tryGet() {
    return INSTANCE.tryGet();
  }

  /** cuBLASLt's version number, e.g. 130101 for 13.1.1. */
  public long version() {
    try {
      return (long) getVersion.invokeExact();
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private void check(int rc, String call) {
    if (rc == 0) return;
    String text;
    try {
      text = ((MemorySegment) statusString.invokeExact(rc)).reinterpret(4096).getString(0);
    } catch (Throwable t) {
      text = "cuBLAS status";
    }
    throw new CudaException(call, rc, text + " (" + rc + ")");
  }

  /**
   * {@code D = alpha * op(A) op(B) + beta * C} for every batch, D written over C ({@code c}); pointers are device
   * addresses, {@code workspace} a device buffer of {@code spec.workspaceBytes()} bytes (may be 0 with 0 bytes).
   *
   * @throws CudaException when cuBLASLt finds no algorithm for the spec or the product fails
   */
  public void matmul(MatmulSpec spec, double alpha, long a, long b, double beta, long c, long workspace,
      long stream) {
    Plan p = plans.computeIfAbsent(spec, this::plan);
    try (Arena ar = Arena.ofConfined()) {
      MemorySegment al;
      MemorySegment be;
      if (spec.computeType() == COMPUTE_64F) {
        al = ar.allocateFrom(JAVA_DOUBLE, alpha);
        be = ar.allocateFrom(JAVA_DOUBLE, beta);
      } else {
        al = ar.allocateFrom(JAVA_FLOAT, (float) alpha);
        be = ar.allocateFrom(JAVA_FLOAT, (float) beta);
      }
      check((int) matmul.invokeExact(handle, p.desc(), al, a, p.aLayout(), b, p.bLayout(), be, c, p.cLayout(), c,
          p.cLayout(), p.algo(), workspace, spec.workspaceBytes(), stream), "cublasLtMatmul(" + describe(spec) + ")");
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private static String describe(MatmulSpec s) {
    return "m=" + s.m() + " n=" + s.n() + " k=" + s.k() + " batch=" + s.batch() + " transA=" + s.transA()
        + " transB=" + s.transB() + " lda=" + s.lda() + " ldb=" + s.ldb() + " ldc=" + s.ldc();
  }

  private Plan plan(MatmulSpec s) {
    Arena global = Arena.global();
    try (Arena a = Arena.ofConfined()) {
      MemorySegment out = a.allocate(JAVA_LONG);
      int scale = s.computeType() == COMPUTE_64F ? R_64F : R_32F;
      check((int) descCreate.invokeExact(out, s.computeType(), scale), "cublasLtMatmulDescCreate");
      long desc = out.get(JAVA_LONG, 0);
      MemorySegment v = a.allocate(JAVA_LONG);
      v.set(JAVA_INT, 0, s.transA() ? 1 : 0);
      check((int) descSetAttr.invokeExact(desc, DESC_TRANSA, v, 4L), "cublasLtMatmulDescSetAttribute(TRANSA)");
      v.set(JAVA_INT, 0, s.transB() ? 1 : 0);
      check((int) descSetAttr.invokeExact(desc, DESC_TRANSB, v, 4L), "cublasLtMatmulDescSetAttribute(TRANSB)");
      long aL = layout(a, s.abType(), s.transA() ? s.k() : s.m(), s.transA() ? s.m() : s.k(), s.lda(), s.batch(),
          s.strideA());
      long bL = layout(a, s.abType(), s.transB() ? s.n() : s.k(), s.transB() ? s.k() : s.n(), s.ldb(), s.batch(),
          s.strideB());
      long cL = layout(a, s.cType(), s.m(), s.n(), s.ldc(), s.batch(), s.strideC());
      check((int) prefCreate.invokeExact(out), "cublasLtMatmulPreferenceCreate");
      long pref = out.get(JAVA_LONG, 0);
      v.set(JAVA_LONG, 0, s.workspaceBytes());
      check((int) prefSetAttr.invokeExact(pref, PREF_MAX_WORKSPACE_BYTES, v, 8L),
          "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)");
      MemorySegment results = a.allocate(HEURISTIC_BYTES, 16);
      MemorySegment count = a.allocate(JAVA_INT);
      check((int) heuristic.invokeExact(handle, desc, aL, bL, cL, cL, pref, 1, results, count),
          "cublasLtMatmulAlgoGetHeuristic(" + describe(s) + ")");
      if (count.get(JAVA_INT, 0) == 0) {
        throw new CudaException("cublasLtMatmulAlgoGetHeuristic", 15, "no algorithm for " + describe(s));
      }
      MemorySegment algo = global.allocate(ALGO_BYTES, 16);
      MemorySegment.copy(results, 0, algo, 0, ALGO_BYTES);
      return new Plan(desc, aL, bL, cL, algo);
    } catch (Throwable t) {
      throw CudaDriver.rethrow(t);
    }
  }

  private long layout(Arena a, int type, long rows, long cols, long ld, int batch, long stride) throws Throwable {
    MemorySegment out = a.allocate(JAVA_LONG);
    check((int) layoutCreate.invokeExact(out, type, rows, cols, ld), "cublasLtMatrixLayoutCreate(" + rows + "x"
        + cols + ", ld=" + ld + ")");
    long l = out.get(JAVA_LONG, 0);
    if (batch > 1) {
      MemorySegment v = a.allocate(JAVA_LONG);
      v.set(JAVA_INT, 0, batch);
      check((int) layoutSetAttr.invokeExact(l, LAYOUT_BATCH_COUNT, v, 4L), "cublasLtMatrixLayoutSetAttribute(BATCH)");
      v.set(JAVA_LONG, 0, stride);
      check((int) layoutSetAttr.invokeExact(l, LAYOUT_STRIDED_BATCH_OFFSET, v, 8L),
          "cublasLtMatrixLayoutSetAttribute(STRIDE)");
    }
    return l;
  }
}
