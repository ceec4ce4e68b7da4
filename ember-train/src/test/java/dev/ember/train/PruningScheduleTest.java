package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.prune.Prune;
import dev.ember.tensor.Generator;
import dev.ember.train.callbacks.PruningSchedule;
import dev.ember.train.summary.ModelSummary;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class PruningScheduleTest {
  /** Overall fraction of zero entries over the Linear weights. */
  static double sparsity(Module model) {
    long zeros = 0;
    long total = 0;
    for (Prune.Target t : PruningSchedule.targets(model)) {
      for (double v : t.module().param("weight").toDoubleArray()) {
        total++;
        if (v == 0) zeros++;
      }
    }
    return (double) zeros / total;
  }

  @Test
  void followsZhuAndGuptasCubicSchedule() {
    // s_t = 0.8 + (0 - 0.8)(1 - (t - 2) / (4 * 3))^3 at t = 2, 5, 8, 11, 14
    PruningSchedule schedule = new PruningSchedule(0, 0.8, 2, 4, 3);
    double[] expected = {0, 0.8 - 0.8 * 0.421875, 0.8 - 0.8 * 0.125, 0.8 - 0.8 * 0.015625, 0.8};
    for (int k = 0; k < 5; k++) {
      assertEquals(expected[k], schedule.targetSparsity(2 + 3L * k), 1e-12, "step " + (2 + 3 * k));
      assertEquals(expected[k], schedule.targetSparsity(2 + 3L * k + 2), 1e-12, "held until the next pruning step");
      assertTrue(schedule.isPruningStep(2 + 3L * k));
      assertFalse(schedule.isPruningStep(3 + 3L * k));
    }
    assertEquals(0, schedule.targetSparsity(1));
    assertEquals(0.8, schedule.targetSparsity(1000), 1e-12);
    assertFalse(schedule.isPruningStep(17));

    // the model's sparsity over 20 steps: 12 weights, pruned to round(s_t * 12) entries at each pruning step
    Module model = CallbackDriver.tinyModel();
    CallbackDriver driver = new CallbackDriver(model, 1, 20, schedule);
    driver.trainBegin();
    driver.epochBegin(0);
    List<Double> trajectory = new ArrayList<>();
    for (int i = 0; i < 20; i++) {
      driver.batch(i, 1.0, null);
      trajectory.add(sparsity(model));
    }
    List<Double> want = new ArrayList<>();
    int[] pruned = {0, 0, 0, 0, 0, 6, 6, 6, 8, 8, 8, 9, 9, 9, 10, 10, 10, 10, 10, 10};
    for (int p : pruned) want.add(p / 12.0);
    assertEquals(want, trajectory);
    assertTrue(Prune.isPruned(model));
    assertEquals(0.8, driver.ctx.logs().get("sparsity"), 1e-12);
  }

  @Test
  void startsAtTheInitialSparsityAndPrunesOncePerStep() {
    Module model = CallbackDriver.tinyModel();
    PruningSchedule schedule = new PruningSchedule(0.5, 0.75, 0, 1, 2);
    CallbackDriver driver = new CallbackDriver(model, 1, 4, schedule);
    for (Callback c : driver.callbacks) c.onBatchBegin(driver.ctx, driver.batch);
    assertEquals(0.5, sparsity(model), 1e-12);  // t0 = 0 prunes before the first step
    // a second batch of the same step (gradient accumulation) does not prune again
    for (Callback c : driver.callbacks) c.onBatchBegin(driver.ctx, driver.batch);
    assertEquals(0.5, sparsity(model), 1e-12);
    driver.ctx.globalStep = 2;
    for (Callback c : driver.callbacks) c.onBatchBegin(driver.ctx, driver.batch);
    assertEquals(0.75, sparsity(model), 1e-12);
  }

  @Test
  void badSchedulesAreRejected() {
    var e = assertThrows(IllegalArgumentException.class, () -> new PruningSchedule(0.5, 0.2, 0, 10, 1));
    assertEquals("PruningSchedule: sparsities must satisfy 0 <= initial < 1 and initial <= final <= 1, got initial=0.5, "
        + "final=0.2", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> new PruningSchedule(0, 0.5, 0, 0, 1));
    assertEquals("PruningSchedule: need beginStep >= 0, pruningSteps >= 1 and frequency >= 1, got beginStep=0, "
        + "pruningSteps=0, frequency=1", e.getMessage());
    e = assertThrows(IllegalArgumentException.class, () -> PruningSchedule.pruneTo(new ReLU(), 0.5));
    assertEquals("PruningSchedule: ReLU has no Linear or Conv layer to prune", e.getMessage());
  }

  @Test
  void modelSummaryShowsSparsityPerLayer() {
    Sequential model = new Sequential(new Linear(4, 3, true, new Generator(1)), new ReLU(),
        new Linear(3, 2, true, new Generator(2)));
    String dense = ModelSummary.of(model, 2, 4).toString();
    assertFalse(dense.contains("Sparsity"), dense);
    Prune.l1Unstructured(model.child("0"), "weight", 0.5);
    ModelSummary s = ModelSummary.of(model, 2, 4);
    assertEquals(0.5, s.sparsity("0"), 1e-12);
    assertEquals(0, s.sparsity("2"));
    assertTrue(Double.isNaN(s.sparsity("1")));
    assertEquals(List.of("0", "2"), List.copyOf(s.sparsities().keySet()));
    assertTrue(s.isPruned());
    String table = s.toString();
    assertTrue(table.contains("Sparsity"), table);
    assertTrue(table.lines().anyMatch(l -> l.startsWith("  0 (Linear)") && l.endsWith("50.0%")), table);
    assertTrue(table.lines().anyMatch(l -> l.startsWith("  2 (Linear)") && l.endsWith("0.0%")), table);
    // the pruned weight counts as the layer's parameters (weight_orig), as torch's summary of a pruned model
    assertEquals(4 * 3 + 3 + 3 * 2 + 2, s.totalParams());
    // a forward through the summary used the masked weight
    assertEquals(0.5, Prune.sparsity(model.child("0"), "weight"), 1e-12);
  }
}
