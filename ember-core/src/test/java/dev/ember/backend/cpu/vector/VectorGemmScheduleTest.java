package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

class VectorGemmScheduleTest {
  @Test
  void eachThreadsShareHoldsItsMultipliesThenItsPacks() {
    // tasks 0-3 multiply row chunks, 4-7 pack parts of the next B block
    assertArrayEquals(new int[] {0, 1, 4, 5, 2, 3, 6, 7}, VectorGemm.interleave(4, 4, 2));
    assertArrayEquals(new int[] {0, 1, 4, 2, 3, 5}, VectorGemm.interleave(4, 2, 2));
    assertArrayEquals(new int[] {0, 1, 2, 3, 4, 5}, VectorGemm.interleave(4, 2, 1));
  }

  @Test
  void theOrderIsAPermutationOfTheTasks() {
    for (int tm = 1; tm <= 9; tm++) {
      for (int packs = 0; packs <= tm; packs++) {
        for (int threads = 1; threads <= 5; threads++) {
          int[] order = VectorGemm.interleave(tm, packs, threads).clone();
          Arrays.sort(order);
          for (int t = 0; t < order.length; t++) {
            assertEquals(t, order[t], "tm " + tm + ", packs " + packs + ", threads " + threads);
          }
        }
      }
    }
  }
}
