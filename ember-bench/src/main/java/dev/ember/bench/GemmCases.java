package dev.ember.bench;

import dev.ember.backend.Backend;
import dev.ember.tensor.Device;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The {@code gemm} category: the kernel itself ({@link Backend#matmul} with beta = 0 into a
 * preallocated C, on views of three arrays made once, which hands them to the backend's sgemm as they are),
 * so the number is the GEMM and not Ember's tensor plumbing. The peer times
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

  static List<BenchCase> cases(int[] squareSizes) {
    List<BenchCase> out = new ArrayList<>();
    for (Shape sh : shapes(squareSizes)) {
      out.add(BenchCase.throughput("sgemm", sh.name(), "gflops", "GFLOP/s", sh.gflop(), call(sh)));
    }
    return out;
  }

  /**
   * C = op(A) op(B) of {@code sh} on the CPU backend, beta = 0, over the arrays themselves: A stored k x m when
   * transA (passed as a transposed view, as the backward of Linear does), B stored n x k when transB.
   */
  static Runnable product(Shape sh, float[] a, float[] b, float[] c) {
    Backend backend = Device.CPU.backend();
    Tensor av = sh.transA() ? matrix(a, sh.k(), sh.m()).t() : matrix(a, sh.m(), sh.k());
    Tensor bv = sh.transB() ? matrix(b, sh.n(), sh.k()).t() : matrix(b, sh.k(), sh.n());
    Tensor a3 = Views.batchOfOne(av);
    Tensor b3 = Views.batchOfOne(bv);
    Tensor c3 = Views.batchOfOne(matrix(c, sh.m(), sh.n()));
    return () -> backend.matmul(a3, b3, c3, 0f);
  }

  private static Tensor matrix(float[] data, int rows, int cols) {
    return new Tensor(Storage.wrap(data), new int[] {rows, cols}, new int[] {cols, 1}, 0);
  }

  /** Allocates operands lazily (the 6656-wide B is 177 MB) and only when the case is first run. */
  private static Runnable call(Shape sh) {
    return new Runnable() {
      private Runnable product;

      @Override
      public void run() {
        if (product == null) {
          product = product(sh, random((long) sh.m() * sh.k(), 1), random((long) sh.k() * sh.n(), 2),
              new float[sh.m() * sh.n()]);
        }
        product.run();
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
