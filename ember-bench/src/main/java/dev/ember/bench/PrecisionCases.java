package dev.ember.bench;

import dev.ember.amp.Autocast;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The {@code precision} category, mirrored by bench/peers/pytorch_precision.py:
 * <ul>
 *   <li>{@code convert}: {@code x.to(dtype)} of 16M elements, F32 to BF16 and F16 and back, in GB/s of bytes read
 *       plus written (6 per element), against {@code torch.Tensor.to};
 *   <li>{@code linear_fwd}: the forward product x W^T of seed_large's hidden layer (W 6656 x 6656) at batch 32 and
 *       128, F32 operands against BF16 ones ({@code F.linear} on bf16 tensors in torch), GFLOP/s: the GEMM reading
 *       a BF16 weight at half the bytes;
 *   <li>{@code linear_fwd_bwd}: that layer's forward and backward (dX and dW, 3 GEMMs) with an F32 master weight, in
 *       F32 and under BF16 autocast ({@code torch.autocast("cpu", dtype=torch.bfloat16)}), GFLOP/s; the autocast
 *       case includes the casts of x and W to BF16 that a training step pays (the scope, and its cast cache,
 *       covers one call, as a step).
 *   <li>{@code seed_large_step}: a whole training step (SGD with momentum 0.9, lr 0.01, cross-entropy) of the
 *       training category's seed_large MLP (1024-6656-6656-6656-10, 95M parameters) at batch 32 and 128, in F32 and
 *       with its forward and loss under BF16 autocast, samples/s: what {@code --precision bf16} does to a step.
 * </ul>
 * Each Ember call runs in its own {@link MemoryScope}, as the ops category's do.
 */
final class PrecisionCases {
  /** Elements of the conversion cases. */
  static final int CONVERT_N = 1 << 24;
  /** seed_large's hidden width. */
  static final int WIDTH = 6656;
  static final int[] BATCHES = {32, 128};
  private static volatile Object sink;
  /** The gradients of x and W of the last fwd+bwd call (for the tests). */
  static volatile Tensor[] lastGrads;

  private PrecisionCases() {}

  static List<BenchCase> cases() {
    return cases(CONVERT_N, WIDTH);
  }

  /** The cases at other sizes (the names keep the benchmark's): {@code n} elements converted, a layer width x width. */
  static List<BenchCase> cases(int n, int width) {
    List<BenchCase> out = new ArrayList<>();
    Supplier<Tensor> f32 = lazy(() -> Tensor.randn(new Generator(1), n));
    Supplier<Tensor> bf16 = lazy(() -> f32.get().to(DType.BF16));
    Supplier<Tensor> f16 = lazy(() -> f32.get().to(DType.F16));
    double gb = n * 6.0 / 1e9;
    out.add(convert("f32_to_bf16", gb, f32, DType.BF16));
    out.add(convert("bf16_to_f32", gb, bf16, DType.F32));
    out.add(convert("f32_to_f16", gb, f32, DType.F16));
    out.add(convert("f16_to_f32", gb, f16, DType.F32));
    Supplier<Tensor> w = lazy(() -> Tensor.randn(new Generator(2), width, width).mul(0.01));
    Supplier<Tensor> wHalf = lazy(() -> w.get().to(DType.BF16));
    for (int b : BATCHES) {
      Supplier<Tensor> x = lazy(() -> Tensor.randn(new Generator(3), b, width));
      Supplier<Tensor> xHalf = lazy(() -> x.get().to(DType.BF16));
      double gflop = 2.0 * b * width * width / 1e9;
      out.add(linearFwd("b=" + b + " f32", gflop, x, w));
      out.add(linearFwd("b=" + b + " bf16", gflop, xHalf, wHalf));
    }
    for (int b : BATCHES) {
      Supplier<Tensor> x = lazy(() -> Tensor.randn(new Generator(3), b, width));
      double gflop = 6.0 * b * width * width / 1e9;
      out.add(linearFwdBwd("b=" + b + " f32", gflop, x, w, null));
      out.add(linearFwdBwd("b=" + b + " bf16_autocast", gflop, x, w, DType.BF16));
    }
    for (int b : BATCHES) {
      for (String mode : new String[] {"f32", "bf16_autocast"}) {
        DType ac = mode.equals("f32") ? null : DType.BF16;
        int h = width;
        out.add(BenchCase.throughput("seed_large_step", "train b=" + b + " sgd " + mode, "samples/s", "samples/s", b,
            stepOnFirstCall(() -> TrainingCases.seed(h, b, "sgd", ac))));
      }
    }
    return out;
  }

  /** The training step {@code make} builds, built on the first call (the model holds ~95M parameters). */
  private static Runnable stepOnFirstCall(Supplier<Runnable> make) {
    Supplier<Runnable> step = lazyPlain(make);
    return () -> step.get().run();
  }

  private static <T> Supplier<T> lazyPlain(Supplier<T> make) {
    return new Supplier<>() {
      private T value;

      @Override
      public T get() {
        if (value == null) value = make.get();
        return value;
      }
    };
  }

  private static BenchCase convert(String name, double gbPerCall, Supplier<Tensor> src, DType to) {
    return BenchCase.throughput("convert", name + " n=16M", "gbps", "GB/s", gbPerCall, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        sink = src.get().to(to);
      }
    });
  }

  private static BenchCase linearFwd(String name, double gflop, Supplier<Tensor> x, Supplier<Tensor> w) {
    return BenchCase.throughput("linear_fwd", name, "gflops", "GFLOP/s", gflop, () -> {
      try (MemoryScope call = MemoryScope.open()) {
        sink = LinalgOps.linear(x.get(), w.get(), null);
      }
    });
  }

  /** x [b, 6656] (requiring grad, as a hidden layer's input) through the layer, summed, backward. */
  private static BenchCase linearFwdBwd(String name, double gflop, Supplier<Tensor> x0, Supplier<Tensor> w0,
      DType autocast) {
    Supplier<Tensor[]> leaves = lazy(() -> new Tensor[] {x0.get().detach().requiresGrad(true),
        w0.get().detach().requiresGrad(true)});
    return BenchCase.throughput("linear_fwd_bwd", name, "gflops", "GFLOP/s", gflop, () -> {
      Tensor x = leaves.get()[0];
      Tensor w = leaves.get()[1];
      try (MemoryScope call = MemoryScope.open()) {
        OpsCases.dropGrad(x);
        OpsCases.dropGrad(w);
        Tensor loss;
        try (Autocast ac = autocast == null ? Autocast.disable() : Autocast.enable(autocast)) {
          loss = LinalgOps.linear(x, w, null).sum(); // sum runs in F32 under autocast
        }
        loss.backward();
        sink = w.grad();
        lastGrads = new Tensor[] {x.grad(), w.grad()};
      }
    });
  }

  /** Made on first use, outside every scope (the 6656 x 6656 weight is 177 MB). */
  private static <T> Supplier<T> lazy(Supplier<T> make) {
    return new Supplier<>() {
      private T value;

      @Override
      public T get() {
        if (value == null) {
          try (MemoryScope outside = MemoryScope.open()) {
            value = make.get();
            if (value instanceof Tensor t) MemoryScope.escape(t);
            if (value instanceof Tensor[] ts) for (Tensor t : ts) MemoryScope.escape(t);
          }
        }
        return value;
      }
    };
  }
}
