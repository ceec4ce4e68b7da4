package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.quant.Quantize;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Arrays;
import java.util.Locale;
import java.util.function.LongSupplier;

/**
 * Inference of the MLP 784-256-128-10 ({@code Models.mlp}) without the tape, float32 against the same weights
 * dynamically quantized to int8 ({@link Quantize#dynamic}: int8 weights per channel, activations quantized per
 * batch), per batch size, the two alternated inside one JVM on the same input with the order swapping every round
 * (this machine's noise swings fresh-JVM runs by 20-30%, so only ratios measured in the same run mean much).
 *
 * <pre>
 * Int8LinearBench [--rounds R] [--millis T] [--warmup W] [--batch N]... [--clock wall|cpu]
 *   defaults: 15 rounds of ~200 ms per case after W = 5000 ms of warm-up, batches 1 and 128, wall clock
 * </pre>
 *
 * {@code --clock cpu} times with the calling thread's CPU time instead of the wall clock: with one thread
 * ({@code -Dember.threads=1}) that is all the work, and it does not count the time other processes hold the core,
 * so it stays usable on a loaded machine (it cannot see the other threads of a multi-threaded run).
 *
 * stdout: one JSON object per batch size {@code {"category":"compression","case":"mlp dynamic int8 b=128",
 * "unit":"us/batch","f32","int8","speedup","max_rel_diff","rounds"}}: medians over the rounds of each round's mean
 * time per batch; speedup = f32 / int8; max_rel_diff = max |int8 - f32| / max |f32| (quantization error, not a
 * kernel error). stderr: one readable line per batch size.
 */
public final class Int8LinearBench {
  private Int8LinearBench() {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, Int8LinearBench::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 15;
    int millis = 200;
    int warmup = 5000;
    int[] batches = {1, 128};
    boolean batchGiven = false;
    boolean cpu = false;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      String value = BenchArgs.value("Int8LinearBench", args, i++);
      if (a.equals("--clock")) {
        String c = value;
        if (!c.equals("wall") && !c.equals("cpu")) {
          throw new BenchArgs.BadOption("Int8LinearBench: --clock must be wall or cpu, got '" + c + "'");
        }
        cpu = c.equals("cpu");
        continue;
      }
      int v = BenchArgs.positiveInt("Int8LinearBench", a, value);
      switch (a) {
        case "--rounds" -> rounds = v;
        case "--millis" -> millis = v;
        case "--warmup" -> warmup = v;
        case "--batch" -> {
          batches = batchGiven ? Arrays.copyOf(batches, batches.length + 1) : new int[1];
          batches[batches.length - 1] = v;
          batchGiven = true;
        }
        default -> throw BenchArgs.unknown("Int8LinearBench", a, "--rounds, --millis, --warmup, --batch, --clock");
      }
    }
    Generator.manualSeed(0);
    Sequential f32 = Models.mlp(784, 256, 128, 10);
    f32.eval();
    Generator.manualSeed(0);
    Module int8 = Quantize.dynamic(Models.mlp(784, 256, 128, 10));
    Generator gen = new Generator(1);
    ThreadMXBean threadClock = ManagementFactory.getThreadMXBean();
    LongSupplier clock = cpu ? threadClock::getCurrentThreadCpuTime : System::nanoTime;
    String clockName = cpu ? "cpu" : "wall";
    for (int batch : batches) {
      Tensor x = Tensor.rand(gen, batch, 784); // pixel-like inputs in [0, 1)
      Module[] variants = {f32, int8};
      double[][] us = new double[2][rounds];
      double diff;
      try (Grad ignored = Grad.off()) {
        diff = BenchStats.maxRelDiff(f32.call(x), int8.call(x));
        int calls = calibrate(variants, x, millis, warmup);
        for (int r = 0; r < rounds; r++) {
          for (int k = 0; k < 2; k++) {
            int v = (r + k) % 2;
            long t0 = clock.getAsLong();
            for (int c = 0; c < calls; c++) variants[v].call(x);
            us[v][r] = (clock.getAsLong() - t0) / 1e3 / calls;
          }
        }
      }
      double f = BenchStats.median(us[0]);
      double q = BenchStats.median(us[1]);
      System.out.println(String.format(Locale.ROOT, "{\"category\":\"compression\",\"case\":\"mlp dynamic int8 b=%d\","
          + "\"unit\":\"us/batch\",\"f32\":%.2f,\"int8\":%.2f,\"speedup\":%.3f,\"max_rel_diff\":%.2e,\"rounds\":%d,"
          + "\"threads\":%d,\"clock\":\"%s\"}", batch, f, q, f / q, diff, rounds, Device.CPU.backend().threads(), clockName));
      System.err.println(String.format(Locale.ROOT, "mlp 784-256-128-10 b=%d inference (%d threads, %s clock): f32 %.1f us,"
          + " dynamic int8 %.1f us (%.2fx); max rel diff %.1e", batch, Device.CPU.backend().threads(), clockName, f, q, f / q, diff));
    }
  }

  /**
   * Warms both variants up for {@code warmupMillis} (the Vector API kernels are slow until C2 compiles them, and on a
   * loaded 2-core machine the compiler threads take seconds) and returns how many calls of the slower one take about
   * {@code millis}.
   */
  private static int calibrate(Module[] variants, Tensor x, int millis, int warmupMillis) {
    long end = System.nanoTime() + warmupMillis * 1_000_000L;
    int n = 0;
    while (System.nanoTime() < end || n < 20) {
      for (Module m : variants) m.call(x);
      n++;
    }
    long worst = 0;
    for (Module m : variants) {
      long t0 = System.nanoTime();
      for (int i = 0; i < 10; i++) m.call(x);
      worst = Math.max(worst, (System.nanoTime() - t0) / 10);
    }
    return (int) Math.max(1, Math.min(100_000, millis * 1_000_000L / Math.max(1, worst)));
  }
}
