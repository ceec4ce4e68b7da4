package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.memory.PinnedHostMemory;
import dev.ember.cuda.memory.PinnedStagingPool;
import dev.ember.cuda.memory.StreamEvents;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * The ordering of {@link AsyncCopies} without a GPU: a fake device whose streams queue their work and run it only
 * when the test says, in the order that would expose a missing dependency; a queued copy reads its pinned buffer
 * when it runs, as a DMA does, so a buffer handed out again too early shows in the values.
 */
class AsyncCopiesTest {
  static final long COMPUTE = 0;
  static final long COPY = 7;

  /** A device of {@code size} bytes whose streams run their queued work when {@link #run} is called. */
  static final class FakeDevice implements AsyncCopies.Streams, StreamEvents {
    final byte[] memory;
    final Map<Long, ArrayDeque<Runnable>> queues = new LinkedHashMap<>();
    final Set<Long> complete = new HashSet<>();
    final Set<Long> destroyed = new HashSet<>();
    final List<String> log = new ArrayList<>();
    long nextEvent = 100;
    int streamsCreated;
    int failCopyAt = -1;
    int copies;

    FakeDevice(int size) {
      this.memory = new byte[size];
    }

    private ArrayDeque<Runnable> queue(long stream) {
      return queues.computeIfAbsent(stream, s -> new ArrayDeque<>());
    }

    /** A kernel on the compute stream that reads {@code n} device bytes at {@code at} into {@code seen}. */
    void kernelReads(long at, byte[] seen) {
      queue(COMPUTE).add(() -> System.arraycopy(memory, (int) at, seen, 0, seen.length));
    }

    /** Runs the streams, each as far as its waits allow, {@code first} before the others, until all are idle. */
    void run(long first) {
      boolean progress = true;
      while (progress) {
        progress = step(first);
        for (long s : new ArrayList<>(queues.keySet())) if (s != first) progress |= step(s);
      }
      for (var q : queues.values()) assertTrue(q.isEmpty(), "a stream waits for an event never recorded");
    }

    private boolean step(long stream) {
      ArrayDeque<Runnable> q = queue(stream);
      boolean any = false;
      while (!q.isEmpty()) {
        Runnable op = q.peekFirst();
        if (op instanceof Wait w && !complete.contains(w.event())) break;
        q.pollFirst().run();
        any = true;
      }
      return any;
    }

    record Wait(long event) implements Runnable {
      @Override
      public void run() {}
    }

    @Override
    public void makeCurrent() {}

    @Override
    public long computeStream() {
      return COMPUTE;
    }

    @Override
    public long createNonBlockingStream() {
      streamsCreated++;
      log.add("create");
      return COPY;
    }

    @Override
    public void waitEvent(long stream, long event) {
      log.add("wait " + stream + " " + event);
      queue(stream).add(new Wait(event));
    }

    @Override
    public void copyAsync(long dst, MemorySegment src, long bytes, long stream) {
      if (copies++ == failCopyAt) throw new IllegalStateException("cuMemcpyHtoDAsync_v2 failed");
      log.add("copy " + dst + " " + bytes + " on " + stream);
      queue(stream).add(() -> MemorySegment.copy(src, 0, MemorySegment.ofArray(memory), dst, bytes));
    }

    @Override
    public void synchronizeStream(long stream) {
      log.add("synchronize " + stream);
      run(stream);
    }

    @Override
    public long record(long stream) {
      long e = nextEvent++;
      log.add("record " + stream + " " + e);
      queue(stream).add(() -> complete.add(e));
      return e;
    }

    @Override
    public boolean query(long event) {
      return complete.contains(event);
    }

    @Override
    public void synchronize(long event) {
      run(COMPUTE);
      assertTrue(complete.contains(event));
    }

    @Override
    public void destroy(long event) {
      assertTrue(destroyed.add(event), "event " + event + " destroyed twice");
    }
  }

  static final class Pinned implements PinnedHostMemory {
    int allocations;

    @Override
    public MemorySegment allocate(long bytes) {
      allocations++;
      return Arena.ofAuto().allocate(bytes, 64);
    }

    @Override
    public void free(MemorySegment segment) {}
  }

  private final FakeDevice dev = new FakeDevice(64 << 20);
  private final Pinned pinned = new Pinned();
  private final PinnedStagingPool pool = new PinnedStagingPool(pinned, dev);
  private final AsyncCopies copies = new AsyncCopies(dev, dev, pool);

  private static byte[] random(int n, long seed) {
    byte[] b = new byte[n];
    new SplittableRandom(seed).nextBytes(b);
    return b;
  }

  @Test
  void aLargeCopyGoesInChunksBetweenTheTwoWaits() {
    int n = (int) (2 * AsyncCopies.CHUNK + 12345);
    byte[] src = random(n, 1);
    copies.hostToDevice(MemorySegment.ofArray(src), 4096);
    assertEquals(List.of("create", "record 0 100", "wait 7 100", "copy 4096 8388608 on 7",
        "copy 8392704 8388608 on 7", "copy 16781312 12345 on 7", "record 7 101", "wait 0 101"), dev.log);
    assertTrue(dev.destroyed.contains(100L), "the first event goes back at once");
    dev.run(COMPUTE);
    assertArrayEquals(src, Arrays.copyOfRange(dev.memory, 4096, 4096 + n));
    assertEquals(1, dev.streamsCreated);
    copies.hostToDevice(MemorySegment.ofArray(random(10, 2)), 0);
    assertEquals(1, dev.streamsCreated, "one copy stream");
  }

  @Test
  void theCopyWaitsForKernelsQueuedBeforeItThatReadTheOldContents() {
    byte[] old = random(1 << 20, 3);
    System.arraycopy(old, 0, dev.memory, 0, old.length);
    byte[] seen = new byte[old.length];
    dev.kernelReads(0, seen); // queued before: a kernel of the block's previous user
    copies.hostToDevice(MemorySegment.ofArray(random(1 << 20, 4)), 0);
    dev.run(COPY); // the copy stream as early as it may
    assertArrayEquals(old, seen, "the kernel queued before the copy read the old values");
  }

  @Test
  void kernelsQueuedAfterTheCopySeeItsValuesAndTheHostArrayIsFreeAtOnce() {
    byte[] src = random((int) AsyncCopies.CHUNK + 99, 5);
    byte[] want = src.clone();
    copies.hostToDevice(MemorySegment.ofArray(src), 64);
    Arrays.fill(src, (byte) 0); // the caller reuses its array as soon as the call returns
    byte[] seen = new byte[want.length];
    dev.kernelReads(64, seen);
    dev.run(COMPUTE); // the compute stream as early as it may
    assertArrayEquals(want, seen);
  }

  @Test
  void aPinnedBufferIsHandedOutAgainOnlyAfterItsCopyRan() {
    byte[] a = random(100_000, 6);
    byte[] b = random(100_000, 7);
    copies.hostToDevice(MemorySegment.ofArray(a), 0);
    copies.hostToDevice(MemorySegment.ofArray(b), 200_000); // the first copy has not run: another buffer
    assertEquals(2, pinned.allocations);
    dev.run(COPY);
    assertArrayEquals(a, Arrays.copyOfRange(dev.memory, 0, a.length));
    assertArrayEquals(b, Arrays.copyOfRange(dev.memory, 200_000, 200_000 + b.length));
    byte[] c = random(90_000, 8);
    copies.hostToDevice(MemorySegment.ofArray(c), 400_000);
    assertEquals(2, pinned.allocations, "a buffer whose copy ran is reused");
    assertEquals(1, pool.reuses());
    dev.run(COMPUTE);
    assertArrayEquals(c, Arrays.copyOfRange(dev.memory, 400_000, 400_000 + c.length));
    assertEquals(0, pool.inUse());
  }

  @Test
  void aCopyThatFailsHalfWayWaitsForTheChunksQueuedAndGivesTheBufferBack() {
    dev.failCopyAt = 1;
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> copies.hostToDevice(MemorySegment.ofArray(random((int) (2 * AsyncCopies.CHUNK), 9)), 0));
    assertEquals("cuMemcpyHtoDAsync_v2 failed", e.getMessage());
    assertTrue(dev.log.contains("synchronize 7"), dev.log.toString());
    assertEquals(0, pool.inUse());
    assertEquals(1, pool.cachedBuffers());
    dev.failCopyAt = -1;
    byte[] next = random((int) (2 * AsyncCopies.CHUNK - 5), 10); // the same bin
    copies.hostToDevice(MemorySegment.ofArray(next), 0);
    assertEquals(1, pinned.allocations, "the buffer given back serves the next copy");
    dev.run(COMPUTE);
    assertArrayEquals(next, Arrays.copyOfRange(dev.memory, 0, next.length));
    assertSame(pool, copies.pool());
    assertNotEquals(0, copies.copyStream());
  }
}
