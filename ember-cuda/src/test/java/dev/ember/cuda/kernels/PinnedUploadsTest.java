package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The pinned upload ring on a recording device (no GPU needed): every copy reads the bytes it was given even though
 * the copies "run" late, a half of the ring is reused only after waiting for the event recorded when it was left,
 * and an array larger than a half goes synchronously.
 */
class PinnedUploadsTest {
  /** A device whose asynchronous copies run only when an event after them is synchronized. */
  static final class LateDevice implements PinnedUploads.Device {
    final Arena arena = Arena.ofConfined();
    final List<Object[]> queued = new ArrayList<>(); // {dst, src, bytes} or {event}
    final Map<Long, double[]> delivered = new HashMap<>();
    final List<String> log = new ArrayList<>();
    long nextEvent = 1;

    @Override
    public MemorySegment hostAlloc(long bytes) {
      return arena.allocate(bytes, 16);
    }

    @Override
    public void copyAsync(long dst, MemorySegment src, long bytes) {
      queued.add(new Object[] {dst, src, bytes});
    }

    @Override
    public void copySync(long dst, MemorySegment src, long bytes) {
      runAll();
      delivered.put(dst, src.toArray(ValueLayout.JAVA_DOUBLE));
      log.add("sync " + bytes);
    }

    @Override
    public long eventCreate() {
      return nextEvent++;
    }

    @Override
    public void eventRecord(long event) {
      queued.add(new Object[] {event});
      log.add("record " + event);
    }

    @Override
    public void eventSynchronize(long event) {
      log.add("wait " + event);
      while (!queued.isEmpty()) {
        Object[] q = queued.remove(0);
        if (q.length == 1) {
          if ((long) q[0] == event) return;
          continue;
        }
        deliver(q);
      }
    }

    void runAll() {
      while (!queued.isEmpty()) {
        Object[] q = queued.remove(0);
        if (q.length == 3) deliver(q);
      }
    }

    private void deliver(Object[] q) {
      delivered.put((Long) q[0], ((MemorySegment) q[1]).toArray(ValueLayout.JAVA_DOUBLE));
    }
  }

  @Test
  void copiesDeliverTheirOwnBytesAndHalvesAreReusedOnlyAfterTheirEvent() {
    LateDevice dev = new LateDevice();
    PinnedUploads up = new PinnedUploads(dev);
    int len = 1000; // 8000 bytes: 131 copies fill a half
    int copies = 600;
    double[][] sent = new double[copies][];
    for (int i = 0; i < copies; i++) {
      sent[i] = new double[len];
      java.util.Arrays.fill(sent[i], i + 0.5);
      up.put(1000L * (i + 1), sent[i]);
      java.util.Arrays.fill(sent[i], -1); // the caller reuses its array at once
      java.util.Arrays.fill(sent[i], i + 0.5);
    }
    dev.runAll();
    for (int i = 0; i < copies; i++) {
      double[] want = new double[len];
      java.util.Arrays.fill(want, i + 0.5);
      assertArrayEquals(want, dev.delivered.get(1000L * (i + 1)), "copy " + i + " delivered its own bytes");
    }
    // halves: 0, 1, 0, 1, 0: leaving each records its event; re-entering one waits for the event it was left with
    assertEquals(List.of("record 1", "record 2", "wait 1", "record 1", "wait 2", "record 2", "wait 1"),
        dev.log.stream().filter(s -> !s.startsWith("sync")).toList());
  }

  /** An int array (attention's per-batch mask bases) goes through the ring as its own bytes. */
  @Test
  void intArraysDeliverTheirBytes() {
    LateDevice dev = new LateDevice();
    PinnedUploads up = new PinnedUploads(dev);
    int[] bases = {0, 399, -5, Integer.MAX_VALUE};
    up.put(77L, bases);
    bases[1] = 1; // the caller may reuse its array at once
    assertTrue(dev.log.isEmpty(), "queued, not synchronous: " + dev.log);
    dev.runAll();
    int[] got = MemorySegment.ofArray(dev.delivered.get(77L)).toArray(ValueLayout.JAVA_INT);
    assertArrayEquals(new int[] {0, 399, -5, Integer.MAX_VALUE}, got);
  }

  @Test
  void largeArraysAreCopiedSynchronously() {
    LateDevice dev = new LateDevice();
    PinnedUploads up = new PinnedUploads(dev);
    double[] big = new double[(int) (PinnedUploads.HALF / 8) + 1];
    big[3] = 7;
    up.put(42L, big);
    assertTrue(dev.log.contains("sync " + 8L * big.length), dev.log.toString());
    assertEquals(7.0, dev.delivered.get(42L)[3]);
    up.put(43L, new long[0]); // nothing to copy
    assertEquals(1, dev.log.size());
  }
}
