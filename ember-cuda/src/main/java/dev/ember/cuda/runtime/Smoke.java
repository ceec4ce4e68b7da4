package dev.ember.cuda.runtime;

import dev.ember.cuda.lib.CublasLt;
import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.lib.KernelArgs;
import dev.ember.cuda.lib.NativeLibraries;
import dev.ember.cuda.lib.Nvrtc;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.Random;

/**
 * {@code java dev.ember.cuda.runtime.Smoke}: what a user runs first on a GPU machine. Prints where the CUDA
 * libraries were found and the device, then checks each binding end to end (a kernel compiled by NVRTC, copies
 * both ways, a cuBLASLt product against a double-precision product on the host) and exits 0 only when all hold.
 */
public final class Smoke {
  private Smoke() {}

  public static void main(String[] args) {
    NativeLibraries libs = NativeLibraries.fromEnvironment();
    System.out.println("search path: " + libs.folders());
    for (String n : new String[] {"cuda", "nvrtc", "cublasLt"}) {
      System.out.println("lib" + n + ": " + libs.find(n).map(Object::toString).orElse("(not in the search path)"));
    }
    Optional<String> why = CudaDriver.unavailableReason();
    if (why.isPresent()) {
      System.out.println("no CUDA device: " + why.get());
      System.exit(2);
    }
    CudaDriver d = CudaDriver.get();
    System.out.println("driver CUDA version " + d.driverVersion() / 1000 + "." + d.driverVersion() % 1000 / 10
        + ", devices: " + d.deviceCount());
    System.out.println("NVRTC " + Nvrtc.get().version() + ", cuBLASLt " + CublasLt.get().version());
    CudaContext ctx = CudaContext.of(0);
    System.out.println(ctx + ", " + d.totalMemory(0) / (1 << 20) + " MiB");
    boolean ok = saxpy(ctx) & gemm(ctx);
    System.out.println(ok ? "smoke: ok" : "smoke: FAILED");
    System.exit(ok ? 0 : 1);
  }

  static boolean saxpy(CudaContext ctx) {
    String src = """
        extern "C" __global__ void saxpy(float a, const float* x, float* y, long long n) {
          for (long long i = blockIdx.x * (long long) blockDim.x + threadIdx.x; i < n;
               i += (long long) blockDim.x * gridDim.x) y[i] = a * x[i] + y[i];
        }
        """;
    int n = 1 << 20;
    float[] x = new float[n];
    float[] y = new float[n];
    for (int i = 0; i < n; i++) {
      x[i] = i % 1000;
      y[i] = 1;
    }
    CudaDriver d = ctx.driver();
    long dx = d.memAlloc(4L * n);
    long dy = d.memAlloc(4L * n);
    try {
      d.memcpyHtoDSync(dx, MemorySegment.ofArray(x), 4L * n);
      d.memcpyHtoDSync(dy, MemorySegment.ofArray(y), 4L * n);
      long fn = ctx.kernels().function("smoke_saxpy", src, "saxpy");
      ctx.kernels().launch1d(fn, n, KernelArgs.begin().f32(2f).ptr(dx).ptr(dy).i64(n));
      float[] back = new float[n];
      d.memcpyDtoHSync(MemorySegment.ofArray(back), dy, 4L * n);
      for (int i = 0; i < n; i++) {
        if (back[i] != 2f * (i % 1000) + 1) {
          System.out.println("saxpy: element " + i + " is " + back[i] + ", expected " + (2f * (i % 1000) + 1));
          return false;
        }
      }
      System.out.println("saxpy: ok (" + n + " elements)");
      return true;
    } finally {
      d.memFree(dx);
      d.memFree(dy);
    }
  }

  static boolean gemm(CudaContext ctx) {
    int m = 97, k = 131, n = 64;
    Random r = new Random(1);
    float[] a = new float[m * k];
    float[] b = new float[k * n];
    for (int i = 0; i < a.length; i++) a[i] = r.nextFloat() - 0.5f;
    for (int i = 0; i < b.length; i++) b[i] = r.nextFloat() - 0.5f;
    CudaDriver d = ctx.driver();
    long da = d.memAlloc(4L * a.length);
    long db = d.memAlloc(4L * b.length);
    long dc = d.memAlloc(4L * m * n);
    try {
      d.memcpyHtoDSync(da, MemorySegment.ofArray(a), 4L * a.length);
      d.memcpyHtoDSync(db, MemorySegment.ofArray(b), 4L * b.length);
      // row-major C[m,n] = A[m,k] B[k,n] is column-major C^T[n,m] = B^T[n,k] A^T[k,m]
      var spec = new CublasLt.MatmulSpec(CublasLt.COMPUTE_32F, CublasLt.R_32F, CublasLt.R_32F, false, false, n, m, k,
          n, k, n, 0, 0, 0, 1, 0);
      CublasLt.get().matmul(spec, 1, db, da, 0, dc, 0, ctx.stream());
      float[] c = new float[m * n];
      d.memcpyDtoHSync(MemorySegment.ofArray(c), dc, 4L * c.length);
      double worst = 0;
      for (int i = 0; i < m; i++) {
        for (int j = 0; j < n; j++) {
          double s = 0;
          for (int p = 0; p < k; p++) s += (double) a[i * k + p] * b[p * n + j];
          worst = Math.max(worst, Math.abs(s - c[i * n + j]));
        }
      }
      boolean ok = worst < 1e-4;
      System.out.println("cublasLt sgemm " + m + "x" + k + "x" + n + ": max error " + worst + (ok ? " ok" : " FAILED"));
      return ok;
    } finally {
      d.memFree(da);
      d.memFree(db);
      d.memFree(dc);
    }
  }
}
