package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The distributed bench category's Ember side on a small model: rows, and DDP's allreduce/wait accounting. */
class DdpBenchTest {
  @Test
  void measuresStepsAloneAndUnderDdpWithTheAllreduceTimeAccountedFor() throws Exception {
    List<DdpBench.Repeat> alone = DdpBench.measure(null, 32, 16, 1, 2, 2);
    assertEquals(2, alone.size());
    for (DdpBench.Repeat r : alone) {
      assertTrue(r.samplesPerSecond() > 0, r.toString());
      assertEquals(0, r.allreduceMs());
    }
    List<Object> ranks = ProcessGroupTest.inThreads(2, Duration.ofSeconds(60), g -> DdpBench.measure(g, 32, 16, 1, 3, 2));
    for (int rank = 0; rank < 2; rank++) {
      if (ranks.get(rank) instanceof Throwable t) throw new AssertionError("rank " + rank, t);
      @SuppressWarnings("unchecked") List<DdpBench.Repeat> rows = (List<DdpBench.Repeat>) ranks.get(rank);
      assertEquals(2, rows.size());
      for (DdpBench.Repeat r : rows) {
        assertTrue(r.samplesPerSecond() > 0 && r.allreduceMs() > 0 && r.waitMs() >= 0, r.toString());
        assertTrue(r.hidden() >= 0 && r.hidden() <= 1, r.toString());
      }
    }
    assertEquals(1, DdpBench.measure(null, 32, 15, 0, 1, 1).size()); // any batch alone
  }

  @Test
  void commStatsCountEachReductionAndReset() throws Exception {
    List<Object> ranks = ProcessGroupTest.inThreads(2, Duration.ofSeconds(60), g -> {
      DistributedDataParallel ddp = new DistributedDataParallel(DistributedDataParallelTest.mlp(0), g, 4096);
      assertTrue(ddp.bucketCount() > 1);
      for (int s = 0; s < 3; s++) {
        var b = DistributedDataParallelTest.rows(DistributedDataParallelTest.batch(s), g.rank() * 64, 64);
        dev.ember.nn.functional.F.crossEntropy(ddp.forward(b[0]), b[1]).backward();
      }
      DistributedDataParallel.CommStats s = ddp.commStats();
      ddp.resetCommStats();
      return new Object[] {s, ddp.commStats()};
    });
    for (int rank = 0; rank < 2; rank++) {
      if (ranks.get(rank) instanceof Throwable t) throw new AssertionError("rank " + rank, t);
      Object[] r = (Object[]) ranks.get(rank);
      DistributedDataParallel.CommStats s = (DistributedDataParallel.CommStats) r[0];
      assertEquals(3, s.reductions());
      assertTrue(s.allreduceNanos() > 0 && s.waitNanos() >= 0, s.toString());
      assertTrue(s.hiddenFraction() >= 0 && s.hiddenFraction() <= 1, s.toString());
      assertEquals(new DistributedDataParallel.CommStats(0, 0, 0), r[1]);
      assertEquals(0, ((DistributedDataParallel.CommStats) r[1]).hiddenFraction());
    }
  }

  @Test
  void aGlobalBatchThatDoesNotSplitIsRefused() throws Exception {
    List<Object> ranks = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> DdpBench.measure(g, 8, 15, 0, 1, 1));
    for (Object o : ranks) {
      assertTrue(o instanceof IllegalArgumentException e && e.getMessage().contains("not a multiple of 2"), String.valueOf(o));
    }
  }

  @Test
  void jsonLinesAndSizeLabels() {
    assertEquals("1 KiB", AllReduceBench.label(1024));
    assertEquals("256 MiB", AllReduceBench.label(256L << 20));
    assertEquals("1536 B", AllReduceBench.label(1536));
    assertEquals("{\"workload\": \"w\", \"case\": \"c\", \"unit\": \"%\", \"values\": [1.50000, 2.00000],"
        + " \"lower_is_better\": false}", DdpBench.jsonLine("w", "c", "%", false, java.util.stream.DoubleStream.of(1.5, 2)));
  }
}
