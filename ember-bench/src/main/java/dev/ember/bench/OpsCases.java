package dev.ember.bench;

import dev.ember.ops.ReduceOps;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BinaryOperator;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * The {@code ops} category, through the public Tensor API as a user would call it (allocating
 * outputs, autograd where asked), mirrored line for line by bench/peers/pytorch_ops.py.
 *
 * <p>Forward ops report GB/s of logical traffic: 4 bytes per element read or written by the op
 * as written (unary 8 B/elem, add 12, sum 4, softmax 8). a*x+b counts as one fused op (8 B/elem)
 * although both libraries run it as two passes ({@code x.mul(a).add(b)}, 16 B/elem actually
 * moved), so its GB/s shows how far each is from a fused kernel.
 *
 * <p>Forward+backward cases ("gradient ops") report us per call on [n, n] inputs, n = 64, 256,
 * 1024: relu, sigmoid, tanh, softmax (dim 1), sum, mean, max over dim 1 (values, as
 * {@code torch.max(x, 1).values}), add and mul (both operands need gradients) and an n x n matmul.
 * Grads are dropped (setGrad(null), {@code x.grad = None}) before each call so no accumulation op is
 * added, and non-scalar outputs take a preallocated upstream gradient of ones instead of a
 * {@code sum()} that would add an op.
 *
 * <p>Each Ember call runs inside its own {@link MemoryScope}, as each step of {@code Trainer.fit} and
 * of the training category does, and a dropped gradient goes back to the pool as {@code zeroGrad()}
 * hands it back. That is Ember's counterpart of the caching allocator PyTorch's loop gets without
 * asking: both hand the next call the block the last one freed, still in cache. Without a scope, a
 * 1M-element output is a new 4 MiB Java array, and its first write to memory not in cache costs about
 * what the op does (BENCHMARKS.md, "a new 4 MiB array").
 */
final class OpsCases {
  static final int[] DEFAULT_SIZES = {1 << 20, 1 << 16};
  private static final int COLS = 1024;
  /** Square sizes of the fwd+bwd ("gradient ops") cases; 256 (64K elements) is where Ember starts to split work over threads. */
  static final int[] GRAD_SIZES = {64, 256, 1024};
  private static final int CHAIN = 100;
  private static volatile Object sink;

  private OpsCases() {}

  static String sizeName(int n) {
    return n % (1 << 20) == 0 ? (n >> 20) + "M" : n % 1024 == 0 ? (n >> 10) + "K" : Integer.toString(n);
  }

  static List<BenchCase> cases(int[] sizes) {
    List<BenchCase> out = new ArrayList<>();
    for (int n : sizes) {
      String c = "fwd n=" + sizeName(n);
      double gb = n * 4.0 / 1e9;
      Supplier<Tensor> x = lazy(n, 1);
      Supplier<Tensor> y = lazy(n, 2);
      out.add(fwd("relu", c, 2 * gb, () -> x.get().relu()));
      out.add(fwd("add", c, 3 * gb, () -> x.get().add(y.get())));
      out.add(fwd("sigmoid", c, 2 * gb, () -> x.get().sigmoid()));
      out.add(fwd("exp", c, 2 * gb, () -> x.get().exp()));
      out.add(fwd("axpb", c, 2 * gb, () -> x.get().mul(1.5).add(0.5)));
      out.add(fwd("sum", c, gb, () -> x.get().sum()));
      out.add(fwd("softmax", c.replace("fwd", "fwd rows=1024"), 2 * gb, () -> x.get().softmax(1)));
    }
    for (int n : GRAD_SIZES) {
      String bc = "fwd+bwd [" + n + "x" + n + "]";
      out.add(fwdBwd("relu", bc, n, Tensor::relu, false));
      out.add(fwdBwd("sigmoid", bc, n, Tensor::sigmoid, false));
      out.add(fwdBwd("tanh", bc, n, Tensor::tanh, false));
      out.add(fwdBwd("softmax", bc, n, t -> t.softmax(1), false));
      out.add(fwdBwd("sum", bc, n, Tensor::sum, true));
      out.add(fwdBwd("mean", bc, n, Tensor::mean, true));
      out.add(fwdBwd("max", bc.replace("fwd+bwd", "fwd+bwd dim=1"), n, t -> ReduceOps.max(t, 1, false)[0], false));
      out.add(binaryFwdBwd("add", bc, n, Tensor::add));
      out.add(binaryFwdBwd("mul", bc, n, Tensor::mul));
      out.add(matmulFwdBwd(n));
    }
    out.add(tape());
    return out;
  }

  private static BenchCase fwd(String workload, String name, double gbPerCall, Supplier<Tensor> op) {
    return BenchCase.throughput(workload, name, "gbps", "GB/s", gbPerCall, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        sink = op.get();
      }
    });
  }

  /**
   * A [n/1024, 1024] standard-normal tensor, created on first use so idle cases hold no memory. The
   * first use is inside a call's scope, so the tensor is taken out of it.
   */
  private static Supplier<Tensor> lazy(int n, long seed) {
    return new Supplier<>() {
      private Tensor t;

      @Override
      public Tensor get() {
        if (t == null) t = MemoryScope.escape(Tensor.randn(new Generator(seed), n / COLS, COLS));
        return t;
      }
    };
  }

  /**
   * Forward+backward of a unary op on an [n, n] standard-normal leaf. A [n, n] output takes an
   * upstream gradient of ones of its shape; max over dim 1 (values) takes ones of shape [n].
   */
  private static BenchCase fwdBwd(String workload, String name, int n, UnaryOperator<Tensor> op, boolean scalarOut) {
    Tensor x = Tensor.randn(new Generator(3), n, n).requiresGrad(true);
    Tensor g = workload.equals("max") ? Tensor.ones(n) : Tensor.ones(n, n);
    return BenchCase.latency(workload, name, "latency_us", "us/call", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        dropGrad(x);
        Tensor out = op.apply(x);
        if (scalarOut) out.backward();
        else out.backward(g);
        sink = x.grad();
      }
    });
  }

  /** Forward+backward of an elementwise binary op on two [n, n] leaves, both needing gradients. */
  private static BenchCase binaryFwdBwd(String workload, String name, int n, BinaryOperator<Tensor> op) {
    Tensor a = Tensor.randn(new Generator(7), n, n).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(8), n, n).requiresGrad(true);
    Tensor g = Tensor.ones(n, n);
    return BenchCase.latency(workload, name, "latency_us", "us/call", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        dropGrad(a);
        dropGrad(b);
        op.apply(a, b).backward(g);
        sink = b.grad();
      }
    });
  }

  private static BenchCase matmulFwdBwd(int n) {
    Tensor a = Tensor.randn(new Generator(4), n, n).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(5), n, n).requiresGrad(true);
    Tensor g = Tensor.ones(n, n);
    String name = "fwd+bwd (" + n + "x" + n + ")@(" + n + "x" + n + ")";
    return BenchCase.latency("matmul", name, "latency_us", "us/call", 1e6, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        dropGrad(a);
        dropGrad(b);
        a.matmul(b).backward(g);
        sink = b.grad();
      }
    });
  }

  /** Autograd bookkeeping per op: 100 adds on a 4-element tensor are all overhead, no arithmetic to speak of. */
  private static BenchCase tape() {
    Tensor x = Tensor.randn(new Generator(6), 4).requiresGrad(true);
    Tensor c = Tensor.ones(4);
    Tensor g = Tensor.ones(4);
    return BenchCase.latency("tape", "add chain x" + CHAIN + " [4] fwd+bwd per op", "latency_ns", "ns/op",
        1e9 / CHAIN, () -> {
          try (MemoryScope call = MemoryScope.open()) {
            dropGrad(x);
            Tensor y = x;
            for (int i = 0; i < CHAIN; i++) y = y.add(c);
            y.backward(g);
            sink = x.grad();
          }
        });
  }

  /** Drops a leaf's gradient and hands its buffer back to the pool, as {@code Optimizer.zeroGrad()} does. */
  static void dropGrad(Tensor leaf) {
    Tensor old = leaf.grad();
    leaf.setGrad(null);
    MemoryScope.recycle(old);
  }
}
