package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
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
