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
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Elementwise ops through the Tensor API (allocating outputs, as user code runs them).
 *
 * <p>Reported as ops/s; GB/s = ops/s * bytes / 1e9 with bytes = 8n for relu and a*x+b (one read,
 * one write, counting a*x+b as if fused), 12n for add. Napkin math: 1M floats in + out is 8 MB,
 * which fits the 32 MB L3; at ~30 GB/s that is ~3700 relu/s. 64K floats (512 KB) live in L2, so
 * there the fork/join of the worker pool (a few us) is a visible share of a ~20 us op.
 * a*x+b is {@code x.mul(a).add(b)}: two passes and one temporary, the cost a fused kernel would
 * remove (compare its GB/s with relu's).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "-Xms1g", "-XX:+AlwaysPreTouch"})
public class ElementwiseBench {
  @Param({"1048576", "65536"})
  public int n;

  private Tensor x;
  private Tensor y;

  @Setup
  public void setup() {
    x = Tensor.randn(new Generator(1), n / 1024, 1024);
    y = Tensor.randn(new Generator(2), n / 1024, 1024);
  }

  @Benchmark
  public Tensor relu() {
    return x.relu();
  }

  @Benchmark
  public Tensor add() {
    return x.add(y);
  }

  @Benchmark
  public Tensor axpb() {
    return x.mul(1.5).add(0.5);
  }
}
