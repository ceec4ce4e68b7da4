package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * One generator drawn from by several threads at once (Generator.global() is every random op's default): each call
 * takes consecutive numbers of the one sequence, so the threads' draws together are the sequence's, partitioned.
 * Unlocked, threads raced on the state's position (an ArrayIndexOutOfBoundsException at 624 from dropout masks
 * drawn on 4 threads, found by a concurrency probe) or drew one number twice.
 */
class GeneratorThreadsTest {
  @Test
  void threadsSharingAGeneratorPartitionItsSequence() throws Exception {
    int threads = 4;
    int calls = 20_000;
    Generator shared = new Generator(5);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<long[]>> runs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        runs.add(pool.submit(() -> {
          long[] got = new long[calls];
          for (int i = 0; i < calls; i++) got[i] = shared.nextLong(); // two 32-bit outputs, taken together
          return got;
        }));
      }
      long[] all = new long[threads * calls];
      for (int t = 0; t < threads; t++) System.arraycopy(runs.get(t).get(60, TimeUnit.SECONDS), 0, all, t * calls, calls);
      Generator alone = new Generator(5);
      long[] expected = new long[threads * calls];
      for (int i = 0; i < expected.length; i++) expected[i] = alone.nextLong();
      Arrays.sort(all);
      Arrays.sort(expected);
      assertEquals(Arrays.toString(Arrays.copyOf(expected, 4)), Arrays.toString(Arrays.copyOf(all, 4)));
      assertEquals(true, Arrays.equals(expected, all), "every number of the sequence drawn once");

      // bernoulli masks (dropout's draws) on four threads from one generator: no exception
      List<Future<Tensor>> masks = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        masks.add(pool.submit(() -> {
          Tensor last = null;
          for (int i = 0; i < 200; i++) last = Tensor.bernoulli(shared, Tensor.full(0.5, DType.F64, 997));
          return last;
        }));
      }
      for (Future<Tensor> m : masks) assertEquals(997, m.get(60, TimeUnit.SECONDS).numel());
    } finally {
      pool.shutdownNow();
    }
  }
}
