package dev.ember.bench;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
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
 * <p>Forward+backward cases report us per call: grads are dropped (setGrad(null), {@code
 * x.grad = None}) before each call so no accumulation op is added, and non-scalar outputs take a
 * preallocated upstream gradient of ones instead of a {@code sum()} that would add an op.
 */
final class OpsCases {
  static final int[] DEFAULT_SIZES = {1 << 20, 1 << 16};
  private static final int COLS = 1024;
  /** Elementwise fwd+bwd size: 64K elements, the size at which Ember starts to split work over threads. */
  private static final int BW_ROWS = 256;
  private static final int BW_COLS = 256;
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
    String bc = "fwd+bwd [" + BW_ROWS + "x" + BW_COLS + "]";
    out.add(fwdBwd("relu", bc, Tensor::relu, false));
    out.add(fwdBwd("sigmoid", bc, Tensor::sigmoid, false));
    out.add(fwdBwd("tanh", bc, Tensor::tanh, false));
    out.add(fwdBwd("softmax", bc, t -> t.softmax(1), false));
    out.add(fwdBwd("sum", bc, Tensor::sum, true));
    out.add(fwdBwd("mean", bc, Tensor::mean, true));
    out.add(matmulFwdBwd());
    out.add(tape());
    return out;
  }

  private static BenchCase fwd(String workload, String name, double gbPerCall, Supplier<Tensor> op) {
    return BenchCase.throughput(workload, name, "gbps", "GB/s", gbPerCall, () -> sink = op.get());
  }

  /** A [n/1024, 1024] standard-normal tensor, created on first use so idle cases hold no memory. */
  private static Supplier<Tensor> lazy(int n, long seed) {
    return new Supplier<>() {
      private Tensor t;

      @Override
      public Tensor get() {
        if (t == null) t = Tensor.randn(new Generator(seed), n / COLS, COLS);
        return t;
      }
    };
  }

  private static BenchCase fwdBwd(String workload, String name, UnaryOperator<Tensor> op, boolean scalarOut) {
    Tensor x = Tensor.randn(new Generator(3), BW_ROWS, BW_COLS).requiresGrad(true);
    Tensor g = Tensor.ones(BW_ROWS, BW_COLS);
    return BenchCase.latency(workload, name, "latency_us", "us/call", 1e6, () -> {
      x.setGrad(null);
      Tensor out = op.apply(x);
      if (scalarOut) out.backward();
      else out.backward(g);
      sink = x.grad();
    });
  }

  private static BenchCase matmulFwdBwd() {
    Tensor a = Tensor.randn(new Generator(4), 256, 256).requiresGrad(true);
    Tensor b = Tensor.randn(new Generator(5), 256, 256).requiresGrad(true);
    Tensor g = Tensor.ones(256, 256);
    return BenchCase.latency("matmul", "fwd+bwd (256x256)@(256x256)", "latency_us", "us/call", 1e6, () -> {
      a.setGrad(null);
      b.setGrad(null);
      a.matmul(b).backward(g);
      sink = b.grad();
    });
  }

  /** Autograd bookkeeping per op: 100 adds on a 4-element tensor are all overhead, no arithmetic to speak of. */
  private static BenchCase tape() {
    Tensor x = Tensor.randn(new Generator(6), 4).requiresGrad(true);
    Tensor c = Tensor.ones(4);
    Tensor g = Tensor.ones(4);
    return BenchCase.latency("tape", "add chain x" + CHAIN + " [4] fwd+bwd per op", "latency_ns", "ns/op",
        1e9 / CHAIN, () -> {
          x.setGrad(null);
          Tensor y = x;
          for (int i = 0; i < CHAIN; i++) y = y.add(c);
          y.backward(g);
          sink = x.grad();
        });
  }
}
