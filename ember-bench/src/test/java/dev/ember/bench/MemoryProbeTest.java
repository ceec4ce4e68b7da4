package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The memory category's Ember side: its workload list, its output records and /proc/self/status parsing. */
class MemoryProbeTest {
  private static CommandRun run(String... args) {
    return CommandRun.of(MemoryProbe::run, args);
  }

  @Test
  void measuresOneTrainingCasePerTrainingWorkload() {
    Set<String> training = TrainingCases.cases().stream().map(c -> c.workload() + "/" + c.name()).collect(Collectors.toSet());
    Set<String> workloads = TrainingCases.cases().stream().map(BenchCase::workload).collect(Collectors.toSet());
    assertEquals(workloads, MemoryProbe.CASES.keySet());
    for (Map.Entry<String, String> e : MemoryProbe.CASES.entrySet()) {
      assertTrue(training.contains(e.getKey() + "/" + e.getValue()), e.toString());
    }
  }

  @Test
  void reportsRssAndHeapInMegabytesAsJsonLines() {
    CommandRun r = run("mlp_mnist", "--warmup-steps", "1", "--steps", "2", "--threads", "1");
    assertEquals(0, r.status(), r.err());
    List<String> lines = r.out().lines().toList();
    assertEquals(5, lines.size(), r.out());
    assertTrue(lines.get(0).startsWith("{\"workload\":\"_env\",\"side\":\"ember\""), lines.get(0));
    // the records are in Compare's format: parse them as compare.py pools them
    Map<String, Double> mb = new java.util.HashMap<>();
    for (String line : lines.subList(1, 5)) {
      Map<?, ?> m = (Map<?, ?>) Report.parseJson(line);
      assertEquals("mlp_mnist", m.get("workload"));
      assertEquals("MB", m.get("unit"));
      assertEquals(Boolean.TRUE, m.get("lower_is_better"));
      assertEquals(List.of(m.get("median")), m.get("values"));
      mb.put((String) m.get("case"), (Double) m.get("median"));
    }
    assertEquals(Set.of("peak RSS, train b=128", "start RSS", "peak heap, train b=128", "live heap, train b=128"), mb.keySet());
    assertTrue(mb.get("peak RSS, train b=128") >= mb.get("start RSS") && mb.get("start RSS") > 1, mb.toString());
    // the live set holds at least the model's 101,770 float parameters and their gradients (0.78 MB)
    assertTrue(mb.get("live heap, train b=128") > 0.78, mb.toString());
    assertTrue(mb.get("peak heap, train b=128") >= mb.get("live heap, train b=128"), mb.toString());
  }

  @Test
  void rejectsUnknownWorkloadsAndBadCounts() {
    CommandRun r = run("resnet50");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("MemoryProbe: unknown workload 'resnet50' (expected one of mlp_mnist, seed_small, "
        + "seed_medium, seed_large, lenet, convnet, transformer)"), r.err());
    r = run("lenet", "--steps", "0");
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("MemoryProbe: --steps expects an integer >= 1, got '0'"), r.err());
    r = run();
    assertEquals(2, r.status());
    assertTrue(r.err().startsWith("MemoryProbe: missing WORKLOAD"), r.err());
  }

  @Test
  void parsesProcStatus() {
    String status = "Name:\tjava\nVmPeak:\t 9000000 kB\nVmHWM:\t  123456 kB\nVmRSS:\t   65432 kB\n";
    assertEquals(123456, MemoryProbe.parseStatusKb(status, "VmHWM"));
    assertEquals(65432, MemoryProbe.parseStatusKb(status, "VmRSS"));
    var e = assertThrows(IllegalStateException.class, () -> MemoryProbe.parseStatusKb(status, "VmSwap"));
    assertEquals("memory: /proc/self/status has no VmSwap line", e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> MemoryProbe.parseStatusKb("VmHWM:\t12 MB\n", "VmHWM"));
    assertEquals("memory: unexpected /proc/self/status line 'VmHWM:\t12 MB' (want 'VmHWM: N kB')", e.getMessage());
    assertTrue(MemoryProbe.statusMb("VmHWM") > 1);
  }
}
