package dev.ember.bench;

import dev.ember.autograd.Grad;
import dev.ember.nn.Module;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Ember's speedups of the compression category's compressed models over their float originals, measured the way
 * {@link FuseBench} measures fusion: per group (a model at one batch size with its variants), the variants run
 * alternately inside one JVM on the same input, the order rotating every round, so a shared machine's slow phases
 * fall on all of them alike (side-by-side runs in separate passes swing by 20-30% here, far more under load).
 * The groups are {@link CompressionCases}'s models: the MLP at batch 1 and 128 (f32, int8_dynamic, int8_static),
 * LeNet-5 at batch 1 and 128 (unpruned, pruned50_shrunk, int8_static) and the convnet at batch 64 (unfused,
 * bn_folded, bn_relu_fused).
 *
 * <pre>
 * CompressionSpeedups [--rounds R] [--calls N] [--warmup S]
 *     defaults: 15 rounds; N calls per variant and round calibrated to ~20 ms of the first variant; the variants
 *     warmed up in turn for S = 10 seconds per group (on a loaded host C2 compiles late: an MLP call at batch 128
 *     took 25 ms after 2 s and 5 ms after 10 s)
 * </pre>
 *
 * stdout: per group {@code {"category":"compression","workload":"mlp_infer","case":"784-256-128-10 b=128",
 * "unit":"us/batch","rounds":R,"us":{"f32":..,"int8_dynamic":..},"speedup":{"int8_dynamic":..}}}: medians over the
 * rounds of each round's mean time per call; speedup = first variant / variant. stderr: one readable line per group.
 */
public final class CompressionSpeedups {
  private CompressionSpeedups() {}

  /** One model at one batch size: its variants in order, the first the reference. */
  record Group(String workload, String name, Map<String, Module> variants, Tensor input) {}

  public static void main(String[] args) throws Throwable {
    BenchArgs.main(args, CompressionSpeedups::runMain);
  }

  private static void runMain(String[] args) {
    int rounds = 15;
    int calls = 0;
    int warmup = 10;
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      int v = BenchArgs.positiveInt("CompressionSpeedups", a, BenchArgs.value("CompressionSpeedups", args, i++));
      switch (a) {
        case "--rounds" -> rounds = v;
        case "--calls" -> calls = v;
        case "--warmup" -> warmup = v;
        default -> throw BenchArgs.unknown("CompressionSpeedups", a, "--rounds, --calls, --warmup");
      }
    }
    for (Group g : groups()) System.out.println(run(g, rounds, calls, warmup));
  }

  /** The groups, built from {@link CompressionCases}'s models and inputs. */
  static List<Group> groups() {
    Map<String, Module> mlp = new LinkedHashMap<>();
    mlp.put("f32", CompressionCases.mlp());
    mlp.put("int8_dynamic", dev.ember.nn.quant.Quantize.dynamic(CompressionCases.mlp()));
    mlp.put("int8_static", CompressionCases.staticInt8(CompressionCases.mlp(), 784));
    Map<String, Module> lenet = new LinkedHashMap<>();
    lenet.put("unpruned", CompressionCases.lenet());
    lenet.put("pruned50_shrunk", CompressionCases.pruneAndShrink(CompressionCases.lenet(), 0.5));
    lenet.put("int8_static", CompressionCases.staticInt8(CompressionCases.lenet(), 1, 28, 28));
    var convnet = CompressionCases.convnet();
    Map<String, Module> conv = new LinkedHashMap<>();
    conv.put("unfused", convnet);
    conv.put("bn_folded", CompressionCases.foldOnly(convnet));
    conv.put("bn_relu_fused", dev.ember.nn.Fuse.fuse(convnet));
    List<Group> out = new ArrayList<>();
    var gen = new dev.ember.tensor.Generator(1);
    for (int b : CompressionCases.MLP_BATCHES) {
      out.add(new Group("mlp_infer", "784-256-128-10 b=" + b, mlp, Tensor.randn(gen, b, 784)));
    }
    for (int b : CompressionCases.LENET_BATCHES) {
      out.add(new Group("lenet_infer", "b=" + b, lenet, Tensor.randn(gen, b, 1, 28, 28)));
    }
    out.add(new Group("convnet_infer", "b=" + CompressionCases.CONVNET_BATCH, conv,
        Tensor.randn(gen, CompressionCases.CONVNET_BATCH, 3, 32, 32)));
    return out;
  }

  /**
   * The group's JSON line: the variants are called in turn for {@code warmupS} seconds (at least 3 calls each), then
   * {@code calls} per variant and round, 0 calibrating it to about 20 ms of the first variant.
   */
  static String run(Group g, int rounds, int calls, double warmupS) {
    List<String> names = new ArrayList<>(g.variants().keySet());
    Module[] models = g.variants().values().toArray(new Module[0]);
    int n = models.length;
    double[][] us = new double[n][rounds];
    try (Grad ignored = Grad.off()) {
      long w0 = System.nanoTime();
      for (int w = 0; w < 3 || (System.nanoTime() - w0) / 1e9 < warmupS; w++) {
        for (Module m : models) call(m, g.input());
      }
      if (calls == 0) {
        long t0 = System.nanoTime();
        for (int i = 0; i < 5; i++) call(models[0], g.input());
        double per = (System.nanoTime() - t0) / 5.0;
        calls = (int) Math.max(1, Math.min(10_000, 20e6 / per));
      }
      for (int r = 0; r < rounds; r++) {
        for (int k = 0; k < n; k++) {
          int v = (r + k) % n;
          long t0 = System.nanoTime();
          for (int i = 0; i < calls; i++) call(models[v], g.input());
          us[v][r] = (System.nanoTime() - t0) / 1e3 / calls;
        }
      }
    }
    StringBuilder json = new StringBuilder(String.format(Locale.ROOT,
        "{\"category\":\"compression\",\"workload\":\"%s\",\"case\":\"%s\",\"unit\":\"us/batch\",\"rounds\":%d,"
            + "\"calls\":%d,\"us\":{", g.workload(), g.name(), rounds, calls));
    StringBuilder speed = new StringBuilder();
    StringBuilder line = new StringBuilder(g.workload() + " " + g.name() + ":");
    double ref = BenchStats.median(us[0]);
    for (int v = 0; v < n; v++) {
      double m = BenchStats.median(us[v]);
      json.append(v > 0 ? "," : "").append(String.format(Locale.ROOT, "\"%s\":%.3f", names.get(v), m));
      if (v > 0) {
        speed.append(speed.length() > 0 ? "," : "").append(String.format(Locale.ROOT, "\"%s\":%.3f", names.get(v),
            ref / m));
      }
      line.append(String.format(Locale.ROOT, " %s %.1f us%s", names.get(v), m,
          v > 0 ? String.format(Locale.ROOT, " (%.2fx)", ref / m) : ""));
    }
    System.err.println(line);
    return json.append("},\"speedup\":{").append(speed).append("}}").toString();
  }

  private static void call(Module m, Tensor x) {
    try (MemoryScope s = MemoryScope.open()) {
      m.call(x);
    }
  }
}
