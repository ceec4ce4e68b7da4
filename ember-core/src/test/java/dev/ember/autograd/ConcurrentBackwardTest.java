package dev.ember.autograd;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Threads running backward on shared parameters (PyTorch allows it: gradients accumulate): every contribution lands.
 * Unlocked, two passes could both find no gradient and both set theirs, or add into one array at once, and a pass
 * could add in place into a gradient another pass had adopted and still read: gradients lost 1e-4 to 1e-2 of their
 * value on 2 to 8 threads (found by a concurrency probe).
 */
class ConcurrentBackwardTest {
  @Test
  void everyThreadsContributionIsAccumulated() throws Exception {
    Generator g = new Generator(21);
    Tensor w1 = Tensor.randn(g, DType.F64, 16, 8).requiresGrad(true);
    Tensor w2 = Tensor.randn(g, DType.F64, 4, 16).requiresGrad(true);
    int threads = 4;
    int steps = 50;
    Tensor[][] xs = new Tensor[threads][steps];
    for (int t = 0; t < threads; t++) for (int s = 0; s < steps; s++) xs[t][s] = Tensor.randn(g, DType.F64, 3, 8);
    // each contribution alone, summed in float64 afterwards: the expected totals up to summation order
    double[] e1 = new double[(int) w1.numel()];
    double[] e2 = new double[(int) w2.numel()];
    for (Tensor[] row : xs) {
      for (Tensor x : row) {
        w1.setGrad(null);
        w2.setGrad(null);
        loss(x, w1, w2).backward();
        add(e1, w1.grad());
        add(e2, w2.grad());
      }
    }
    w1.setGrad(null);
    w2.setGrad(null);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> runs = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Tensor[] row = xs[t];
        runs.add(pool.submit(() -> {
          for (Tensor x : row) loss(x, w1, w2).backward();
        }));
      }
      for (Future<?> r : runs) r.get(60, TimeUnit.SECONDS);
    } finally {
      pool.shutdownNow();
    }
    assertClose(e1, w1.grad());
    assertClose(e2, w2.grad());
  }

  private static Tensor loss(Tensor x, Tensor w1, Tensor w2) {
    Tensor h = x.matmul(w1.t()).relu();
    return h.add(h.mul(0.5)).matmul(w2.t()).square().sum(); // h feeds two nodes: its gradient is summed
  }

  private static void add(double[] acc, Tensor t) {
    double[] v = t.toDoubleArray();
    for (int i = 0; i < v.length; i++) acc[i] += v[i];
  }

  private static void assertClose(double[] expected, Tensor got) {
    double[] v = got.toDoubleArray();
    int off = 0;
    for (int i = 0; i < v.length; i++) if (Math.abs(v[i] - expected[i]) > 1e-9 * (1 + Math.abs(expected[i]))) off++;
    assertEquals(0, off, "gradient elements that lost a contribution");
  }
}
