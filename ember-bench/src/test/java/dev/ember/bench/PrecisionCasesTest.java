package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The precision category: its cases, that each runs (at small sizes), and the PyTorch peer's names. No timing. */
class PrecisionCasesTest {
  private static final List<String> NAMES = List.of(
      "convert/f32_to_bf16 n=16M", "convert/bf16_to_f32 n=16M", "convert/f32_to_f16 n=16M", "convert/f16_to_f32 n=16M",
      "linear_fwd/b=32 f32", "linear_fwd/b=32 bf16", "linear_fwd/b=128 f32", "linear_fwd/b=128 bf16",
      "linear_fwd_bwd/b=32 f32", "linear_fwd_bwd/b=32 bf16_autocast", "linear_fwd_bwd/b=128 f32",
      "linear_fwd_bwd/b=128 bf16_autocast", "seed_large_step/train b=32 sgd f32",
      "seed_large_step/train b=32 sgd bf16_autocast", "seed_large_step/train b=128 sgd f32",
      "seed_large_step/train b=128 sgd bf16_autocast");

  @Test
  void listsItsCases() {
    CommandRun r = CommandRun.of(Compare::run, "precision", "--list");
    assertEquals(0, r.status(), r.err());
    assertEquals(NAMES, r.out().lines().toList());
  }

  @Test
  void everyCaseRunsAndAutocastGradientsAreF32AndClose() {
    List<BenchCase> cases = PrecisionCases.cases(4096, 40);
    assertEquals(NAMES, cases.stream().map(c -> c.workload() + "/" + c.name()).toList());
    Tensor[] f32 = null;
    for (BenchCase c : cases) {
      c.call().run();
      c.call().run(); // a second call: gradients dropped, not accumulated
      if (!c.workload().equals("linear_fwd_bwd")) continue;
      Tensor[] g = PrecisionCases.lastGrads;
      for (Tensor t : g) assertEquals(DType.F32, t.dtype(), c.name() + ": gradients of F32 leaves are F32");
      if (c.name().endsWith(" f32")) {
        f32 = new Tensor[] {g[0].clone(), g[1].clone()};
        continue;
      }
      for (int i = 0; i < 2; i++) {
        float[] e = f32[i].toFloatArray();
        float[] a = g[i].toFloatArray();
        double scale = 0;
        for (float v : e) scale = Math.max(scale, Math.abs(v));
        for (int j = 0; j < e.length; j++) {
          assertEquals(e[j], a[j], 0.05 * scale, c.name() + " gradient " + i + " [" + j + "] vs the F32 case");
        }
      }
    }
  }

  @Test
  void thePeerScriptBuildsTheSameNames() throws IOException {
    String py = Files.readString(Path.of("..").toAbsolutePath().normalize().resolve("bench/peers/pytorch_precision.py"));
    for (String name : NAMES) {
      String workload = name.substring(0, name.indexOf('/'));
      String kase = name.substring(name.indexOf('/') + 1).replaceFirst("b=\\d+ ", "b=%d ").replace(" n=16M", "");
      assertTrue(py.contains("\"" + workload + "\""), "pytorch_precision.py lacks workload " + workload);
      assertTrue(py.contains("\"" + kase), "pytorch_precision.py lacks case " + kase + " (" + name + ")");
    }
    assertTrue(py.contains("name + \" n=16M\""), "pytorch_precision.py: conversion case names end in n=16M");
  }
}
