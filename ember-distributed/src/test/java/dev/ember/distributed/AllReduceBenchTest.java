package dev.ember.distributed;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class AllReduceBenchTest {
  @Test
  void measuresEverySizeOnEveryRank() throws Exception {
    assertArrayEquals(new long[] {1024, 2048, 4096}, AllReduceBench.sizes(1024, 4096));
    List<Object> results = ProcessGroupTest.inThreads(2, Duration.ofSeconds(30), g -> {
      List<AllReduceBench.Row> rows = AllReduceBench.measure(g, new long[] {4, 4096});
      assertEquals(2, rows.size());
      assertEquals(4096, rows.get(1).bytes());
      assertEquals(1000, rows.get(0).iterations());
      for (AllReduceBench.Row r : rows) {
        assertTrue(r.seconds() > 0 && r.busBandwidth() > 0, r.toString());
        assertEquals(r.algBandwidth(), r.busBandwidth(), 1e-9 * r.algBandwidth()); // 2 (W-1) / W = 1 for W = 2
      }
      return null;
    });
    assertNull(results.get(0), String.valueOf(results.get(0)));
    assertNull(results.get(1), String.valueOf(results.get(1)));
  }
}
