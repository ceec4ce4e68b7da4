package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.ops.ElementwiseOps;
import dev.ember.ops.ReduceOps;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** Results are bitwise the same on 1 and 2 threads (Parallel's determinism contract). */
class DeterminismTest {

  private static int[] bits(Tensor t) {
    float[] f = t.toFloatArray();
    int[] b = new int[f.length];
    for (int i = 0; i < f.length; i++) b[i] = Float.floatToRawIntBits(f[i]);
    return b;
  }

  /** Runs {@code work} (which must create its own inputs from fixed seeds) on 1 and on 2 threads. */
  private static void assertSameOnOneAndTwoThreads(String what, Supplier<Tensor> work) {
    int old = Parallel.threads();
    try {
      Parallel.setThreads(1);
      Tensor one = work.get();
      Parallel.setThreads(2);
      Tensor two = work.get();
      assertArrayEquals(one.shape(), two.shape(), what + ": shape");
      int[] b1 = bits(one);
      int[] b2 = bits(two);
      for (int i = 0; i < b1.length; i++) {
        if (b1[i] != b2[i]) {
          throw new AssertionError(what + ": element " + i + " differs: " + Float.intBitsToFloat(b1[i]) + " (1 thread) vs "
              + Float.intBitsToFloat(b2[i]) + " (2 threads)");
        }
      }
      for (float v : one.toFloatArray()) assertTrue(Float.isFinite(v), what + ": non-finite result");
    } finally {
      Parallel.setThreads(old);
    }
    assertEquals(old, Parallel.threads());
  }

  @Test
  void matmulOddShapes() {
    assertSameOnOneAndTwoThreads("matmul [300,257]x[257,129]",
        () -> Tensor.randn(new Generator(1), 300, 257).matmul(Tensor.randn(new Generator(2), 257, 129)));
  }

  @Test
  void matmulLarge() {
    assertSameOnOneAndTwoThreads("matmul [512,1024]x[1024,512]",
        () -> Tensor.randn(new Generator(3), 512, 1024).matmul(Tensor.randn(new Generator(4), 1024, 512)));
  }

  @Test
  void matmulWithTransposedOperand() {
    assertSameOnOneAndTwoThreads("matmul [200,300]x[150,300]^T",
        () -> Tensor.randn(new Generator(5), 200, 300).matmul(Tensor.randn(new Generator(6), 150, 300).t()));
  }

  @Test
  void batchedMatmulWhoseProductsSplitAtTopLevel() {
    // each 128 x 64 x 128 product is split over threads when called alone, but runs whole inside
    // the forEach over the batch: the bits must not depend on which
    assertSameOnOneAndTwoThreads("bmm [8,128,64]x[8,128,64]^T", () -> Tensor.randn(new Generator(7), 8, 128, 64)
        .matmul(Tensor.randn(new Generator(8), 8, 128, 64).transpose(1, 2)));
    assertSameOnOneAndTwoThreads("matmul [128,64]x[128,64]^T", () -> Tensor.randn(new Generator(7), 128, 64)
        .matmul(Tensor.randn(new Generator(8), 128, 64).t()));
  }

  @Test
  void batchedMatmulSpreadWhenTheBatchSplitsEvenly() {
    // attention's per-head products at T = 256 (4M multiply-adds each): spread over the batch on 2 threads (8 % 2 == 0),
    // threaded inside each GEMM on 3; every slice must equal its own 2-d product either way
    Supplier<Tensor> scores = () -> Tensor.randn(new Generator(9), 8, 256, 64)
        .matmul(Tensor.randn(new Generator(10), 8, 256, 64).transpose(1, 2));
    Supplier<Tensor> context = () -> Tensor.randn(new Generator(11), 8, 256, 256)
        .matmul(Tensor.randn(new Generator(12), 8, 256, 64));
    assertSameOnOneAndTwoThreads("bmm [8,256,64]x[8,256,64]^T", scores);
    assertSameOnOneAndTwoThreads("bmm [8,256,256]x[8,256,64]", context);
    int old = Parallel.threads();
    try {
      for (int t : new int[] {2, 3}) {
        Parallel.setThreads(t);
        Tensor a = Tensor.randn(new Generator(11), 8, 256, 256);
        Tensor b = Tensor.randn(new Generator(12), 8, 256, 64);
        Tensor batched = a.matmul(b);
        for (int i = 0; i < 8; i++) {
          assertArrayEquals(bits(a.select(0, i).matmul(b.select(0, i))), bits(batched.select(0, i)),
              "slice " + i + " on " + t + " threads");
        }
      }
    } finally {
      Parallel.setThreads(old);
    }
  }

  @Test
  void fullSumOfOneMillion() {
    assertSameOnOneAndTwoThreads("sum of 1M", () -> Tensor.rand(new Generator(7), 1_000_000).sum());
    // and the value is right (float accumulation of 1M uniforms, against a double sum)
    Tensor x = Tensor.rand(new Generator(7), 1_000_000);
    double ref = 0;
    for (float v : x.toFloatArray()) ref += v;
    assertEquals(ref, x.sum().item(), Math.abs(ref) * 1e-5);
  }

  @Test
  void sumOverEachDim() {
    assertSameOnOneAndTwoThreads("sum dim 0 of [1000,1000]",
        () -> Tensor.randn(new Generator(8), 1000, 1000).sum(0, false));
    assertSameOnOneAndTwoThreads("sum dim 1 of [1000,1000]",
        () -> Tensor.randn(new Generator(8), 1000, 1000).sum(1, false));
    assertSameOnOneAndTwoThreads("mean dim 1 keepdim of a transposed [1000,1000]",
        () -> Tensor.randn(new Generator(9), 1000, 1000).t().mean(1, true));
  }

  @Test
  void softmaxOverRows() {
    assertSameOnOneAndTwoThreads("softmax dim 1 of [512,1000]",
        () -> Tensor.randn(new Generator(10), 512, 1000).mul(3).softmax(1));
    assertSameOnOneAndTwoThreads("log_softmax dim 0 of [512,1000]",
        () -> Tensor.randn(new Generator(10), 512, 1000).logSoftmax(0));
  }

  /** One SGD step of a 784-128-10 MLP at batch 64; returns the loss and the updated parameters, flattened. */
  private static Tensor mlpStep() {
    Generator g = new Generator(2024);
    Tensor w1 = Tensor.randn(g, 784, 128).mul(Math.sqrt(2.0 / 784)).requiresGrad(true);
    Tensor b1 = Tensor.zeros(128).requiresGrad(true);
    Tensor w2 = Tensor.randn(g, 128, 10).mul(Math.sqrt(1.0 / 128)).requiresGrad(true);
    Tensor b2 = Tensor.zeros(10).requiresGrad(true);
    Tensor x = Tensor.randn(g, 64, 784);
    Tensor labels = Tensor.randint(g, 0, 10, 64);

    Tensor logits = x.matmul(w1).add(b1).relu().matmul(w2).add(b2);
    Tensor picked = logits.gather(1, labels.unsqueeze(1)).squeeze(1);
    Tensor loss = ReduceOps.logsumexp(logits, new int[] {1}, false).sub(picked).mean();
    loss.backward();
    try (Grad ignored = Grad.off()) {
      for (Tensor p : new Tensor[] {w1, b1, w2, b2}) p.sub_(p.grad().mul(0.1));
    }
    assertTrue(loss.item() > 1 && loss.item() < 5, "cross entropy of 10 classes at init, got " + loss.item());
    try (Grad ignored = Grad.off()) {
      return Tensor.cat(java.util.List.of(loss.detach().reshape(1), w1.reshape(-1), b1, w2.reshape(-1), b2), 0);
    }
  }

  @Test
  void mlpTrainingStep() {
    assertSameOnOneAndTwoThreads("MLP 784-128-10 SGD step", DeterminismTest::mlpStep);
  }

  /**
   * The same ops on the same thread, before and after the JIT compiles the kernels. The Vector
   * API's lanewise(EXP) and friends fail this (their interpreted fallback and the compiled SVML
   * intrinsic round differently), which is why the vector kernels use VMath's polynomials.
   */
  @Test
  void transcendentalsAreTheSameColdAndWarm() {
    Tensor x = Tensor.randn(new Generator(10), 64, 1000).mul(3);
    java.util.List<java.util.function.Function<Tensor, Tensor>> ops = java.util.List.of(
        t -> t.softmax(1), t -> t.logSoftmax(1), Tensor::exp, t -> t.abs().log(), Tensor::tanh, Tensor::sigmoid,
        t -> ElementwiseOps.gelu(t, false), Tensor::expm1, t -> t.abs().log1p(), ElementwiseOps::silu,
        t -> ElementwiseOps.elu(t, 1.0), t -> ElementwiseOps.softplus(t, 1.0));
    for (int k = 0; k < ops.size(); k++) {
      var op = ops.get(k);
      int[] cold = bits(op.apply(x));
      int[] warm = null;
      for (int i = 0; i < 2000; i++) warm = bits(op.apply(x));
      assertArrayEquals(cold, warm, "op #" + k + " changed its bits once compiled");
    }
  }
}
