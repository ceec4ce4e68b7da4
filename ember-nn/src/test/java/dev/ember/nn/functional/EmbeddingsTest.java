package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Embedding against PyTorch (norm/norm_fixtures.txt: padding_idx gradients, max_norm renorm), int32
 * indices, and the exact out-of-range message; its float64 gradchecks are in NnOpTable.
 */
class EmbeddingsTest {
  private static final Map<String, Tensor> ALL = Fixtures.read(EmbeddingsTest.class, "norm/norm_fixtures.txt");

  @Test
  void paddingRowGetsNoGradientAndRepeatsAddUp() {
    var f = Fixtures.under(ALL, "emb");
    Tensor w = f.get("weight").clone().requiresGrad(true);
    Tensor idx = f.get("indices").to(DType.I64);
    Tensor out = Embeddings.embedding(idx, w, 0, null, 2);
    assertClose(f.get("out"), out, 0, 0, "embedding out");
    out.backward(f.get("up"));
    assertClose(f.get("grad.weight"), w.grad(), 1e-14, 1e-14, "embedding grad");
    assertArrayEquals(new double[4], w.grad().select(0, 0).toDoubleArray(), "padding row");
  }

  @Test
  void maxNormRenormalizesReferencedRowsInPlace() {
    var f = Fixtures.under(ALL, "embmax");
    Tensor w = f.get("weight").clone();
    Tensor out = Embeddings.embedding(f.get("indices").to(DType.I32), w, null, 1.5, 2.0);
    assertClose(f.get("out"), out, 1e-12, 1e-12, "embedding max_norm out");
    assertClose(f.get("weight1"), w, 1e-12, 1e-12, "embedding max_norm weight after");
  }

  @Test
  void aRecycledGradientBufferStartsFromZerosEveryStepOnOneAndTwoThreads() {
    // a table past the pool's parallel zero-fill size: each step's dense gradient is the last step's array again
    int vocab = 1024;
    int dim = 300;
    int tokens = 64;
    Tensor w = Tensor.randn(new Generator(3), vocab, dim).requiresGrad(true);
    var backend = Device.CPU.backend();
    int before = backend.threads();
    try {
      for (int threads : new int[] {1, 2}) {
        backend.setThreads(threads);
        float[] previous = null;
        for (int step = 0; step < 3; step++) {
          long[] ids = new long[tokens];
          float[] expected = new float[vocab * dim];
          for (int i = 0; i < tokens; i++) {
            ids[i] = (i * 37L + step * 11L) % 200; // repeats: rows that add up
            for (int j = 0; j < dim; j++) expected[(int) ids[i] * dim + j] += step + 1;
          }
          try (MemoryScope s = MemoryScope.open()) {
            Tensor old = w.grad();
            float[] array = old == null ? null : old.storage().floats();
            w.setGrad(null);
            MemoryScope.recycle(old);
            Embeddings.embedding(Tensor.of(ids, tokens), w).backward(Tensor.full(step + 1.0, tokens, dim));
            if (previous != null) assertSame(previous, w.grad().storage().floats(), "the pooled gradient array");
            assertArrayEquals(expected, w.grad().toFloatArray(), threads + " threads, step " + step);
            previous = array == null ? w.grad().storage().floats() : array;
          }
        }
        w.setGrad(null);
        MemoryScope.trimPool();
      }
    } finally {
      backend.setThreads(before);
      MemoryScope.trimPool();
    }
  }

  @Test
  void outOfRangeIndexNamesValuePositionAndCount() {
    Tensor w = Tensor.zeros(5, 4);
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> Embeddings.embedding(Tensor.of(new long[] {0, 1, 2, 3, 4, 7}, 2, 3), w));
    assertEquals("embedding: index out of range (7 at position [1, 2], num_embeddings 5): input=[2, 3], weight=[5, 4];"
        + " hint: indices must be in [0, num_embeddings)", e.getMessage());
    e = assertThrows(TensorArgumentException.class, () -> Embeddings.embedding(Tensor.of(new int[] {-1}), w));
    assertEquals("embedding: index out of range (-1 at position [0], num_embeddings 5): input=[1], weight=[5, 4];"
        + " hint: indices must be in [0, num_embeddings)", e.getMessage());
    e = assertThrows(TensorArgumentException.class, () -> Embeddings.embedding(Tensor.of(new float[] {1}), w));
    assertEquals("embedding: indices must be int64 or int32, got float32: input=[1], weight=[5, 4]", e.getMessage());
  }
}
