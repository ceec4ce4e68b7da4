package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The side-by-side runner's argument handling and case lists (the join keys with the PyTorch peer). */
class CompareTest {
  private static CommandRun run(String... args) {
    return CommandRun.of(Compare::run, args);
  }

  @Test
  void nnCategoryListsTheCasesThePeerMeasures() {
    CommandRun r = run("nn", "--list");
    assertEquals(0, r.status(), r.err());
    List<String> cases = r.out().lines().toList();
    assertTrue(cases.contains("attention/fwd B=1 H=8 T=4096 D=64"), cases.toString());
    assertTrue(cases.contains("attention/fwd+bwd B=1 H=8 T=1024 D=64"), cases.toString());
    assertTrue(cases.contains("attention_mem/fwd B=1 H=8 T=4096 D=64"), cases.toString());
    assertTrue(cases.contains("lstm/fwd+bwd in=128 hidden=256 batch=32 steps=32"), cases.toString());
    assertTrue(cases.contains("conv2d/fwd+bwd lenet1 N=32 1x28x28 -> 6 k5"), cases.toString());
    assertTrue(cases.contains("conv2d/fwd vgg N=8 64x56x56 -> 64 k3 p1"), cases.toString());
    assertTrue(cases.contains("conv2d/fwd+bwd depthwise N=8 64x56x56 -> 64 k3 p1 g64"), cases.toString());
    for (String c : List.of("gru/fwd in=128 hidden=256 batch=32 steps=32",
        "gru/fwd+bwd in=128 hidden=256 batch=32 steps=32",
        "conv1d/fwd+bwd N=16 128x512 -> 128 k3 p1", "conv_transpose2d/fwd+bwd N=16 64x16x16 -> 32 k4 s2 p1",
        "layer_norm/fwd+bwd [4096x1024]", "group_norm/fwd+bwd N=8 64x56x56 groups=32",
        "batch_norm/fwd+bwd train N=64 32x32x32", "max_pool2d/fwd+bwd N=64 32x32x32 k2",
        "embedding/fwd+bwd vocab=32000 dim=512 tokens=4096", "cross_entropy/fwd+bwd [512x32000]")) {
      assertTrue(cases.contains(c), c + " in " + cases);
    }
  }

  /** Each row NnCases.layers() adds runs its forward and backward, twice (the second reuses the first's ones). */
  @Test
  void nnLayerRowsRunForwardAndBackward() {
    List<BenchCase> rows = NnCases.layers();
    assertEquals(10, rows.size());
    for (BenchCase row : rows) {
      row.call().run();
      row.call().run(); // the second call reuses the gradient of ones made by the first
    }
  }

  @Test
  void optimCategoryListsTheCasesThePeerMeasures() {
    CommandRun r = run("optim", "--list");
    assertEquals(0, r.status(), r.err());
    List<String> cases = r.out().lines().toList();
    for (String w : List.of("sgd", "adam", "adamw", "rmsprop", "adagrad", "lion")) {
      assertTrue(cases.contains(w + "/step n=1M f32"), cases.toString());
      assertTrue(cases.contains(w + "/step n=16M f32"), cases.toString());
    }
    assertTrue(cases.contains("cosine_annealing/schedule step T_max=1000"), cases.toString());
    assertEquals(13, cases.size(), cases.toString());
  }

  @Test
  void unknownCategoryIsRejectedWithTheChoices() {
    CommandRun r = run("convs");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("Compare: unknown category 'convs' (expected gemm, ops, nn, optim, training, losses, schedulers, metrics, callbacks, precision, compression or compile)"), r.err());
  }

  @Test
  void probeCaseReportsMegabytesWithoutTiming() {
    CommandRun r = run("nn", "--only", "attention_mem/fwd B=1 H=8 T=1024", "--repeats", "1");
    assertEquals(0, r.status(), r.err());
    String line = r.out().lines().filter(l -> l.contains("\"attention_mem\"")).findFirst().orElseThrow();
    assertTrue(line.contains("\"unit\":\"MB\"") && line.contains("\"lower_is_better\":true"), line);
    double mb = Double.parseDouble(line.replaceAll(".*\"median\":([0-9.Ee+-]+).*", "$1"));
    // at least the [1, 8, 1024, 64] output (2.1 MB) is allocated
    assertTrue(mb > 2.0, line);
  }
}
