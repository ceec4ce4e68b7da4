package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Fuse;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Locale;

/**
 * Inference of the VGG-style {@code Models.convnet(3, 32, 10)} at batch 64 without the tape, three ways,
 * alternated inside one JVM on the same input, the order rotating every round (this machine's noise swings
 * fresh-JVM runs by 20-30%):
 * <ul>
 *   <li>unfused: the eval model as trained (Conv2d, BatchNorm2d, ReLU);
 *   <li>folded: BatchNorm folded into each Conv2d by {@link Fuse#convBn}, ReLU still its own module;
 *   <li>fused: {@link Fuse#fuse}, BatchNorm folded and the ReLU in the convolution's epilogue (ConvReLU2d),
 *       Linear-ReLU as LinearReLU.
 * </ul>
 * The BatchNorms get random running statistics and affine parameters first, so the fold is not the identity.
 *
 * <pre>
 * FuseBench [--rounds R] [--batches B] [--batch N]   defaults 15 rounds of 5 batches, batch 64
 * </pre>
 *
 * stdout: one JSON object {@code {"category":"compression","case":"convnet fuse b=64","unit":"ms/batch",
 * "unfused","folded","fused","speedup_folded","speedup_fused","max_rel_diff","rounds"}}: medians over the rounds
 * of each round's mean time per batch; speedups = unfused / variant; max_rel_diff = max |fused - unfused| /
 * max |unfused|. stderr: one readable line.
 */
public final class FuseBench {
  private FuseBench() {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, FuseBench::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 15;
    int batches = 5;
    int batch = 64;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int v = BenchArgs.positiveInt("FuseBench", a, BenchArgs.value("FuseBench", args, i++));
      switch (a) {
        case "--rounds" -> rounds = v;
        case "--batches" -> batches = v;
        case "--batch" -> batch = v;
        default -> throw BenchArgs.unknown("FuseBench", a, "--rounds, --batches, --batch");
      }
    }
    Generator gen = new Generator(1);
    Sequential model = CompressionCases.convnet(gen);   // draws the BatchNorm statistics from gen first
    Sequential folded = CompressionCases.foldOnly(model);
    Sequential fused = Fuse.fuse(model);
    Tensor x = Tensor.randn(gen, batch, 3, 32, 32);
    Module[] variants = {model, folded, fused};
    double[][] ms = new double[3][rounds];
    double diff;
    try (Grad ignored = Grad.off()) {
      Tensor ref = model.call(x);
      diff = BenchStats.maxRelDiff(ref, fused.call(x));
      for (int w = 0; w < 3; w++) for (Module m : variants) for (int b = 0; b < batches; b++) m.call(x); // warm-up
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < 3; k++) {
          int v = (r + k) % 3; // each variant takes each place in the round in turn
          long t0 = System.nanoTime();
          for (int b = 0; b < batches; b++) variants[v].call(x);
          ms[v][r] = (System.nanoTime() - t0) / 1e6 / batches;
        }
      }
    }
    double u = BenchStats.median(ms[0]);
    double f = BenchStats.median(ms[1]);
    double z = BenchStats.median(ms[2]);
    System.out.println(String.format(Locale.ROOT, "{\"category\":\"compression\",\"case\":\"convnet fuse b=%d\","
        + "\"unit\":\"ms/batch\",\"unfused\":%.3f,\"folded\":%.3f,\"fused\":%.3f,\"speedup_folded\":%.3f,"
        + "\"speedup_fused\":%.3f,\"max_rel_diff\":%.2e,\"rounds\":%d}", batch, u, f, z, u / f, u / z, diff, rounds));
    System.err.println(String.format(Locale.ROOT, "convnet b=%d inference: unfused %.2f ms, BN folded %.2f ms (%.2fx),"
        + " BN folded + ReLU fused %.2f ms (%.2fx); max rel diff %.1e", batch, u, f, u / f, z, u / z, diff));
  }
}
