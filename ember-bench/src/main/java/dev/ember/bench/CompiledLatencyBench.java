package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.compile.CompiledModule;
import dev.ember.compile.Compiler;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Locale;

/**
 * Inference latency without the tape, eager against compiled ({@link Compiler#compile}: epilogue fusion, memory
 * planning, the graph executor), for the MLP 784-128-10 at batch 1 and LeNet-5 at batch 1 and 64. Per case the
 * three variants (eager; compiled, its output allocated per call; compiled with {@code reuseOutput}, which allocates
 * no tensor memory at all) alternate inside one JVM on the same input, the order rotating every round; each round
 * times a run of calls.
 *
 * <pre>
 * CompiledLatencyBench [--rounds R] [--seconds S]   defaults 15 rounds, 0.2 s per variant and round
 * </pre>
 *
 * stdout: one JSON object per case {@code {"category":"compile","case":"mlp 784-128-10 b=1","unit":"us/call",
 * "eager","compiled","compiled_reuse","speedup","speedup_reuse", ..., "rounds"}}: medians over the rounds of each
 * round's mean time per call; speedup = eager / compiled; the {@code _min} fields are the fastest round's (the better
 * estimate on a loaded machine). stderr: one readable line per case, and the compiled module's explain().
 */
public final class CompiledLatencyBench {
  private CompiledLatencyBench() {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, CompiledLatencyBench::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 15;
    double seconds = 0.2;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String v = BenchArgs.value("CompiledLatencyBench", args, i++);
      switch (a) {
        case "--rounds" -> rounds = BenchArgs.positiveInt("CompiledLatencyBench", a, v);
        case "--seconds" -> seconds = BenchArgs.positive("CompiledLatencyBench", a, v);
        default -> throw BenchArgs.unknown("CompiledLatencyBench", a, "--rounds, --seconds");
      }
    }
    Generator.manualSeed(1);
    Module mlp = Models.mlp(784, 128, 10).eval();
    Module lenet = Models.lenet5(10).eval();
    try (Grad ignored = Grad.off()) {
      run("mlp 784-128-10 b=1", mlp, Tensor.randn(1, 784), rounds, seconds);
      run("lenet5 b=1", lenet, Tensor.randn(1, 1, 28, 28), rounds, seconds);
      run("lenet5 b=64", lenet, Tensor.randn(64, 1, 28, 28), rounds, seconds);
    }
  }

  private static void run(String name, Module eager, Tensor x, int rounds, double seconds) {
    CompiledModule compiled = Compiler.compile(eager);
    CompiledModule reuse = Compiler.compile(eager).reuseOutput(true);
    Module[] variants = {eager, compiled, reuse};
    Tensor want = eager.call(x);
    for (Module m : variants) {
      if (!Arrays.equals(bits(want), bits(m.call(x)))) throw new AssertionError(name + ": compiled differs from eager");
    }
    int calls = 1;
    long t0 = System.nanoTime();
    while (System.nanoTime() - t0 < 1_000_000_000L) { // warm-up, and calls per timed run
      for (Module m : variants) for (int i = 0; i < calls; i++) m.call(x);
      calls *= 2;
    }
    double perCall = (System.nanoTime() - t0) / 3.0 / (2 * calls - 1);
    calls = (int) Math.max(1, seconds * 1e9 / perCall);
    double[][] us = new double[3][rounds];
    for (int r = 0; r < rounds; r++) {
      for (int k = 0; k < 3; k++) {
        int v = (k + r) % 3;
        Module m = variants[v];
        long s = System.nanoTime();
        for (int i = 0; i < calls; i++) m.call(x);
        us[v][r] = (System.nanoTime() - s) / 1e3 / calls;
      }
    }
    double e = median(us[0]);
    double c = median(us[1]);
    double cr = median(us[2]);
    double[] min = {min(us[0]), min(us[1]), min(us[2])};
    System.out.printf(Locale.ROOT, "{\"category\":\"compile\",\"case\":\"%s\",\"unit\":\"us/call\",\"eager\":%.3f,"
        + "\"compiled\":%.3f,\"compiled_reuse\":%.3f,\"speedup\":%.3f,\"speedup_reuse\":%.3f,\"eager_min\":%.3f,"
        + "\"compiled_min\":%.3f,\"compiled_reuse_min\":%.3f,\"rounds\":%d}%n",
        name, e, c, cr, e / c, e / cr, min[0], min[1], min[2], rounds);
    System.err.printf(Locale.ROOT, "%s: eager %.2f us, compiled %.2f us (%.2fx), output reused %.2f us (%.2fx);"
        + " fastest rounds %.2f, %.2f, %.2f us%n", name, e, c, e / c, cr, e / cr, min[0], min[1], min[2]);
    System.err.println(reuse.explain().trim().replace("\n", "; "));
  }

  private static int[] bits(Tensor t) {
    float[] v = t.toFloatArray();
    int[] b = new int[v.length];
    for (int i = 0; i < v.length; i++) b[i] = Float.floatToRawIntBits(v[i]);
    return b;
  }

  private static double min(double[] a) {
    return Arrays.stream(a).min().orElseThrow();
  }

  private static double median(double[] a) {
    double[] s = a.clone();
    Arrays.sort(s);
    return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  }
}
