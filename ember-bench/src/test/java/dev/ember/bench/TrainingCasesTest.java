package dev.ember.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The training category's join keys with pytorch_bench.py and the parameter counts behind compare.py's MFU. */
class TrainingCasesTest {
  @Test
  void mlpParameterCountsMatchThePeer() {
    // the counts pytorch_bench.py prints as "params" for these models (torch.nn.Linear with bias)
    assertEquals(101_770, TrainingCases.mlpParams("mlp_mnist"));
    assertEquals(1_055_242, TrainingCases.mlpParams("seed_small"));
    assertEquals(10_512_394, TrainingCases.mlpParams("seed_medium"));
    assertEquals(95_506_954, TrainingCases.mlpParams("seed_large"));
    assertEquals(-1, TrainingCases.mlpParams("lenet"));
  }

  @Test
  void casesAreThePeersWorkloadsAndNames() {
    List<String> names = TrainingCases.cases().stream().map(c -> c.workload() + "/" + c.name()).toList();
    assertEquals(3 + 3 * 2 * 3 + 3, names.size(), names.toString());
    assertTrue(names.contains("mlp_mnist/train b=32") && names.contains("mlp_mnist/infer b=1 latency"), names.toString());
    assertTrue(names.contains("seed_large/train b=128 adamw"), names.toString());
    assertTrue(names.contains("transformer/train b=16 T=128 adamw"), names.toString());
  }

  @Test
  void trainingRecordsOfMlpsCarryTheirParameterCount() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status = Compare.run(new String[] {"training", "--only", "mlp_mnist/train b=32", "--repeats", "1", "--warmup", "0",
        "--target", "0.01", "--max-wait", "0"}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8));
    assertEquals(0, status);
    List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
    assertEquals(2, lines.size(), lines.toString());
    Map<?, ?> rec = (Map<?, ?>) Report.parseJson(lines.get(1));
    assertEquals("train b=32", rec.get("case"));
    assertEquals("samples/s", rec.get("unit"));
    assertEquals(101_770L, rec.get("params"));
    assertTrue((Double) rec.get("median") > 0, rec.toString());
  }

  /** pytorch_bench.py's bench_seed: warm-up 1 s (its default) and the default target; seed_large 0 s and 0.3 s. */
  @Test
  void seedCasesFollowThePeersSchedule() {
    for (BenchCase c : TrainingCases.cases()) {
      if (!c.workload().startsWith("seed_")) {
        assertNull(c.schedule(), c.workload() + "/" + c.name());
        continue;
      }
      BenchCase.PeerSchedule s = c.schedule();
      assertNotNull(s, c.workload() + "/" + c.name());
      boolean large = c.workload().equals("seed_large");
      assertEquals(large ? 0.0 : 1.0, s.warmupS(), c.name());
      assertEquals(large ? 0.3 : Double.NaN, s.targetS(), c.name());
    }
  }

  /**
   * A case on its peer's schedule is measured on a fresh instance: the JIT warm-up runs on another one, so the
   * timed steps are the run's steps from its first, as the peer's are.
   */
  @Test
  void scheduledCasesWarmTheJitUpOnAThrowawayInstance() {
    AtomicInteger made = new AtomicInteger();
    List<AtomicInteger> calls = new java.util.ArrayList<>();
    BenchCase.PeerSchedule s = new BenchCase.PeerSchedule(0.0, 0.005, () -> {
      made.incrementAndGet();
      AtomicInteger n = new AtomicInteger();
      calls.add(n);
      return n::incrementAndGet;
    });
    BenchCase c = BenchCase.scheduled("w", "c", "samples/s", 1, () -> { }, s);
    Measure m = new Measure(new Measure.Options(99, 99, 2, 1e9, 1, 0));
    Measure.Result r = Compare.scheduled(m, c, 0.05, 99);
    assertEquals(2, made.get(), "a throwaway instance and the measured one");
    assertTrue(calls.get(0).get() >= 2, "JIT warm-up calls " + calls.get(0));
    // the measured instance: 2 warm-up calls (0 s), calibration, then 2 repeats of callsPerRepeat each
    assertTrue(calls.get(1).get() >= 2 + 1 + 2 * r.callsPerRepeat(), "measured calls " + calls.get(1));
    assertEquals(2, r.values().length);
  }

  @Test
  void seedRecordsSayTheyFollowThePeersSchedule() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int status = Compare.run(new String[] {"training", "--only", "seed_small/train b=32 sgd", "--repeats", "1", "--warmup",
        "0", "--target", "0.01", "--max-wait", "0"}, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(OutputStream.nullOutputStream(), true, StandardCharsets.UTF_8));
    assertEquals(0, status);
    List<String> lines = out.toString(StandardCharsets.UTF_8).lines().toList();
    Map<?, ?> rec = (Map<?, ?>) Report.parseJson(lines.get(1));
    assertEquals("peer", rec.get("schedule"), rec.toString());
    assertEquals(1.0, ((Number) rec.get("warmup_s")).doubleValue(), rec.toString());
    assertEquals(0.01, ((Number) rec.get("target_s")).doubleValue(), rec.toString());
    assertEquals(0.0, ((Number) rec.get("jit_warmup_s")).doubleValue(), rec.toString());
    assertTrue((Double) rec.get("median") > 0, rec.toString());
  }
}
