package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The step-phase timer: its records, the deferred weight gradients it finds, and its option errors. */
class StepPhasesTest {
  private static String[] run(StepPhases.Options o, ByteArrayOutputStream log) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    StepPhases.print(o, StepPhases.run(o), new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(log, true, StandardCharsets.UTF_8));
    return out.toString(StandardCharsets.UTF_8).strip().split("\n");
  }

  @Test
  void timesEachPhaseForEachOptimizerAndFindsTheDeferredWeightGradients() {
    // 1024 x 1024 weights are the smallest whose gradients backward defers: the three hidden layers' (not the last's).
    StepPhases.Options o = StepPhases.parse(new String[] {"--hidden", "1024", "--batch", "4", "--optim", "sgd,adamw",
        "--steps", "2", "--rounds", "3", "--split-step", "--floor"});
    ByteArrayOutputStream log = new ByteArrayOutputStream();
    String[] lines = run(o, log);
    assertEquals(2, lines.length);
    for (int i = 0; i < 2; i++) {
      Map<?, ?> rec = (Map<?, ?>) Report.parseJson(lines[i]);
      assertEquals("step-phases", rec.get("category"));
      assertEquals("seed_h1024", rec.get("workload"));
      assertEquals("train b=4 " + List.of("sgd", "adamw").get(i), rec.get("case"));
      assertEquals(3L, rec.get("deferred"), lines[i]);
      assertEquals(3L, rec.get("rounds"));
      double step = (Double) rec.get("step");
      double total = (Double) rec.get("total");
      for (String p : List.of("forward", "backward", "step", "step_gemm", "step_floor")) {
        assertTrue((Double) rec.get(p) > 0, p + " in " + lines[i]);
      }
      assertTrue(total >= step && total >= (Double) rec.get("forward"), lines[i]);
    }
    String table = log.toString(StandardCharsets.UTF_8);
    assertTrue(table.contains("seed MLP 1024-1024-1024-1024-10, batch 4") && table.contains("adamw"), table);
  }

  @Test
  void leavesTheStepsGemmsUntimedWithoutSplitStep() {
    StepPhases.Options o = StepPhases.parse(new String[] {"--hidden", "16", "--batch", "2", "--steps", "1", "--rounds", "1"});
    assertEquals(new StepPhases.Options(16, 2, List.of("sgd"), 1, 1, false, false), o);
    Map<?, ?> rec = (Map<?, ?>) Report.parseJson(run(o, new ByteArrayOutputStream())[0]);
    assertNull(rec.get("step_gemm"));
    assertNull(rec.get("step_floor"));
    assertNull(rec.get("deferred"));
    assertTrue((Double) rec.get("total") > 0);
  }

  @Test
  void theFloorRewritesEachOfTheOptimizersArraysOnce() {
    assertEquals(2, StepPhases.streams("sgd"));
    assertEquals(3, StepPhases.streams("adam"));
    assertEquals(3, StepPhases.streams("adamw"));
    // two chunks of 65,536 floats and a tail shorter than a vector
    int n = (1 << 17) + 7;
    for (int k = 2; k <= 3; k++) {
      float[][] a = new float[k][n];
      for (int j = 0; j < k; j++) {
        for (int i = 0; i < n; i++) a[j][i] = (i % 101) + 1000 * j;
      }
      StepPhases.rewrite(a);
      for (int j = 0; j < k; j++) {
        for (int i : new int[] {0, 5, 65_535, 65_536, n - 8, n - 1}) {
          double next = j + 1 < k ? ((i % 101) + 1000 * (j + 1)) * 0.25 : 0.25;
          assertEquals(((i % 101) + 1000 * j) * 0.5 + next, a[j][i], 0, "array " + j + " of " + k + ", element " + i);
        }
      }
    }
  }

  @Test
  void rejectsBadOptionsNamingThem() {
    assertEquals("StepPhases: unknown optimizer 'lamb' (one of [sgd, adam, adamw])",
        assertThrows(IllegalArgumentException.class, () -> StepPhases.parse(new String[] {"--optim", "sgd,lamb"})).getMessage());
    assertEquals("StepPhases: --batch must be a positive integer, got '0'",
        assertThrows(IllegalArgumentException.class, () -> StepPhases.parse(new String[] {"--batch", "0"})).getMessage());
    assertEquals("StepPhases: --hidden needs a value",
        assertThrows(IllegalArgumentException.class, () -> StepPhases.parse(new String[] {"--hidden"})).getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class, () -> StepPhases.parse(new String[] {"--fast"}))
        .getMessage().startsWith("StepPhases: unknown option '--fast'"));
  }
}
