package dev.ember.train;

import dev.ember.data.Batch;
import dev.ember.data.BatchIterator;
import dev.ember.data.BatchSource;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;

/** Small models and data for the trainer tests: 3 Gaussian blobs in 4-d, a 4-16-3 MLP. */
final class Fixtures {
  private Fixtures() {}

  /**
   * Inputs [n, 4] and I64 labels [n]: class c is centered at 3*e_c with unit noise, so the best
   * possible accuracy is about 95% (at 2*e_c it was about 86%, too close to what tests ask of a fit).
   */
  static Tensor[] blobs(long seed, int n) {
    Generator g = new Generator(seed);
    Tensor labels = Tensor.randint(g, 0, 3, n);
    long[] y = labels.toLongArray();
    float[] x = Tensor.randn(g, n, 4).toFloatArray();
    for (int i = 0; i < n; i++) x[i * 4 + (int) y[i]] += 3f;
    return new Tensor[] {Tensor.of(x, n, 4), labels};
  }

  static Module mlp(long seed) {
    Generator g = new Generator(seed);
    return new Sequential(new Linear(4, 16, true, g), new ReLU(), new Linear(16, 3, true, g));
  }

  /** These batches, in this order, every epoch. */
  static BatchSource source(List<Batch> batches) {
    return new BatchSource() {
      @Override
      public int numBatches() {
        return batches.size();
      }

      @Override
      public BatchIterator iterate(int epoch, int skip) {
        return new BatchIterator() {
          int next = skip;

          @Override
          public boolean hasNext() {
            return next < batches.size();
          }

          @Override
          public Batch next() {
            return batches.get(next++);
          }

          @Override
          public void close() {}
        };
      }
    };
  }

  /** Batches of a fixed data set; epoch e's order is a permutation seeded by (seed, e). */
  static BatchSource source(Tensor[] data, int batchSize, long seed) {
    int n = data[0].size(0);
    int numBatches = (n + batchSize - 1) / batchSize;
    return new BatchSource() {
      @Override
      public int numBatches() {
        return numBatches;
      }

      @Override
      public BatchIterator iterate(int epoch, int skip) {
        Tensor perm = Tensor.randperm(new Generator(seed * 1000003L + epoch), n);
        return new BatchIterator() {
          int next = skip;

          @Override
          public boolean hasNext() {
            return next < numBatches;
          }

          @Override
          public Batch next() {
            Tensor idx = perm.slice(0, next * batchSize, Math.min(n, (next + 1) * batchSize), 1);
            next++;
            return new Batch(data[0].indexSelect(0, idx), data[1].indexSelect(0, idx));
          }

          @Override
          public void close() {}
        };
      }
    };
  }

  /** Bitwise equality of two state dicts. */
  static void assertSameState(Map<String, Tensor> a, Map<String, Tensor> b) {
    org.junit.jupiter.api.Assertions.assertEquals(a.keySet(), b.keySet());
    for (String k : a.keySet()) {
      org.junit.jupiter.api.Assertions.assertArrayEquals(a.get(k).toFloatArray(), b.get(k).toFloatArray(), 0f, k);
    }
  }
}
