package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.UnaryOp;
import dev.ember.ops.FusedOps;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.Locale;

/**
 * A chain of five elementwise ops, {@code relu(x * y + z) * 0.5 + x}, as one fused kernel
 * ({@link FusedOps#elementwise}, a generated Vector API class) against the same ops run eagerly one by one, on 1M
 * and 16M floats, on 1 and 2 threads, alternated in one JVM (the order rotating every round).
 *
 * <p>Traffic: the fused kernel reads x, y and z once and writes the result once, 16 bytes per element; the eager
 * chain moves 52 (mul 12, add 12, relu 8, mul by a scalar 8, add 12) and allocates four intermediates. GB/s is
 * reported both ways: {@code gbs} = the chain's minimal 16 bytes per element over the time (so fused and eager
 * compare directly), {@code eager_moved_gbs} = the 52 bytes the eager ops actually move over their time.
 *
 * <pre>
 * FusedChainBench [--rounds R] [--reps K]   defaults 9 rounds of 5 calls per variant
 * </pre>
 *
 * <p>Each is timed twice: with fresh outputs (plain user code; a 4 MB or 64 MB array per output, which the JVM
 * zeroes and the collector reclaims) and with each call in a {@link MemoryScope} (pooled buffers, as a training
 * step runs), which shows the kernels' own speed.
 *
 * stdout: one JSON object per size and thread count {@code {"category":"compile","case":"fused chain n=1048576
 * t=2","unit":"ms","fused","eager","speedup","fused_gbs","eager_gbs","eager_moved_gbs","fused_scoped",
 * "eager_scoped","speedup_scoped","fused_scoped_gbs","eager_scoped_gbs","bitwise"}}, medians over the rounds;
 * stderr: one readable line each.
 */
public final class FusedChainBench {
  private FusedChainBench() {}

  /** relu(x * y + z) * 0.5 + x. */
  static ElementwiseProgram chain() {
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int x = b.full();
    int y = b.full();
    int z = b.full();
    int half = b.constant(0.5);
    int h = b.unary(UnaryOp.RELU, b.binary(BinaryOp.ADD, b.binary(BinaryOp.MUL, x, y), z));
    b.binary(BinaryOp.ADD, b.binary(BinaryOp.MUL, h, half), x);
    return b.build();
  }

  static Tensor eager(Tensor x, Tensor y, Tensor z) {
    return x.mul(y).add(z).relu().mul(0.5).add(x);
  }

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, FusedChainBench::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 9;
    int reps = 5;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int v = BenchArgs.positiveInt("FusedChainBench", a, BenchArgs.value("FusedChainBench", args, i++));
      switch (a) {
        case "--rounds" -> rounds = v;
        case "--reps" -> reps = v;
        default -> throw BenchArgs.unknown("FusedChainBench", a, "--rounds, --reps");
      }
    }
    ElementwiseProgram p = chain();
    Generator gen = new Generator(1);
    for (int n : new int[] {1 << 20, 1 << 24}) {
      Tensor x = Tensor.randn(gen, n / 1024, 1024);
      Tensor y = Tensor.randn(gen, n / 1024, 1024);
      Tensor z = Tensor.randn(gen, n / 1024, 1024);
      for (int threads : new int[] {1, 2}) {
        Device.CPU.backend().setThreads(threads);
        double[][] ms = new double[4][rounds];
        boolean bitwise;
        try (Grad off = Grad.off()) {
          bitwise = java.util.Arrays.equals(eager(x, y, z).toFloatArray(), FusedOps.elementwise(p, x, y, z).toFloatArray());
          // warm-up: until both have run for 2 s (C2 compiles the generated class and the eager kernels)
          long warm = System.nanoTime();
          while (System.nanoTime() - warm < 2_000_000_000L) {
            FusedOps.elementwise(p, x, y, z);
            eager(x, y, z);
          }
          for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < 4; k++) {
              int v = (r + k) % 4;
              long t0 = System.nanoTime();
              for (int c = 0; c < reps; c++) {
                // 0, 1: fresh outputs, as plain user code; 2, 3: each call in a MemoryScope (pooled buffers), as a
                // training step runs
                try (MemoryScope scope = v >= 2 ? MemoryScope.open() : null) {
                  if (v % 2 == 0) FusedOps.elementwise(p, x, y, z);
                  else eager(x, y, z);
                }
              }
              ms[v][r] = (System.nanoTime() - t0) / 1e6 / reps;
            }
          }
        }
        double f = BenchStats.median(ms[0]);
        double e = BenchStats.median(ms[1]);
        double fs = BenchStats.median(ms[2]);
        double es = BenchStats.median(ms[3]);
        double minimal = 16.0 * n / 1e9;
        System.out.println(String.format(Locale.ROOT, "{\"category\":\"compile\",\"case\":\"fused chain n=%d t=%d\","
            + "\"unit\":\"ms\",\"fused\":%.3f,\"eager\":%.3f,\"speedup\":%.2f,\"fused_gbs\":%.1f,\"eager_gbs\":%.1f,"
            + "\"eager_moved_gbs\":%.1f,\"fused_scoped\":%.3f,\"eager_scoped\":%.3f,\"speedup_scoped\":%.2f,"
            + "\"fused_scoped_gbs\":%.1f,\"eager_scoped_gbs\":%.1f,\"bitwise\":%b}", n, threads, f, e, e / f,
            minimal / (f / 1e3), minimal / (e / 1e3), 52.0 * n / 1e9 / (e / 1e3), fs, es, es / fs, minimal / (fs / 1e3),
            minimal / (es / 1e3), bitwise));
        System.err.println(String.format(Locale.ROOT, "relu(x*y+z)*0.5+x, %d floats, %d thread%s: fused %.3f ms"
            + " (%.1f GB/s), eager %.3f ms (%.1f GB/s of the chain, %.1f GB/s moved), %.2fx; in a MemoryScope: fused"
            + " %.3f ms (%.1f GB/s), eager %.3f ms (%.1f GB/s), %.2fx; bitwise %b", n, threads,
            threads == 1 ? "" : "s", f, minimal / (f / 1e3), e, minimal / (e / 1e3), 52.0 * n / 1e9 / (e / 1e3),
            e / f, fs, minimal / (fs / 1e3), es, minimal / (es / 1e3), es / fs, bitwise));
      }
    }
  }
}
