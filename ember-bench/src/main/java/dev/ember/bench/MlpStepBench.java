package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.ops.ReduceOps;
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
 * One SGD training step of an MLP 784-128-10 at batch 32 on the raw core API (no nn module), the
 * same model as the PyTorch peer's mlp_mnist.
 *
 * <p>Reported as ops/s = steps/s; samples/s = ops/s * 32. Napkin math: forward 2*32*(784*128 +
 * 128*10) = 6.5 MFLOP, backward twice that (dW and dX; dX of the first layer is skipped as x needs
 * no grad, so ~1.7x), ~18 MFLOP per step: 0.2 ms at 100 GFLOP/s, i.e. ~5000 steps/s (160K
 * samples/s) if GEMM-bound. The ~25 small ops of the step (each an allocation and a tape node)
 * decide how close it gets.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"--add-modules=jdk.incubator.vector", "-Xms1g", "-XX:+AlwaysPreTouch"})
public class MlpStepBench {
  private static final int BATCH = 32;
  private static final double LR = 0.01;
  private Tensor x;
  private Tensor labels;
  private Tensor w1;
  private Tensor b1;
  private Tensor w2;
  private Tensor b2;

  @Setup
  public void setup() {
    Generator g = new Generator(0);
    x = Tensor.randn(g, BATCH, 784);
    labels = Tensor.randint(g, 0, 10, BATCH);
    // Kaiming-uniform-like scale keeps logits O(1) so the step stays numerically ordinary
    w1 = Tensor.randn(g, 784, 128).mul(1 / Math.sqrt(784)).requiresGrad(true);
    b1 = Tensor.zeros(128).requiresGrad(true);
    w2 = Tensor.randn(g, 128, 10).mul(1 / Math.sqrt(128)).requiresGrad(true);
    b2 = Tensor.zeros(10).requiresGrad(true);
  }

  @Benchmark
  public Tensor step() {
    Tensor logits = x.matmul(w1).add(b1).relu().matmul(w2).add(b2);
    Tensor loss = ReduceOps.logsumexp(logits, new int[] {1}, false)
        .sub(logits.gather(1, labels.unsqueeze(1)).squeeze(1)).mean();
    loss.backward();
    try (Grad ignored = Grad.off()) {
      for (Tensor p : new Tensor[] {w1, b1, w2, b2}) {
        p.sub_(p.grad().mul(LR));
        p.setGrad(null);
      }
    }
    return loss;
  }
}
