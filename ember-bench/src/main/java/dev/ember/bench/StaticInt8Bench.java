package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Fuse;
import dev.ember.nn.Models;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.nn.quant.QConfig;
import dev.ember.nn.quant.Quantize;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Static int8 inference ({@link Quantize#prepare} with {@link QConfig#ptqDefault}, calibrated on random images,
 * {@link Quantize#convert}) against float32 on the same fused weights, for LeNet-5 and the MLP 784-256-128-10 of
 * QuantizeFashion, per batch size: the whole model, then layer by layer (each layer on the input its own model
 * feeds it), the float and int8 variants alternated inside one JVM with the order swapping every round. The weights
 * are untrained (timing does not depend on their values).
 *
 * <pre>
 * StaticInt8Bench [--rounds R] [--millis T] [--warmup W] [--batch N]...
 *   defaults: 9 rounds of ~100 ms per case after W = 3000 ms of warm-up, batches 1 and 128
 * </pre>
 *
 * stdout: one JSON object per model, batch and layer ({@code "case":"lenet5 static int8 b=128"} for the whole
 * model, {@code "... layer 0 QuantizedConvReLU2d"} per layer) with {@code "unit":"us/batch","f32","int8","speedup"}:
 * medians over the rounds of each round's mean time. stderr: the same as readable lines.
 */
public final class StaticInt8Bench {
  private StaticInt8Bench() {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, StaticInt8Bench::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 9;
    int millis = 100;
    int warmup = 3000;
    List<Integer> batches = new ArrayList<>();
    for (int i = 0; i < args.length; i += 2) {
      int v = BenchArgs.positiveInt("StaticInt8Bench", args[i], BenchArgs.value("StaticInt8Bench", args, i));
      switch (args[i]) {
        case "--rounds" -> rounds = v;
        case "--millis" -> millis = v;
        case "--warmup" -> warmup = v;
        case "--batch" -> batches.add(v);
        default -> throw BenchArgs.unknown("StaticInt8Bench", args[i], "--rounds, --millis, --warmup, --batch");
      }
    }
    if (batches.isEmpty()) batches = List.of(1, 128);
    Generator gen = new Generator(1);
    for (String name : new String[] {"lenet5", "mlp"}) {
      Generator.manualSeed(0);
      Module model = name.equals("mlp") ? Models.mlp(784, 256, 128, 10) : Models.lenet5(10);
      model.eval();
      Module f32 = fuse(model);
      Module prepared = Quantize.prepare(fuse(model), QConfig.ptqDefault());
      try (Grad ignored = Grad.off()) {
        for (int i = 0; i < 4; i++) prepared.call(Tensor.rand(gen, 128, 1, 28, 28));
      }
      Module int8 = Quantize.convert(prepared);
      List<Module> fl = leaves(f32);
      List<Module> ql = leaves(int8);
      boolean warm = false;
      for (int batch : batches) {
        Tensor x = Tensor.rand(gen, batch, 1, 28, 28);   // pixel-like inputs in [0, 1)
        try (Grad ignored = Grad.off()) {
          double[] t = time(f32, x, int8, x, rounds, millis, warm ? 500 : warmup);
          warm = true;
          report(name + " static int8 b=" + batch, t);
          Tensor hf = x;
          Tensor hq = x;
          for (int i = 0; i < fl.size(); i++) {
            Module a = fl.get(i);
            Module b = ql.get(i);
            t = time(a, hf, b, hq, rounds, millis / 4, 200);
            report(name + " static int8 b=" + batch + " layer " + i + " " + b.name(), t);
            hf = a.call(hf);
            hq = b.call(hq);
          }
        }
      }
    }
  }

  private static void report(String name, double[] t) {
    System.out.println(String.format(Locale.ROOT, "{\"category\":\"compression\",\"case\":\"%s\",\"unit\":\"us/batch\","
        + "\"f32\":%.2f,\"int8\":%.2f,\"speedup\":%.3f,\"threads\":%d}", name, t[0], t[1], t[0] / t[1],
        Device.CPU.backend().threads()));
    System.err.println(String.format(Locale.ROOT, "%-52s f32 %9.1f us  int8 %9.1f us  (%.2fx)", name, t[0], t[1],
        t[0] / t[1]));
  }

  /** The layers a model runs in order (nested Sequentials flattened). */
  private static List<Module> leaves(Module m) {
    List<Module> out = new ArrayList<>();
    if (m instanceof Sequential s) {
      for (Module c : s.children()) out.addAll(leaves(c));
    } else {
      out.add(m);
    }
    return out;
  }

  /** As QuantizeFashion: LeNet-5 becomes a Sequential of its fused halves, which is what its forward runs. */
  private static Module fuse(Module model) {
    if (model instanceof Sequential s) return Fuse.fuse(s);
    return new Sequential(Fuse.fuse((Sequential) model.child("features")),
        Fuse.fuse((Sequential) model.child("classifier")));
  }

  /** Median microseconds per call of a(xa) and b(xb), alternated, the order swapping every round. */
  private static double[] time(Module a, Tensor xa, Module b, Tensor xb, int rounds, int millis, int warmupMillis) {
    Module[] m = {a, b};
    Tensor[] x = {xa, xb};
    long end = System.nanoTime() + warmupMillis * 1_000_000L;
    int n = 0;
    while (System.nanoTime() < end || n < 10) {
      a.call(xa);
      b.call(xb);
      n++;
    }
    long worst = 0;
    for (int k = 0; k < 2; k++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < 5; i++) m[k].call(x[k]);
      worst = Math.max(worst, (System.nanoTime() - t0) / 5);
    }
    int calls = (int) Math.max(1, Math.min(100_000, millis * 1_000_000L / Math.max(1, worst)));
    double[][] us = new double[2][rounds];
    for (int r = 0; r < rounds; r++) {
      for (int j = 0; j < 2; j++) {
        int k = (r + j) % 2;
        long t0 = System.nanoTime();
        for (int c = 0; c < calls; c++) m[k].call(x[k]);
        us[k][r] = (System.nanoTime() - t0) / 1e3 / calls;
      }
    }
    Arrays.sort(us[0]);
    Arrays.sort(us[1]);
    return new double[] {us[0][rounds / 2], us[1][rounds / 2]};
  }
}
