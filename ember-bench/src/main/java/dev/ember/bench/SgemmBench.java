package dev.ember.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * SGEMM kernel throughput, C = A B (beta = 0, C preallocated), through the CPU backend's matmul on views of
 * the arrays (see GemmCases#product).
 *
 * <p>Reported as ops/s; GFLOP/s = ops/s * 2*M*N*K / 1e9. Napkin math: one Zen core with AVX-512
 * does 2 FMA x 16 lanes x 2 flops = 64 flops/cycle, ~160 GFLOP/s at 2.5 GHz, so 2 cores peak near
 * 320 GFLOP/s; N=1024 (2.1 GFLOP) at 100 GFLOP/s is ~48 ops/s, N=2048 (17.2 GFLOP) ~6 ops/s.
 * Small shapes (N=64: 0.5 MFLOP) measure packing and threading overhead more than FMAs.
 * The 128x6656x6656 shape is the seed_large hidden layer (11.3 GFLOP, B = 177 MB: memory bound
 * unless B panels are reused across the 128 rows).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "-Xms1g", "-XX:+AlwaysPreTouch"})
public class SgemmBench {
  /** "MxKxN" (x, not commas: JMH's -p splits on commas): square sizes, then the MLP training shapes. */
  @Param({"64x64x64", "128x128x128", "256x256x256", "512x512x512", "1024x1024x1024", "2048x2048x2048",
      "128x784x128", "32x1024x512", "128x6656x6656"})
  public String mkn;

  private float[] c;
  private Runnable product;

  @Setup
  public void setup() {
    String[] p = mkn.split("x");
    int m = Integer.parseInt(p[0]);
    int kk = Integer.parseInt(p[1]);
    int n = Integer.parseInt(p[2]);
    c = new float[m * n];
    product = GemmCases.product(new GemmCases.Shape(mkn, m, kk, n, false, false), GemmCases.random((long) m * kk, 1),
        GemmCases.random((long) kk * n, 2), c);
  }

  @Benchmark
  public float[] sgemm() {
    product.run();
    return c;
  }
}
