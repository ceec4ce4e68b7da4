package dev.ember.data;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.testing.FakeDevice;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;

/**
 * {@link DataLoader#pinMemory} on the strict fake device: the loader's batches, in its order and bitwise, arrive on
 * the device through non-blocking copies made on a background thread; failures there surface on the caller naming
 * the batch; stopping early leaves no thread behind and closes the source's iterator.
 */
class PinnedBatchesTest {
  private static final Device FAKE = FakeDevice.DEVICE;

  private static List<Batch> onHost(List<Batch> batches) {
    List<Batch> out = new ArrayList<>();
    for (Batch b : batches) {
      assertEquals(FAKE, b.input().device());
      assertEquals(FAKE, b.target().device());
      out.add(new Batch(b.input().cpu(), b.target().cpu()));
    }
    return out;
  }

  private static long pinThreads() {
    return Thread.getAllStackTraces().keySet().stream()
        .filter(t -> t.isAlive() && t.getName().startsWith("ember-pin-memory-")).count();
  }

  @ParameterizedTest
  @ValueSource(ints = {0, 2})
  void theLoadersBatchesInOrderAndBitwiseOnTheDevice(int workers) {
    TensorDataset ds = DataLoaderTest.images(103);
    try (DataLoader dl = new DataLoader(ds, BatchConfig.shuffled(10, 5), workers);
        PinnedBatches pinned = dl.pinMemory(FAKE)) {
      assertEquals(dl.numBatches(), pinned.numBatches());
      for (int epoch = 0; epoch < 2; epoch++) {
        List<Batch> want = DataLoaderTest.all(dl.iterate(epoch, 0));
        long copies = FakeDevice.nonBlockingCopies(FAKE);
        List<Batch> got = onHost(DataLoaderTest.all(pinned.iterate(epoch, 0)));
        DataLoaderTest.assertSameBatches(want, got);
        assertEquals(2L * want.size(), FakeDevice.nonBlockingCopies(FAKE) - copies, "input and target, non-blocking");
      }
      // resuming inside an epoch skips as the loader does
      DataLoaderTest.assertSameBatches(DataLoaderTest.all(dl.iterate(1, 7)), onHost(DataLoaderTest.all(pinned.iterate(1, 7))));
      assertFalse(pinned.iterate(0, dl.numBatches()).hasNext());
    }
    assertEquals(0, pinThreads());
  }

  @Test
  void aSampleThatFailsSurfacesOnTheCallerWithItsBatch() {
    TensorDataset good = DataLoaderTest.images(40);
    Dataset<Sample> bad = new Dataset<>() {
      @Override
      public int size() {
        return 40;
      }

      @Override
      public Sample get(int index) {
        if (index == 27) throw new IllegalStateException("sample 27 is corrupt");
        return good.get(index);
      }
    };
    DataLoader dl = new DataLoader(bad, BatchConfig.sequential(10));
    BatchIterator it = dl.pinMemory(FAKE).iterate(0, 0);
    assertTrue(it.hasNext());
    assertEquals(FAKE, it.next().input().device());
    assertEquals(FAKE, it.next().input().device());
    assertTrue(it.hasNext());
    DataLoaderException e = assertThrows(DataLoaderException.class, it::next);
    assertEquals(2, e.batch());
    assertEquals(27, e.sampleIndex());
    assertTrue(e.getMessage().contains("sample 27") && e.getMessage().contains("batch 2 of epoch 0"), e.getMessage());
    assertFalse(it.hasNext(), "a failure ends the epoch");
    assertThrows(NoSuchElementException.class, it::next);
    assertEquals(0, pinThreads());
  }

  /** A source of {@code n} batches of [2] whose iterator fails at {@code failAt} and records its close. */
  private static BatchSource counting(int n, int failAt, AtomicInteger produced, AtomicBoolean closed) {
    return new BatchSource() {
      @Override
      public int numBatches() {
        return n;
      }

      @Override
      public BatchIterator iterate(int epoch, int skip) {
        return new BatchIterator() {
          int next = skip;

          @Override
          public boolean hasNext() {
            return next < n;
          }

          @Override
          public Batch next() {
            int b = next++;
            if (b == failAt) throw new ArithmeticException("no batch " + b);
            produced.incrementAndGet();
            return new Batch(Tensor.of(new float[] {b, -b}, 2), Tensor.of(new long[] {b, b}, 2));
          }

          @Override
          public void close() {
            closed.set(true);
          }
        };
      }
    };
  }

  @Test
  void aFailureOutsideTheLoaderIsWrappedNamingTheBatchAndEpoch() {
    AtomicBoolean closed = new AtomicBoolean();
    BatchIterator it = new PinnedBatches(counting(10, 4, new AtomicInteger(), closed), FAKE).iterate(3, 1);
    for (int b = 1; b < 4; b++) assertArrayEquals(new float[] {b, -b}, it.next().input().cpu().toFloatArray());
    DataLoaderException e = assertThrows(DataLoaderException.class, it::next);
    assertEquals(4, e.batch());
    assertEquals(3, e.epoch());
    assertSame(ArithmeticException.class, e.getCause().getClass());
    assertEquals("PinnedBatches: batch 4 of epoch 3 failed on its way to fake:0: java.lang.ArithmeticException: no batch 4",
        e.getMessage());
    assertTrue(closed.get(), "the source's iterator is closed");
    assertEquals(0, pinThreads());
  }

  @Test
  void stoppingEarlyStopsTheThreadAndClosesTheSource() {
    AtomicBoolean closed = new AtomicBoolean();
    AtomicInteger produced = new AtomicInteger();
    PinnedBatches pinned = new PinnedBatches(counting(1000, -1, produced, closed), FAKE);
    try (BatchIterator it = pinned.iterate(0, 0)) {
      for (int b = 0; b < 3; b++) assertArrayEquals(new long[] {b, b}, it.next().target().toLongArray());
    }
    assertTrue(closed.get());
    assertEquals(0, pinThreads(), "the background thread has ended");
    assertTrue(produced.get() <= 3 + 3, "at most a few batches ahead, got " + produced.get());
    // the source's close() stops an iterator still open; it then fails rather than waiting forever
    BatchIterator open = pinned.iterate(0, 0);
    assertTrue(open.hasNext());
    open.next();
    pinned.close();
    assertEquals(0, pinThreads());
    assertThrows(RuntimeException.class, () -> {
      while (open.hasNext()) open.next();
      throw new AssertionError("the closed source went on to the end");
    });
  }
}
