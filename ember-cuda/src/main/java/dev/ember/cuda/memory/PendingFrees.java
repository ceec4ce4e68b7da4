package dev.ember.cuda.memory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The blocks a {@link CachingAllocator} freed while other streams may still use them, each held back by an event
 * per such stream (PyTorch's cuda_events). Each stream's events are kept in record order, so a stream's queue is
 * checked only up to its first event not yet complete. Guarded by the allocator's lock.
 */
final class PendingFrees {
  private record PendingEvent(long event, Chunk chunk) {}

  private final StreamEvents events;
  private final Map<Long, ArrayDeque<PendingEvent>> byStream = new LinkedHashMap<>();

  PendingFrees(StreamEvents events) {
    this.events = events;
  }

  /**
   * Records an event on each stream that used {@code chunk}; the last of them to complete releases it. All or
   * nothing: when a record fails, the events already recorded are destroyed and the chunk is left as it was.
   */
  void hold(Chunk chunk) {
    List<Long> streams = new ArrayList<>(chunk.streamUses);
    long[] recorded = new long[streams.size()];
    for (int i = 0; i < recorded.length; i++) {
      try {
        recorded[i] = events.record(streams.get(i));
      } catch (RuntimeException e) {
        for (int j = 0; j < i; j++) {
          events.destroy(recorded[j]);
        }
        throw e;
      }
    }
    chunk.streamUses = null;
    for (int i = 0; i < recorded.length; i++) {
      chunk.eventCount++;
      byStream.computeIfAbsent(streams.get(i), s -> new ArrayDeque<>()).add(new PendingEvent(recorded[i], chunk));
    }
  }

  /** Hands {@code release} each held block whose events have all completed, without blocking. */
  void poll(Consumer<Chunk> release) {
    for (Iterator<ArrayDeque<PendingEvent>> it = byStream.values().iterator(); it.hasNext(); ) {
      ArrayDeque<PendingEvent> queue = it.next();
      while (!queue.isEmpty() && events.query(queue.peekFirst().event())) {
        retire(queue.pollFirst(), release);
      }
      if (queue.isEmpty()) {
        it.remove();
      }
    }
  }

  /** Waits for every event and hands {@code release} every held block. */
  void drain(Consumer<Chunk> release) {
    for (ArrayDeque<PendingEvent> queue : byStream.values()) {
      while (!queue.isEmpty()) {
        events.synchronize(queue.peekFirst().event());
        retire(queue.pollFirst(), release);
      }
    }
    byStream.clear();
  }

  /** Events recorded and not yet retired. */
  int size() {
    return byStream.values().stream().mapToInt(ArrayDeque::size).sum();
  }

  private void retire(PendingEvent pending, Consumer<Chunk> release) {
    events.destroy(pending.event());
    Chunk chunk = pending.chunk();
    if (--chunk.eventCount == 0) {
      release.accept(chunk);
    }
  }
}
