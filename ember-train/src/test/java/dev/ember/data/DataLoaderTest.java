package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class DataLoaderTest {
  /** 103 images [1, 6, 6] with distinct values, labels i % 10. */
  static TensorDataset images(int n) {
    Tensor x = Tensor.rand(new Generator(99), n, 1, 6, 6);
    long[] y = new long[n];
    for (int i = 0; i < n; i++) y[i] = i % 10;
    return new TensorDataset(x, Tensor.of(y, n));
  }

  static List<Batch> all(BatchIterator it) {
    List<Batch> out = new ArrayList<>();
    try (it) {
      while (it.hasNext()) out.add(it.next());
    }
    return out;
  }

  static void assertSameBatches(List<Batch> a, List<Batch> b) {
    assertEquals(a.size(), b.size(), "number of batches");
    for (int i = 0; i < a.size(); i++) {
      assertArrayEquals(a.get(i).input().shape(), b.get(i).input().shape(), "batch " + i);
      assertArrayEquals(a.get(i).input().toFloatArray(), b.get(i).input().toFloatArray(), "inputs of batch " + i);
      assertArrayEquals(a.get(i).target().toLongArray(), b.get(i).target().toLongArray(), "targets of batch " + i);
    }
  }

  /** Labels are i % 10 and unique inputs identify samples: recover each batch's indices via the first pixel. */
  static int indexOf(TensorDataset ds, float firstPixel) {
    for (int i = 0; i < ds.size(); i++) if (ds.inputs().getDouble(i, 0, 0, 0) == firstPixel) return i;
    throw new AssertionError("no sample starts with " + firstPixel);
  }

  @Test
  void aReorderedLoaderBatchesTheGivenOrderWithOrWithoutWorkersAndChecksIt() {
    TensorDataset ds = images(103);
    DataLoader dl = new DataLoader(ds, BatchConfig.shuffled(10, 5));
    // the odd positions of each epoch's order, as rank 1 of 2 takes them
    java.util.function.IntFunction<int[]> odd = e -> {
      int[] o = dl.order(e);
      int[] mine = new int[52];
      for (int k = 0; k < 52; k++) mine[k] = o[(1 + 2 * k) % o.length];
      return mine;
    };
    BatchSource shard = dl.reordered(52, odd);
    assertEquals(6, shard.numBatches());
    List<Batch> e1 = all(shard.iterate(1, 0));
    assertEquals(2, e1.get(5).size());
    int[] expected = odd.apply(1);
    for (int b = 0; b < 6; b++) {
      for (int i = 0; i < e1.get(b).size(); i++) {
        assertEquals(expected[b * 10 + i], indexOf(ds, (float) e1.get(b).input().getDouble(i, 0, 0, 0)));
      }
    }
    try (DataLoader workers = new DataLoader(ds, BatchConfig.shuffled(10, 5), 2)) {
      assertSameBatches(e1.subList(2, 6), all(workers.reordered(52, odd).iterate(1, 2)));
    }
    IllegalStateException e = assertThrows(IllegalStateException.class, () -> dl.reordered(51, odd).iterate(0, 0));
    assertEquals("DataLoader.reordered: epoch 0's order has 52 indices, expected 51", e.getMessage());
    e = assertThrows(IllegalStateException.class, () -> dl.reordered(1, x -> new int[] {103}).iterate(0, 0));
    assertEquals("DataLoader.reordered: epoch 0's order holds index 103, outside the data set's 0..102", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> dl.reordered(0, odd));
  }

  @Test
  void epochsArePermutationsThatChangeWithTheEpoch() {
    TensorDataset ds = images(103);
    DataLoader dl = new DataLoader(ds, BatchConfig.shuffled(10, 5));
    assertEquals(11, dl.numBatches());
    List<Batch> e0 = all(dl.iterate(0, 0));
    assertEquals(11, e0.size());
    assertEquals(3, e0.get(10).size());
    boolean[] seen = new boolean[103];
    int k = 0;
    int[] order = dl.order(0);
    for (Batch b : e0) {
      for (int r = 0; r < b.size(); r++, k++) {
        int i = indexOf(ds, (float) b.input().getDouble(r, 0, 0, 0));
        assertEquals(order[k], i, "position " + k);
        assertEquals(i % 10, b.target().getLong(r));
        assertFalse(seen[i], "sample " + i + " twice");
        seen[i] = true;
      }
    }
    assertNotEquals(Arrays.toString(dl.order(0)), Arrays.toString(dl.order(1)));
    assertArrayEquals(dl.order(3), new DataLoader(ds, BatchConfig.shuffled(7, 5)).order(3), "order depends on seed and epoch only");
    assertNotEquals(Arrays.toString(dl.order(0)), Arrays.toString(new DataLoader(ds, BatchConfig.shuffled(10, 6)).order(0)));
    // epoch e is the e-th permutation of new Generator(seed), as PyTorch's DataLoader with a seeded generator,
    // whatever order the epochs are asked for in (a resumed run starts at a later epoch)
    Generator g = new Generator(5);
    int[][] successive = {g.permutation(103), g.permutation(103), g.permutation(103), g.permutation(103)};
    for (int e : new int[] {2, 2, 3, 0, 1, 3, 1}) assertArrayEquals(successive[e], dl.order(e), "epoch " + e);

    DataLoader seq = new DataLoader(ds, new BatchConfig(10, false, true, 0));
    assertEquals(10, seq.numBatches());
    List<Batch> s = all(seq.iterate(4, 0));
    assertEquals(10, s.size());
    assertEquals(0, indexOf(ds, (float) s.get(0).input().getDouble(0, 0, 0, 0)));
    assertEquals(99, indexOf(ds, (float) s.get(9).input().getDouble(9, 0, 0, 0)));
  }

  @Test
  void sameBatchesForAnyNumberOfWorkersWithAndWithoutTransform() {
    TensorDataset ds = images(103);
    Dataset<Sample> slow = ds.map(s -> s); // no fast path: samples are stacked one by one
    Transform aug = new Compose(new RandomCrop(6, 2), new RandomHorizontalFlip(0.5));
    for (Transform t : new Transform[] {null, aug}) {
      for (Dataset<Sample> d : List.of(ds, slow)) {
        BatchConfig cfg = new BatchConfig(8, true, false, 17);
        List<Batch> ref = all(new DataLoader(d, cfg, 0, t).iterate(2, 0));
        for (int workers : new int[] {1, 3}) {
          try (DataLoader dl = new DataLoader(d, cfg, workers, t)) {
            assertSameBatches(ref, all(dl.iterate(2, 0)));
          }
        }
        assertSameBatches(ref, all(new DataLoader(ds, cfg, 0, t).iterate(2, 0)));
      }
    }
  }

  @Test
  void transformSeesAGeneratorSeededBySeedEpochAndIndex() {
    TensorDataset ds = images(20);
    Transform noise = (x, gen) -> x.add(Tensor.rand(gen, x.shape()));
    DataLoader dl = new DataLoader(ds, BatchConfig.shuffled(4, 8), 2, noise);
    List<Batch> e1 = all(dl.iterate(1, 0));
    int[] order = dl.order(1);
    for (int k = 0; k < 20; k++) {
      int i = order[k];
      Generator g = new Generator(Seeds.mix(Seeds.mix(8 ^ Seeds.AUGMENT, 1), i));
      Tensor want = ds.get(i).input().add(Tensor.rand(g, 1, 6, 6));
      assertArrayEquals(want.toFloatArray(), e1.get(k / 4).input().select(0, k % 4).toFloatArray(), "sample " + i);
    }
    List<Batch> e2 = all(dl.iterate(2, 0));
    assertNotEquals(Arrays.toString(e1.get(0).input().toFloatArray()), Arrays.toString(e2.get(0).input().toFloatArray()));
    dl.close();
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 2})
  void skipResumesTheEpochWithoutLoadingSkippedBatches(int workers) {
    AtomicInteger loads = new AtomicInteger();
    TensorDataset ds = images(50);
    Dataset<Sample> counted = ds.map(s -> {
      loads.incrementAndGet();
      return s;
    });
    BatchConfig cfg = BatchConfig.shuffled(6, 3);
    List<Batch> full = all(new DataLoader(counted, cfg).iterate(1, 0));
    loads.set(0);
    try (DataLoader dl = new DataLoader(counted, cfg, workers)) {
      List<Batch> tail = all(dl.iterate(1, 5));
      assertSameBatches(full.subList(5, full.size()), tail);
      assertEquals(50 - 5 * 6, loads.get(), "only the samples of the batches after the skipped ones are read");
      assertFalse(dl.iterate(1, dl.numBatches()).hasNext());
    }
  }

  @Test
  void iteratorGivesSuccessiveEpochs() {
    DataLoader dl = new DataLoader(images(30), BatchConfig.shuffled(7, 1));
    List<Batch> first = new ArrayList<>();
    for (Batch b : dl) first.add(b);
    List<Batch> second = new ArrayList<>();
    for (Batch b : dl) second.add(b);
    assertSameBatches(all(dl.iterate(0, 0)), first);
    assertSameBatches(all(dl.iterate(1, 0)), second);
  }

  @Test
  void tensorDatasetsAndTheirSubsetsUseTheBatchPath() {
    AtomicInteger gets = new AtomicInteger(), batches = new AtomicInteger();
    TensorDataset base = images(40);
    BatchDataset spy = new BatchDataset() {
      @Override
      public int size() {
        return base.size();
      }

      @Override
      public Sample get(int index) {
        gets.incrementAndGet();
        return base.get(index);
      }

      @Override
      public Batch getBatch(int[] indices) {
        batches.incrementAndGet();
        return base.getBatch(indices);
      }
    };
    Subset<Sample> sub = new Subset<>(new Subset<>(spy, new int[] {39, 38, 37, 36, 35, 1, 2, 3}), new int[] {7, 0, 5});
    List<Batch> got = all(new DataLoader(sub, BatchConfig.sequential(2)).iterate(0, 0));
    assertEquals(0, gets.get());
    assertEquals(2, batches.get());
    assertEquals(39, indexOf(base, (float) got.get(0).input().getDouble(1, 0, 0, 0)));
    assertEquals(3, indexOf(base, (float) got.get(0).input().getDouble(0, 0, 0, 0)));
    assertEquals(1, indexOf(base, (float) got.get(1).input().getDouble(0, 0, 0, 0)));
  }

  @Test
  void stackingScalarsAndVectorsGivesBatchShapes() {
    Dataset<Sample> ds = new Dataset<>() {
      @Override
      public int size() {
        return 5;
      }

      @Override
      public Sample get(int i) {
        return new Sample(Tensor.of(new double[] {i, -i}), Tensor.scalar(i * 0.5));
      }
    };
    List<Batch> got = all(new DataLoader(ds, BatchConfig.sequential(3)).iterate(0, 0));
    assertArrayEquals(new int[] {3, 2}, got.get(0).input().shape());
    assertArrayEquals(new double[] {3, -3, 4, -4}, got.get(1).input().toDoubleArray());
    assertArrayEquals(new float[] {1.5f, 2f}, got.get(1).target().toFloatArray());
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 1, 3})
  void aFailingSampleIsReportedOnTheCallerWithItsIndex(int workers) {
    TensorDataset ds = images(40);
    RuntimeException boom = new IllegalStateException("disk on fire");
    Dataset<Sample> bad = new Dataset<>() {
      @Override
      public int size() {
        return 40;
      }

      @Override
      public Sample get(int i) {
        if (i == 13) throw boom;
        return ds.get(i);
      }
    };
    DataLoader dl = new DataLoader(bad, BatchConfig.shuffled(4, 0), workers);
    int[] order = dl.order(0);
    int pos = 0;
    while (order[pos] != 13) pos++;
    BatchIterator it = dl.iterate(0, 0);
    int delivered = 0;
    try {
      while (it.hasNext()) {
        it.next();
        delivered++;
      }
      fail("expected a DataLoaderException");
    } catch (DataLoaderException e) {
      assertEquals(13, e.sampleIndex());
      assertEquals(pos / 4, e.batch());
      assertEquals(0, e.epoch());
      assertSame(boom, e.getCause());
      assertTrue(e.getMessage().startsWith("DataLoader: loading sample 13 (batch " + pos / 4 + " of epoch 0) failed: "
          + "java.lang.IllegalStateException: disk on fire"), e.getMessage());
    }
    assertEquals(pos / 4, delivered);
    assertFalse(it.hasNext());
    assertNoWorkersLeft(dl);
  }

  @Test
  void mismatchedSampleShapesAreNamed() {
    Dataset<Sample> ds = new Dataset<>() {
      @Override
      public int size() {
        return 4;
      }

      @Override
      public Sample get(int i) {
        return new Sample(Tensor.zeros(i == 2 ? 3 : 2), Tensor.scalar(0));
      }
    };
    var e = assertThrows(DataLoaderException.class, () -> all(new DataLoader(ds, BatchConfig.sequential(4)).iterate(0, 0)));
    assertEquals("DataLoader: cannot stack the inputs of batch 0 of epoch 0: sample 2 is float32[3] but sample 0 is float32[2]",
        e.getMessage());
    assertEquals(2, e.sampleIndex());
  }

  @Test
  void workersStopWhenTheEpochEndsOrTheIteratorOrLoaderIsClosed() throws Exception {
    TensorDataset ds = images(64);
    DataLoader dl = new DataLoader(ds, BatchConfig.shuffled(4, 0), 3);
    all(dl.iterate(0, 0));
    assertNoWorkersLeft(dl);

    BatchIterator it = dl.iterate(1, 0);
    it.next();
    assertFalse(workers(dl).isEmpty(), "workers run while the epoch is in progress");
    it.close();
    assertFalse(it.hasNext());
    assertNoWorkersLeft(dl);

    BatchIterator open = dl.iterate(2, 0);
    open.next();
    dl.close();
    assertNoWorkersLeft(dl);
    assertThrows(IllegalStateException.class, open::next);
    var e = assertThrows(IllegalStateException.class, () -> dl.iterate(0, 0));
    assertEquals("DataLoader: iterate after close()", e.getMessage());
  }

  @Test
  void closingTheLoaderReleasesAConsumerWaitingForABatch() throws Exception {
    TensorDataset ds = images(40);
    java.util.concurrent.CountDownLatch entered = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.CountDownLatch never = new java.util.concurrent.CountDownLatch(1);
    Dataset<Sample> stuck = new Dataset<>() {
      @Override
      public int size() {
        return 40;
      }

      @Override
      public Sample get(int i) {
        entered.countDown();
        try {
          never.await(); // a read that hangs until the worker is interrupted
        } catch (InterruptedException e) {
          throw new IllegalStateException("interrupted", e);
        }
        return ds.get(i);
      }
    };
    DataLoader dl = new DataLoader(stuck, BatchConfig.sequential(4), 1);
    BatchIterator it = dl.iterate(0, 0);
    Throwable[] seen = new Throwable[1];
    Thread consumer = new Thread(() -> {
      try {
        it.next();
      } catch (Throwable t) {
        seen[0] = t;
      }
    });
    consumer.start();
    entered.await();
    dl.close();
    consumer.join(60_000);
    assertFalse(consumer.isAlive(), "the consumer is not left waiting");
    assertTrue(seen[0] instanceof IllegalStateException || seen[0] instanceof DataLoaderException, String.valueOf(seen[0]));
    assertNoWorkersLeft(dl);
  }

  @Test
  void workersOfAnAbandonedIteratorStop() throws Exception {
    DataLoader dl = new DataLoader(images(64), BatchConfig.shuffled(2, 0), 2);
    abandon(dl);
    // the threads exit when the iterator is collected or after KEEP_ALIVE_SECONDS idle; poll generously
    for (int i = 0; i < 600 && !workers(dl).isEmpty(); i++) {
      System.gc();
      Thread.sleep(50);
    }
    assertEquals(List.of(), workers(dl).stream().map(Thread::getName).toList());
  }

  private static void abandon(DataLoader dl) {
    for (Batch b : dl) {
      assertEquals(2, b.size());
      break;
    }
  }

  @Test
  void badConfigurationsAreClearErrors() {
    var bs = assertThrows(IllegalArgumentException.class, () -> new BatchConfig(0, true, false, 1));
    assertEquals("BatchConfig: batch size must be at least 1, got 0", bs.getMessage());
    var empty = assertThrows(IllegalArgumentException.class,
        () -> new DataLoader(new Subset<>(images(3), new int[0]), BatchConfig.sequential(2)));
    assertTrue(empty.getMessage().startsWith("DataLoader: the data set is empty"), empty.getMessage());
    var drop = assertThrows(IllegalArgumentException.class, () -> new DataLoader(images(3), new BatchConfig(4, false, true, 0)));
    assertEquals("DataLoader: dropLast with batch size 4 and 3 samples leaves no batch; hint: a smaller batch size or dropLast=false",
        drop.getMessage());
    DataLoader dl = new DataLoader(images(10), BatchConfig.sequential(4));
    var skip = assertThrows(IllegalArgumentException.class, () -> dl.iterate(0, 4));
    assertEquals("DataLoader.iterate: skipBatches must be in 0..3, got 4", skip.getMessage());
    assertThrows(IllegalArgumentException.class, () -> dl.iterate(-1, 0));
    assertThrows(IllegalArgumentException.class, () -> new DataLoader(images(10), BatchConfig.sequential(4), -1));
  }

  static List<Thread> workers(DataLoader dl) {
    String prefix = "ember-data-loader-" + dl.id() + "-worker-";
    return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().startsWith(prefix) && t.isAlive()).toList();
  }

  static void assertNoWorkersLeft(DataLoader dl) {
    for (Thread t : workers(dl)) {
      assertTrue(t.isDaemon(), t.getName() + " is a daemon");
      try {
        t.join(60_000);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      assertFalse(t.isAlive(), t.getName() + " still running after shutdown");
    }
  }
}
