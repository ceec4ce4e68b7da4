package dev.ember.train;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.io.Json;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import dev.ember.train.callbacks.Profiling;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProfilingTest {
  @TempDir Path dir;

  /** Phase times of step {@code i}: data 1 ms, forward 4 ms, loss 1 ms, backward 8 ms, optimizer 2 ms, callbacks (i+1) ms. */
  static long[] nanos(int i) {
    return new long[] {1_000_000, 4_000_000, 1_000_000, 8_000_000, 2_000_000, (i + 1) * 1_000_000L};
  }

  static volatile Object sink;

  @Test
  void sumsEveryStepsPhaseTimesAndWritesTableAndJson() throws IOException, Json.SyntaxError {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    Profiling prof = new Profiling(new PrintStream(bytes, true, StandardCharsets.UTF_8), dir);
    CallbackDriver d = new CallbackDriver(2, 2, prof);
    d.trainBegin();
    assertTrue(Double.isNaN(prof.firstStepUptimeSeconds()), "no step yet");
    long before = System.currentTimeMillis();
    double uptimeBefore = java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1e3;
    int step = 0;
    MemoryScope.trimPool();
    for (int e = 1; e <= 2; e++) {
      d.epochBegin(e);
      for (int b = 0; b < 2; b++) {
        sink = new byte[(step == 2 ? 3 : 1) << 20]; // 1 MiB allocated on the training thread in every step, 3 in the third
        try (MemoryScope scope = MemoryScope.open()) {
          Tensor.zeros(256, 1024); // 1 MiB of floats, back to the pool at close and reused the step after
        }
        d.batch(b, 0.5, nanos(step++));
        if (step == 1) {
          double first = prof.firstStepUptimeSeconds();
          assertTrue(first >= uptimeBefore && first <= java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1e3,
              first + " s: the first step's end, not before the test's first batch");
        }
      }
      d.epochEnd(Map.of(), Map.of("val_loss", 0.5));
    }
    d.trainEnd();

    Profiling.Summary s = prof.summary();
    assertEquals(4, s.steps());
    // callbacks: 1+2+3+4 = 10 ms; others 4 steps each
    double[] totals = {0.004, 0.016, 0.004, 0.032, 0.008, 0.010};
    double all = 0.074;
    assertEquals(all, s.stepSeconds(), 1e-12);
    for (int p = 0; p < 6; p++) {
      Profiling.PhaseTime t = s.phases().get(p);
      assertEquals(Phase.values()[p], t.phase());
      assertEquals(totals[p], t.totalSeconds(), 1e-12, t.toString());
      assertEquals(totals[p] * 1e3 / 4, t.meanMillisPerStep(), 1e-9, t.toString());
      assertEquals(100 * totals[p] / all, t.percentOfStep(), 1e-9, t.toString());
    }
    assertNotNull(s.allocatedPerStep(), "HotSpot counts allocation per thread");
    assertTrue(s.allocatedPerStep().min() >= 1 << 20, s.allocatedPerStep().toString());
    assertTrue(s.allocatedPerStep().max() >= 3 << 20, s.allocatedPerStep().toString());
    assertEquals(3, s.maxAllocationStep(), "the third step allocated 3 MiB");
    assertEquals(1 << 20, s.pooledAfterStep().min(), "the pool holds the step's 1 MiB buffer after each step");
    assertEquals(1 << 20, s.pooledAfterStep().max());
    assertTrue(s.heapUsedAfterStep().max() > 0);

    String table = bytes.toString(StandardCharsets.UTF_8);
    assertTrue(table.contains("profile: 4 steps, 0.074 s in steps"), table);
    Profiling.Summary one = new Profiling.Summary(1, 0.5, List.of(), null, -1, new Profiling.Bytes(0, 0, 0),
        new Profiling.Bytes(0, 0, 0), 0);
    assertTrue(one.table().startsWith("profile: 1 step, 0.500 s in steps\n"), one.table());
    assertTrue(table.contains("backward        0.032        8.000      43.2%"), table);
    assertTrue(table.contains("total           0.074       18.500     100.0%"), table);
    assertTrue(table.matches("(?s).*\nmemory per step: \\d+\\.\\d\\d MiB newly allocated on the JVM heap by the training thread"
        + " \\(mean; min \\d+\\.\\d\\d MiB, max 3\\.\\d\\d MiB at step 3\\); buffers reused from Ember's pool are not counted\n.*"), table);
    assertTrue(table.contains("\nEmber's buffer pool after a step: 1.00 MiB held for reuse (mean; max 1.00 MiB)\n"), table);
    assertTrue(table.contains("\nJVM heap in use after a step: mean "), table);

    Path json = dir.resolve("profile.json");
    assertEquals(json, prof.jsonFile());
    @SuppressWarnings("unchecked")
    Map<String, Object> m = (Map<String, Object>) Json.parsePlain(Files.readString(json), Json.NonFinite.REJECT);
    assertEquals(4L, m.get("steps"));
    @SuppressWarnings("unchecked")
    List<Map<String, Object>> phases = (List<Map<String, Object>>) m.get("phases");
    assertEquals(List.of("data", "forward", "loss", "backward", "optimizer", "callbacks"),
        phases.stream().map(p -> p.get("phase")).toList());
    assertEquals(0.032, ((Number) phases.get(3).get("total_s")).doubleValue(), 1e-12);
    assertTrue(m.get("alloc_bytes_per_step") instanceof Map<?, ?>);
    assertEquals(3L, m.get("alloc_max_step"));
    assertEquals(Map.of("mean", 1048576L, "min", 1048576L, "max", 1048576L), m.get("pool_bytes_after_step")); // JSON writes 1048576.0 as 1048576
    // the first step's end, kept through the later ones: what bench/first-minute.sh reads
    @SuppressWarnings("unchecked")
    Map<String, Object> first = (Map<String, Object>) m.get("first_step");
    assertEquals(prof.firstStepUptimeSeconds(), ((Number) first.get("jvm_uptime_s")).doubleValue(), 1e-9);
    double unix = ((Number) first.get("unix_time_s")).doubleValue();
    assertTrue(unix >= before / 1e3 && unix <= System.currentTimeMillis() / 1e3, unix + " s since 1970");
  }

  @Test
  void sizesReadInTheLargestUnitThatKeepsANumberAtLeastOne() {
    assertEquals("812 B", Profiling.Summary.size(812));
    assertEquals("1.50 KiB", Profiling.Summary.size(1536));
    assertEquals("7.41 GiB", Profiling.Summary.size(7.41 * (1L << 30)));
    assertEquals("-", Profiling.Summary.size(Double.NaN));
  }

  @Test
  void aResumedRunContinuesTheTotals() {
    Profiling first = new Profiling(null, null);
    CallbackDriver a = new CallbackDriver(1, 4, first);
    a.trainBegin();
    a.epochBegin(1);
    a.batch(0, 0.5, nanos(0));
    a.batch(1, 0.5, nanos(1));
    Map<String, Object> state = first.stateDict(); // taken after onBatchEnd of step 2, as the Trainer does
    Profiling second = new Profiling(null, null);
    second.loadStateDict(state);
    CallbackDriver b = new CallbackDriver(1, 4, second);
    b.trainBegin();
    b.batch(2, 0.5, nanos(2));
    b.batch(3, 0.5, nanos(3));
    b.trainEnd();
    assertEquals(4, second.summary().steps());
    assertTrue(first.summary().table().startsWith("profile: 2 steps, "), first.summary().table());
    Profiling one = new Profiling(null, null);
    CallbackDriver c = new CallbackDriver(1, 4, one);
    c.trainBegin();
    c.epochBegin(1);
    c.batch(0, 0.5, nanos(0));
    c.trainEnd();
    assertTrue(one.summary().table().startsWith("profile: 1 step, 0.017 s in steps"), one.summary().table());
    assertEquals(0.074, second.summary().stepSeconds(), 1e-12);
    assertEquals(0.010, second.summary().phases().get(Phase.CALLBACKS.ordinal()).totalSeconds(), 1e-12);
  }
}
