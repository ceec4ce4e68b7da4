package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class DatasetTest {
  /** 10 samples: input i is [i, 10 + i, 20 + i] (F32 [3]), target i is i % 4 (I64). */
  static TensorDataset tiny(int n) {
    float[] x = new float[n * 3];
    long[] y = new long[n];
    for (int i = 0; i < n; i++) {
      x[3 * i] = i;
      x[3 * i + 1] = 10 + i;
      x[3 * i + 2] = 20 + i;
      y[i] = i % 4;
    }
    return new TensorDataset(Tensor.of(x, n, 3), Tensor.of(y, n));
  }

  @Test
  void tensorDatasetRowsAreSamples() {
    TensorDataset ds = tiny(10);
    assertEquals(10, ds.size());
    Sample s = ds.get(7);
    assertArrayEquals(new float[] {7, 17, 27}, s.input().toFloatArray());
    assertEquals(0, s.target().dim());
    assertEquals(3, s.target().getLong());
  }

  @Test
  void getBatchEqualsStackedSamplesInOrder() {
    TensorDataset ds = tiny(10);
    Batch b = ds.getBatch(new int[] {9, 0, 4, 4});
    assertArrayEquals(new int[] {4, 3}, b.input().shape());
    assertArrayEquals(new float[] {9, 19, 29, 0, 10, 20, 4, 14, 24, 4, 14, 24}, b.input().toFloatArray());
    assertArrayEquals(new long[] {1, 0, 0, 0}, b.target().toLongArray());
    assertEquals(DType.I64, b.target().dtype());
  }

  @Test
  void tensorDatasetRejectsBadArguments() {
    var e = assertThrows(IllegalArgumentException.class,
        () -> new TensorDataset(Tensor.zeros(5, 3), Tensor.zeros(DType.I64, 4)));
    assertEquals("TensorDataset: inputs and targets must share their first dimension (5 vs 4): inputs=[5, 3], targets=[4]",
        e.getMessage());
    var oob = assertThrows(IndexOutOfBoundsException.class, () -> tiny(3).getBatch(new int[] {0, 3}));
    assertEquals("TensorDataset.getBatch: index 3 out of range for a data set of size 3 (valid: 0..2)", oob.getMessage());
    assertThrows(IndexOutOfBoundsException.class, () -> tiny(3).get(-1));
    assertThrows(IllegalArgumentException.class, () -> tiny(3).getBatch(new int[0]));
  }

  @Test
  void subsetAndConcatAndMapAddressTheRightItems() {
    TensorDataset ds = tiny(10);
    Subset<Sample> sub = new Subset<>(ds, new int[] {5, 2, 2});
    assertEquals(3, sub.size());
    assertEquals(2, (int) sub.get(2).input().getDouble(0));
    var e = assertThrows(IndexOutOfBoundsException.class, () -> new Subset<>(ds, new int[] {1, 10}));
    assertEquals("Subset: indices[1] = 10 out of range for a data set of size 10 (valid: 0..9)", e.getMessage());

    Dataset<Integer> first = ds.map(s -> (int) s.input().getDouble(0));
    Dataset<Integer> empty = new Subset<>(first, new int[0]);
    ConcatDataset<Integer> cat = new ConcatDataset<>(first, empty, new Subset<>(first, new int[] {3, 1}), empty);
    assertEquals(12, cat.size());
    List<Integer> all = new ArrayList<>();
    for (int i = 0; i < cat.size(); i++) all.add(cat.get(i));
    assertEquals(List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 1), all);
    assertThrows(IndexOutOfBoundsException.class, () -> cat.get(12));

    List<Integer> streamed = new ArrayList<>();
    for (int v : IterableDataset.of(cat).map(v -> v * 2)) streamed.add(v);
    assertEquals(12, streamed.size());
    assertEquals(2, (int) streamed.get(11));
  }

  @Test
  void randomSplitIsADisjointCoverFixedBySeed() {
    TensorDataset ds = tiny(10);
    List<Subset<Sample>> parts = Datasets.randomSplit(ds, 42, 6, 3, 1);
    assertEquals(List.of(6, 3, 1), parts.stream().map(Subset::size).toList());
    Set<Integer> seen = new HashSet<>();
    for (Subset<Sample> p : parts) for (int i : p.indices()) assertTrue(seen.add(i), "index " + i + " twice");
    assertEquals(10, seen.size());
    assertArrayEquals(parts.get(0).indices(), Datasets.randomSplit(ds, 42, 6, 3, 1).get(0).indices());
    assertNotEquals(Arrays.toString(parts.get(0).indices()),
        Arrays.toString(Datasets.randomSplit(ds, 43, 6, 3, 1).get(0).indices()));

    // fractions: floor(f * n) each, remainder one by one from the first part (PyTorch's rule)
    assertEquals(List.of(4, 3, 3), Datasets.randomSplit(ds, 1, 0.33, 0.33, 0.34).stream().map(Subset::size).toList());
    var e = assertThrows(IllegalArgumentException.class, () -> Datasets.randomSplit(ds, 1, 5, 4));
    assertEquals("randomSplit: lengths add up to 9 but the data set has 10 items: lengths=[5, 4]", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Datasets.randomSplit(ds, 1, 0.5, 0.4));
  }

  @Test
  void permutationMatchesTensorRandperm() {
    int[] p = Datasets.permutation(new Generator(7), 1000);
    long[] q = Tensor.randperm(new Generator(7), 1000).toLongArray();
    for (int i = 0; i < p.length; i++) assertEquals(q[i], p[i]);
  }

  @Test
  void transformInputsDependsOnlyOnSeedAndIndex() {
    TensorDataset ds = tiny(10);
    Transform noise = (x, gen) -> x.add(Tensor.rand(gen, 3));
    Dataset<Sample> t = Datasets.transformInputs(ds, noise, 5);
    assertArrayEquals(t.get(4).input().toFloatArray(), t.get(4).input().toFloatArray());
    assertNotEquals(Arrays.toString(t.get(4).input().sub(ds.get(4).input()).toFloatArray()),
        Arrays.toString(t.get(5).input().sub(ds.get(5).input()).toFloatArray()));
    assertEquals(ds.get(4).target().getLong(), t.get(4).target().getLong());
  }
}
