package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.data.Batch;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.functional.F;
import dev.ember.optim.Adam;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.Profiling;
import dev.ember.train.summary.MemoryBudgetException;
import dev.ember.train.summary.MemoryPlan;
import dev.ember.train.summary.MemoryProfile;
import dev.ember.train.report.HtmlReport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The memory-budget planner: its choices and predictions, its failure, and a run that stays under the budget. */
class MemoryBudgetTest {
  static final int B = 32;
  // a block Linear(64,256)-ReLU-Linear(256,64)-ReLU at batch 32 leaves its four outputs live in the step:
  // 2 x [32,256] + 2 x [32,64] floats = 65,536 + 16,384 bytes; checkpointed it keeps its [32,64] output
  static final long HELD = 2 * B * 256 * 4 + 2 * B * 64 * 4;
  static final long OUT = B * 64 * 4;
  static final long SAVING = HELD - OUT;
  static final long INNER = B * 256 * 4; // its largest inner output
  static final long RECOMPUTE = HELD + OUT + INNER;

  static Sequential block(Generator g) {
    return new Sequential(new Linear(64, 256, true, g), new ReLU(), new Linear(256, 64, true, g), new ReLU());
  }

  static Sequential model() {
    Generator g = new Generator(21);
    return new Sequential(block(g), block(g), block(g), block(g), block(g), block(g), new Linear(64, 10, true, g));
  }

  static List<Batch> batches(int n) {
    Generator g = new Generator(4);
    List<Batch> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      out.add(new Batch(Tensor.randn(g, B, 64), Tensor.randint(g, 0, 10, new int[] {B}).to(DType.I64)));
    }
    return out;
  }

  static History fit(Module model, long budget, Profiling prof, int batches) {
    Trainer.Builder b = Trainer.builder().maxEpochs(1).memoryBudget(budget);
    if (prof != null) b.callbacks(prof);
    return b.build().fit(model, F::crossEntropy, new Adam(model.parameters(), 1e-3), Fixtures.source(batches(batches)),
        null);
  }

  private record Probe(long peak, MemoryProfile profile) {}

  /** The peak of an unplanned step and the profile of the model's first step, from a Profiling callback. */
  static Probe probe() {
    Profiling prof = new Profiling(null, null);
    fit(model(), Long.MAX_VALUE / 4, prof, 1);
    MemoryProfile m = prof.summary().memory();
    return new Probe(m.plan().probePeakBytes(), m);
  }

  @Test
  void segmentsAreMeasuredFromTheStep() {
    MemoryProfile m = probe().profile();
    for (String s : List.of("0", "1", "2", "3", "4", "5")) {
      assertEquals(HELD, m.layer(s).heldBytes(), "block " + s);
      assertEquals(OUT, m.layer(s).outputBytes(), "block " + s);
    }
    List<MemoryPlan.Segment> segs = MemoryPlan.segments(m, MemoryPlan.segmentNames(model()));
    assertEquals(new MemoryPlan.Segment("0", "Sequential", HELD, OUT, INNER), segs.get(0));
    assertEquals(new MemoryPlan.Segment("6", "Linear", B * 10 * 4, B * 10 * 4, 0), segs.get(6));
    assertEquals(B * 10 * 4, m.layer("6").heldBytes());
    assertEquals(List.of("0", "1", "2", "3", "4", "5", "6"), MemoryPlan.segmentNames(model()));
  }

  @Test
  void plannerChoosesTheFewestSegmentsThatFit() {
    long p0 = 10_000_000;
    List<MemoryPlan.Segment> segs = new ArrayList<>();
    for (int i = 0; i < 6; i++) segs.add(new MemoryPlan.Segment(Integer.toString(i), "Sequential", HELD, OUT, INNER));
    segs.add(new MemoryPlan.Segment("6", "Linear", 1280, 1280, 0));
    // n blocks checkpointed: p0 - n SAVING + 2 HELD (one block recomputed with its output's and its largest inner gradient)
    MemoryPlan none = MemoryPlan.plan(p0, p0, segs);
    assertEquals(List.of(), none.checkpointed());
    assertEquals(p0, none.predictedPeakBytes());
    MemoryPlan three = MemoryPlan.plan(p0 - 50_000, p0, segs);
    assertEquals(List.of("0", "1", "2"), three.checkpointed());
    assertEquals(p0 - 3 * SAVING + RECOMPUTE, three.predictedPeakBytes());
    MemoryPlan four = MemoryPlan.plan(p0 - 150_000, p0, segs);
    assertEquals(List.of("0", "1", "2", "3"), four.checkpointed());
    assertEquals(p0 - 4 * SAVING + RECOMPUTE, four.predictedPeakBytes());
    assertEquals(p0 - 6 * SAVING + RECOMPUTE, four.minimumPeakBytes());
    MemoryBudgetException e = assertThrows(MemoryBudgetException.class, () -> MemoryPlan.plan(p0 - 400_000, p0, segs));
    assertEquals(p0 - 6 * SAVING + RECOMPUTE, e.minimumBytes());
    assertEquals(p0 - 400_000, e.budgetBytes());
    assertEquals(p0, e.peakBytes());
    assertThrows(IllegalArgumentException.class, () -> MemoryPlan.plan(0, p0, segs));
  }

  @Test
  void runUnderABudgetStaysUnderItWithTheSameLosses(@TempDir Path dir) throws Exception {
    long p0 = probe().peak();
    Module plain = model();
    History h0 = fit(plain, Long.MAX_VALUE / 4, null, 4);
    Module m = model();
    long budget = p0 - 150_000;
    Profiling prof = new Profiling(null, dir.resolve("profile.json"));
    History h = fit(m, budget, prof, 4);
    MemoryPlan plan = prof.summary().memory().plan();
    assertEquals(List.of("0", "1", "2", "3"), plan.checkpointed());
    assertTrue(plan.predictedPeakBytes() <= budget);
    assertTrue(plan.measuredPeakBytes() <= budget, plan.describe());
    assertTrue(plan.measuredPeakBytes() > 0 && plan.measuredPeakBytes() <= plan.predictedPeakBytes(),
        plan.measuredPeakBytes() + " > budget " + budget + ": " + plan.describe());
    assertEquals((double) plan.measuredPeakBytes(), h.last("memory_peak_bytes"));
    // checkpointing recomputes with the same numbers: the run is bitwise the plain one
    assertArrayEquals(h0.values("loss"), h.values("loss"));
    for (int i = 0; i < plain.parameters().size(); i++) {
      assertArrayEquals(plain.parameters().get(i).toFloatArray(), m.parameters().get(i).toFloatArray());
    }
    for (Module mod : m.modules()) assertFalse(mod.isCheckpointed(), "checkpointing is off again after fit");
    // the plan in profile.json and in the report
    String json = Files.readString(dir.resolve("profile.json"));
    assertTrue(json.contains("\"plan\":{\"budget_bytes\":" + budget), json);
    assertTrue(json.contains("\"checkpointed\":[\"0\",\"1\",\"2\",\"3\"]"), json);
    Files.writeString(dir.resolve("metrics.csv"), "epoch,step,time_s,loss\n1,4,1.5,2.0\n");
    String page = Files.readString(HtmlReport.write(dir));
    assertTrue(page.contains("<tr><td>checkpointed segments</td><td>0, 1, 2, 3</td></tr>"), page);
    assertTrue(page.contains("measured peak"), page);
  }

  @Test
  void anImpossibleBudgetFailsBeforeTraining() {
    Module m = model();
    float[] before = m.parameters().get(0).toFloatArray();
    boolean[] began = {false};
    Callback watch = new Callback() {
      @Override
      public void onTrainBegin(TrainContext ctx) {
        began[0] = true;
      }
    };
    MemoryBudgetException e = assertThrows(MemoryBudgetException.class, () -> Trainer.builder().maxEpochs(1)
        .memoryBudget(1000).callbacks(watch).build()
        .fit(m, F::crossEntropy, new Adam(m.parameters(), 1e-3), Fixtures.source(batches(2)), null));
    assertTrue(e.getMessage().startsWith("memory budget 0.0 MiB cannot be met: a training step peaks at "), e.getMessage());
    assertTrue(e.getMessage().contains("at best with checkpointing of its 7 segments (0, 1, 2, 3, 4, 5, ...)"),
        e.getMessage());
    assertTrue(e.getMessage().contains("hint: raise the budget to at least "), e.getMessage());
    assertTrue(e.minimumBytes() > 1000);
    assertFalse(began[0], "no training before the failure");
    assertArrayEquals(before, m.parameters().get(0).toFloatArray(), "the probe step put the weights back");
    assertThrows(IllegalArgumentException.class, () -> Trainer.builder().memoryBudget(0));
  }

  @Test
  void layersOfASequentialAreCheckpointedInRuns() {
    // twelve single layers that hold only their output: one by one, checkpointing saves nothing; in runs of three
    // with a layer between them it saves 2 units a run and recomputes at most 5 (3 held, the output's and an inner
    // gradient)
    List<MemoryPlan.Segment> segs = new ArrayList<>();
    for (int i = 0; i < 12; i++) segs.add(new MemoryPlan.Segment(Integer.toString(i), "Linear", 1000, 1000, 0));
    assertThrows(MemoryBudgetException.class, () -> MemoryPlan.plan(99_500, 100_000, segs, false));
    MemoryPlan p = MemoryPlan.plan(99_500, 100_000, segs, true);
    assertTrue(p.inRuns());
    assertEquals(List.of("0", "1", "2", "4", "5", "6", "8", "9", "10"), p.checkpointed());
    assertEquals(List.of(List.of(0, 3), List.of(4, 7), List.of(8, 11)),
        p.runs().stream().map(r -> List.of(r[0], r[1])).toList());
    assertEquals(100_000 - 3 * 2000 + 5000, p.predictedPeakBytes());
    assertEquals(99_000, p.minimumPeakBytes());
    assertTrue(p.describe().contains("checkpointing 9 of 12 segments (0..2, 4..6, 8..10): predicted peak"), p.describe());
  }

  /** Linear(64,64)-ReLU six times and a head: thirteen layers that each hold one [32,64] output. */
  static Sequential leaves() {
    Generator g = new Generator(8);
    List<Module> l = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      l.add(new Linear(64, 64, true, g));
      l.add(new ReLU());
    }
    l.add(new Linear(64, 10, true, g));
    return new Sequential(l.toArray(new Module[0]));
  }

  @Test
  void aSequentialOfLayersTrainsUnderABudgetInRuns() {
    Profiling probe = new Profiling(null, null);
    Module first = leaves();
    fit(first, Long.MAX_VALUE / 4, probe, 1);
    long p0 = probe.summary().memory().plan().probePeakBytes();
    long budget = p0 - OUT / 2;
    Module plain = leaves();
    History h0 = fit(plain, Long.MAX_VALUE / 4, null, 3);
    Module m = leaves();
    Profiling prof = new Profiling(null, null);
    History h = fit(m, budget, prof, 3);
    MemoryPlan plan = prof.summary().memory().plan();
    assertTrue(plan.inRuns(), plan.describe());
    assertTrue(plan.runs().size() > 1, plan.describe());
    assertTrue(plan.measuredPeakBytes() <= budget, plan.describe());
    assertArrayEquals(h0.values("loss"), h.values("loss"));
    for (int i = 0; i < plain.parameters().size(); i++) {
      assertArrayEquals(plain.parameters().get(i).toFloatArray(), m.parameters().get(i).toFloatArray());
    }
  }

  @Test
  void sizesParse() {
    assertEquals(300L << 20, MemoryPlan.parseSize("--memory-budget", "300m"));
    assertEquals(300L << 20, MemoryPlan.parseSize("--memory-budget", "300MiB"));
    assertEquals(2L << 30, MemoryPlan.parseSize("--memory-budget", "2G"));
    assertEquals(512L << 10, MemoryPlan.parseSize("--memory-budget", "512k"));
    assertEquals(1536L << 20, MemoryPlan.parseSize("--memory-budget", "1.5g"));
    assertEquals(12345, MemoryPlan.parseSize("--memory-budget", "12345"));
    for (String bad : new String[] {"", "m", "-3m", "3x", "1e9", "0", "0.1"}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
          () -> MemoryPlan.parseSize("--memory-budget", bad), bad);
      assertTrue(e.getMessage().startsWith("--memory-budget: "), e.getMessage());
      assertTrue(e.getMessage().contains("'" + bad + "'"), e.getMessage());
    }
  }
}
