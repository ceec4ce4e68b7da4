package dev.ember.bench;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Reductions on 1M floats through the Tensor API.
 *
 * <p>Reported as ops/s; GB/s = ops/s * bytes / 1e9 with 4 MB for sum (read once) and 8 MB for
 * softmax (read once, write once; the max and exp-sum passes re-read from cache). Napkin math:
 * sum is one FMA-free add per element, so a vectorised loop is load-bound at ~2 x 64 B/cycle per
 * core: far beyond memory, ~4 MB from L3 in ~100 us. Softmax costs one exp per element (~10-20
 * vector instructions), so compute-bound: rows of 1024 amortise the per-row max/sum; rows of 10
 * (104857 of them) measure per-row overhead, since 10 floats fill less than one 16-lane vector.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "-Xms1g", "-XX:+AlwaysPreTouch"})
public class ReductionBench {
  private static final int N = 1 << 20;
  private Tensor x;
  private Tensor rows1024;
  private Tensor rows10;

  @Setup
  public void setup() {
    x = Tensor.randn(new Generator(1), N);
    rows1024 = x.reshape(N / 1024, 1024);
    rows10 = Tensor.randn(new Generator(2), N / 10, 10);
  }

  @Benchmark
  public Tensor sum() {
    return x.sum();
  }

  @Benchmark
  public Tensor softmaxRows1024() {
    return rows1024.softmax(1);
  }

  @Benchmark
  public Tensor softmaxRows10() {
    return rows10.softmax(1);
  }
}
