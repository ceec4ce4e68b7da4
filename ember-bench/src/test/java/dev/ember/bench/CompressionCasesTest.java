package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.nn.Conv2d;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The compression category: its cases, that each runs, the shrunk LeNet's shapes, and the PyTorch peer's names. */
class CompressionCasesTest {
  private static final List<String> NAMES = List.of(
      "mlp_infer/784-256-128-10 b=1 f32", "mlp_infer/784-256-128-10 b=1 int8_dynamic",
      "mlp_infer/784-256-128-10 b=1 int8_static", "mlp_infer/784-256-128-10 b=128 f32",
      "mlp_infer/784-256-128-10 b=128 int8_dynamic", "mlp_infer/784-256-128-10 b=128 int8_static",
      "lenet_infer/b=1 unpruned", "lenet_infer/b=1 pruned50_shrunk", "lenet_infer/b=1 int8_static",
      "lenet_infer/b=128 unpruned", "lenet_infer/b=128 pruned50_shrunk", "lenet_infer/b=128 int8_static", "convnet_infer/b=64 unfused", "convnet_infer/b=64 bn_folded",
      "convnet_infer/b=64 bn_relu_fused");

  @Test
  void listsItsCasesAndEachRuns() {
    CommandRun r = CommandRun.of(Compare::run, "compression", "--list");
    assertEquals(0, r.status(), r.err());
    assertEquals(NAMES, r.out().lines().toList());
    for (BenchCase c : CompressionCases.cases()) {
      assertEquals("us/batch", c.unit(), c.name());
      assertTrue(c.lowerIsBetter(), c.name());
      c.call().run();
      c.call().run();
    }
  }

  /** The shapes the peer builds directly: conv 1-3-8 channels, Linear 200-60-42-10. */
  @Test
  void prunedLenetIsHalfAsWideAndKeepsTheKeptChannelsOutputs() {
    Module full = CompressionCases.lenet();
    Module small = CompressionCases.pruneAndShrink(CompressionCases.lenet(), 0.5);
    var m = small.namedModules();
    assertArrayEquals(new int[] {3, 1, 5, 5}, ((Conv2d) m.get("features.0")).weight().shape());
    assertArrayEquals(new int[] {8, 3, 5, 5}, ((Conv2d) m.get("features.3")).weight().shape());
    assertArrayEquals(new int[] {60, 200}, ((Linear) m.get("classifier.1")).weight().shape());
    assertArrayEquals(new int[] {42, 60}, ((Linear) m.get("classifier.3")).weight().shape());
    assertArrayEquals(new int[] {10, 42}, ((Linear) m.get("classifier.5")).weight().shape());
    try (Grad ignored = Grad.off()) {
      Tensor x = Tensor.randn(new Generator(1), 4, 1, 28, 28);
      // the first conv's kept channels compute exactly what the same channels of the unpruned model do
      Tensor a = ((Sequential) full.namedModules().get("features")).get(0).call(x);
      Tensor b = ((Sequential) m.get("features")).get(0).call(x);
      assertEquals(3, b.size(1));
      assertEquals(10, small.call(x).size(1));
      float[] fa = a.toFloatArray();
      float[] fb = b.toFloatArray();
      int plane = 28 * 28;
      int matched = 0;
      for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 6; k++) {
          boolean same = true;
          for (int i = 0; i < plane && same; i++) same = fa[k * plane + i] == fb[c * plane + i];
          if (same) matched++;
        }
      }
      assertEquals(3, matched, "each kept channel equals one channel of the unpruned conv");
    }
  }

  /** The int8 models classify random inputs as their float models do, most of the time (not a timing). */
  @Test
  void int8ModelsAgreeWithTheFloatOnes() {
    try (Grad ignored = Grad.off()) {
      Tensor x = Tensor.randn(new Generator(5), 64, 784);
      Module mlp = CompressionCases.mlp();
      assertTrue(agreement(mlp.call(x), CompressionCases.staticInt8(CompressionCases.mlp(), 784).call(x)) >= 0.9);
      Tensor img = Tensor.randn(new Generator(5), 64, 1, 28, 28);
      Module lenet = CompressionCases.lenet();
      assertTrue(agreement(lenet.call(img), CompressionCases.staticInt8(CompressionCases.lenet(), 1, 28, 28).call(img))
          >= 0.8);
    }
  }

  private static double agreement(Tensor a, Tensor b) {
    long[] pa = a.argmax(1, false).toLongArray();
    long[] pb = b.argmax(1, false).toLongArray();
    int same = 0;
    for (int i = 0; i < pa.length; i++) if (pa[i] == pb[i]) same++;
    return (double) same / pa.length;
  }

  @Test
  void speedupsAlternateTheVariantsOfEachGroup() {
    List<CompressionSpeedups.Group> groups = CompressionSpeedups.groups();
    assertEquals(List.of("784-256-128-10 b=1", "784-256-128-10 b=128", "b=1", "b=128", "b=64"),
        groups.stream().map(CompressionSpeedups.Group::name).toList());
    String json = CompressionSpeedups.run(groups.get(0), 1, 1, 0);
    assertTrue(json.startsWith("{\"category\":\"compression\",\"workload\":\"mlp_infer\""), json);
    assertTrue(json.matches(".*\"us\":\\{\"f32\":[0-9.]+,\"int8_dynamic\":[0-9.]+,\"int8_static\":[0-9.]+}.*"), json);
    assertTrue(json.matches(".*\"speedup\":\\{\"int8_dynamic\":[0-9.]+,\"int8_static\":[0-9.]+}}"), json);
  }

  @Test
  void thePeerScriptBuildsTheSameNames() throws IOException {
    String py = Files.readString(Path.of("..").toAbsolutePath().normalize().resolve("bench/peers/pytorch_compression.py"));
    for (String name : NAMES) {
      String workload = name.substring(0, name.indexOf('/'));
      String kase = name.substring(name.indexOf('/') + 1).replaceFirst("b=(1|128) ", "b=%d ").replace("b=64 ", "");
      assertTrue(py.contains("\"" + workload + "\""), "pytorch_compression.py lacks workload " + workload);
      assertTrue(py.contains(kase + "\""), "pytorch_compression.py lacks case " + kase + " (" + name + ")");
    }
    assertTrue(py.contains("lenet(3, 8, 60, 42)"), "the peer's shrunk LeNet has the widths of Ember's");
  }
}
