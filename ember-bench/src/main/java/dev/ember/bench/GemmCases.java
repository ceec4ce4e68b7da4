package dev.ember.bench;

import dev.ember.backend.cpu.CpuBackend;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.backend.cpu.FloatKernels;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The {@code gemm} category: the kernel itself ({@link FloatKernels#sgemm}, beta = 0 into a
 * preallocated C), so the number is the GEMM and not Ember's tensor plumbing. The peer times
 * {@code torch.mm(a, b)}, which also allocates its result; at N >= 128 that allocation is noise
 * next to 2*N^3 flops (jemalloc hands back the same block every call).
 */
final class GemmCases {
  static final int[] DEFAULT_SIZES = {128, 256, 512, 1024, 2048};

  private GemmCases() {}

  /** One GEMM: row-major C[m x n] = op(A) op(B); A stored k x m when transA, B stored n x k when transB. */
  record Shape(String name, int m, int k, int n, boolean transA, boolean transB) {
    double gflop() {
      return 2.0 * m * n * k / 1e9;
    }
  }

  /**
   * Square sizes plus the shapes of the MLP training benchmarks: the peer's two MNIST/seed shapes,
   * the seed_large hidden layer, and the two backward GEMMs of the 784-128 layer at batch 128
   * (dW = X^T dY and dX = dY W^T), which reach sgemm with a transposed operand.
   */
  static List<Shape> shapes(int[] squareSizes) {
    List<Shape> s = new ArrayList<>();
    for (int n : squareSizes) s.add(new Shape("N=" + n, n, n, n, false, false));
    s.add(new Shape("(128x784)@(784x128)", 128, 784, 128, false, false));
    s.add(new Shape("(32x1024)@(1024x512)", 32, 1024, 512, false, false));
    s.add(new Shape("(128x6656)@(6656x6656)", 128, 6656, 6656, false, false));
    s.add(new Shape("(128x784)^T@(128x128)", 784, 128, 128, true, false));
    s.add(new Shape("(128x128)@(784x128)^T", 128, 128, 784, false, true));
    return s;
  }

  static FloatKernels kernels() {
    return ((CpuBackend) CpuBackends.instance()).floatKernels();
  }

  static List<BenchCase> cases(int[] squareSizes) {
    FloatKernels k = kernels();
    List<BenchCase> out = new ArrayList<>();
    for (Shape sh : shapes(squareSizes)) {
      out.add(BenchCase.throughput("sgemm", sh.name(), "gflops", "GFLOP/s", sh.gflop(), call(k, sh)));
    }
    return out;
  }

  /** Allocates operands lazily (the 6656-wide B is 177 MB) and only when the case is first run. */
  private static Runnable call(FloatKernels k, Shape sh) {
    return new Runnable() {
      private float[] a;
      private float[] b;
      private float[] c;

      @Override
      public void run() {
        if (a == null) {
          a = random((long) sh.m() * sh.k(), 1);
          b = random((long) sh.k() * sh.n(), 2);
          c = new float[sh.m() * sh.n()];
        }
        int lda = sh.transA() ? sh.m() : sh.k();
        int ldb = sh.transB() ? sh.k() : sh.n();
        k.sgemm(sh.transA(), sh.transB(), sh.m(), sh.n(), sh.k(), 1f, a, 0, lda, b, 0, ldb, 0f, c, 0, sh.n());
      }
    };
  }

  static float[] random(long n, long seed) {
    SplittableRandom r = new SplittableRandom(seed);
    float[] x = new float[Math.toIntExact(n)];
    for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextDouble() * 2 - 1);
    return x;
  }
}
