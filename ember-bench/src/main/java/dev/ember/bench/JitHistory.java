package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;

/**
 * The JIT-history repro of issue #40: LeNet-5 inference at batch 1 (unpruned and 50% pruned, whose shrunk second
 * convolution has 3 input channels) and at batch 128, run one after another in one JVM, 10 s each by default, each
 * reporting its median time per call. Run with no arguments for the sequence, or with one case name ({@code b1},
 * {@code b1pruned}, {@code b128}) for that case alone in a fresh JVM; the two should print the same times. Before the
 * fix (a vector helper that C2 stopped inlining once another shape had compiled it big, see KernelsTest's
 * vectorKernelsPassNoVectorBetweenMethods) b128 after the other two ran several times slower than alone.
 *
 * <p>usage: {@code java --add-modules jdk.incubator.vector -Dember.threads=2 -cp CP dev.ember.bench.JitHistory
 * [CASE,...] [SECONDS]}
 */
public final class JitHistory {
  private JitHistory() {}

  private static volatile Object sink;

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, a -> {
      List<String> names = a.length > 0 ? List.of(a[0].split(",")) : CASES;
      run(names, a.length > 1 ? BenchArgs.positive("JitHistory", "SECONDS", a[1]) : 10, System.out);
    });
  }

  /** The cases, in the order that shows the issue: batch 1, batch 1 pruned, batch 128. */
  static final List<String> CASES = List.of("b1", "b1pruned", "b128");

  /**
   * Runs the named cases in order in this JVM, {@code seconds} each, printing three lines per case to {@code out}.
   *
   * @throws IllegalArgumentException for a name not in {@link #CASES}, before anything runs
   */
  static void run(List<String> names, double seconds, PrintStream out) {
    for (String name : names) {
      if (!CASES.contains(name)) {
        throw new BenchArgs.BadOption("JitHistory: unknown case " + name + " (one of " + CASES + ")");
      }
    }
    Module lenet = CompressionCases.lenet();
    Module pruned = CompressionCases.pruneAndShrink(CompressionCases.lenet(), 0.5);
    Tensor x1 = Tensor.randn(new Generator(1), 1, 1, 28, 28);
    Tensor x128 = Tensor.randn(new Generator(1), 128, 1, 28, 28);
    for (String name : names) {
      run(name, name.equals("b1pruned") ? pruned : lenet, name.equals("b128") ? x128 : x1, seconds, out);
    }
  }

  /**
   * Calls model(x) for {@code seconds} in windows of half a second and prints each window's wall and main-thread CPU
   * time per call, then the medians over the second half of the windows. The CPU time is the steadier figure on a busy
   * machine; with {@code -Dember.threads=1} it is the whole call's.
   */
  private static void run(String name, Module model, Tensor x, double seconds, PrintStream out) {
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    long end = System.nanoTime() + (long) (seconds * 1e9);
    List<double[]> windows = new ArrayList<>();
    while (System.nanoTime() < end) {
      long t0 = System.nanoTime();
      long c0 = threads.getCurrentThreadCpuTime();
      int calls = 0;
      while (System.nanoTime() - t0 < 500_000_000L) {
        try (MemoryScope call = MemoryScope.open(); Grad ignored = Grad.off()) {
          sink = model.call(x);
        }
        calls++;
      }
      double wall = (System.nanoTime() - t0) / 1e3 / calls;
      windows.add(new double[] {wall, (threads.getCurrentThreadCpuTime() - c0) / 1e3 / calls});
    }
    StringBuilder wall = new StringBuilder();
    StringBuilder cpu = new StringBuilder();
    for (double[] w : windows) {
      wall.append(String.format(" %.1f", w[0]));
      cpu.append(String.format(" %.1f", w[1]));
    }
    List<double[]> late = windows.subList(windows.size() / 2, windows.size());
    out.printf("%-9s median of the last %d windows: wall %.1f us/call, cpu %.1f us/call%n", name, late.size(),
        median(late, 0), median(late, 1));
    out.println("  wall us/call per 0.5 s:" + wall);
    out.println("  cpu  us/call per 0.5 s:" + cpu);
  }

  private static double median(List<double[]> windows, int column) {
    double[] v = windows.stream().mapToDouble(w -> w[column]).sorted().toArray();
    return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
  }
}
