package dev.ember.cuda.memory;

import dev.ember.cuda.memory.StatCounters.Metric;
import java.util.Collection;
import java.util.Set;

/** The structural checks of {@link CachingAllocator#checkInvariants}, run with the allocator's lock held. */
final class InvariantCheck {
  private final Collection<Segment> segments;
  private final Set<Chunk> smallFree;
  private final Set<Chunk> largeFree;
  private final StatCounters stats;
  private final long maxSplitSize;
  private final int pendingEvents;
  /** Per pool (0 large, 1 small): what the pieces add up to, in {@link Metric} order. */
  private final long[][] expected = new long[2][Metric.values().length];

  InvariantCheck(Collection<Segment> segments, Set<Chunk> smallFree, Set<Chunk> largeFree, StatCounters stats,
      long maxSplitSize, int pendingEvents) {
    this.segments = segments;
    this.smallFree = smallFree;
    this.largeFree = largeFree;
    this.stats = stats;
    this.maxSplitSize = maxSplitSize;
    this.pendingEvents = pendingEvents;
  }

  void run() {
    int idle = 0;
    int eventsHeld = 0;
    for (Segment segment : segments) {
      long[] e = expected[segment.small ? 1 : 0];
      e[Metric.SEGMENT.ordinal()]++;
      e[Metric.RESERVED_BYTES.ordinal()] += segment.size;
      if (segment.size >= maxSplitSize) {
        e[Metric.OVERSIZE_SEGMENT.ordinal()]++;
      }
      long at = segment.base;
      Chunk prev = null;
      for (Chunk c = segment.head; c != null; prev = c, c = c.next) {
        check(c.segment == segment && c.prev == prev, segment, "piece at 0x%x is linked to the wrong segment", c.ptr);
        check(c.ptr == at && c.size > 0 && c.size % CachingAllocator.MIN_BLOCK_SIZE == 0, segment,
            "piece at 0x%x (%d bytes) does not start where the previous one ends (0x%x)", c.ptr, c.size, at);
        at += c.size;
        boolean inPool = (segment.small ? smallFree : largeFree).contains(c);
        check(inPool == c.isIdle(), segment, "piece at 0x%x is %s but %s the free set", c.ptr,
            c.isIdle() ? "idle" : "in use", inPool ? "in" : "not in");
        check(!(c.isIdle() && prev != null && prev.isIdle()), segment, "idle pieces at 0x%x and 0x%x were not merged",
            prev == null ? 0 : prev.ptr, c.ptr);
        eventsHeld += c.eventCount;
        if (c.allocated) {
          e[Metric.ALLOCATION.ordinal()]++;
          e[Metric.ALLOCATED_BYTES.ordinal()] += c.size;
          e[Metric.REQUESTED_BYTES.ordinal()] += c.requested;
          if (c.size >= maxSplitSize) {
            e[Metric.OVERSIZE_ALLOCATION.ordinal()]++;
          }
        }
        if (!c.isIdle()) {
          e[Metric.ACTIVE.ordinal()]++;
          e[Metric.ACTIVE_BYTES.ordinal()] += c.size;
        } else {
          idle++;
          if (c.isSplit()) {
            e[Metric.INACTIVE_SPLIT.ordinal()]++;
            e[Metric.INACTIVE_SPLIT_BYTES.ordinal()] += c.size;
          }
        }
      }
      check(at == segment.base + segment.size, segment, "pieces end at 0x%x", at);
    }
    if (idle != smallFree.size() + largeFree.size()) {
      throw new IllegalStateException("CachingAllocator: the free sets hold " + (smallFree.size() + largeFree.size())
          + " pieces but the segments have " + idle + " idle ones");
    }
    if (eventsHeld != pendingEvents) {
      throw new IllegalStateException("CachingAllocator: " + pendingEvents + " events are outstanding but pieces"
          + " wait for " + eventsHeld);
    }
    for (Metric m : Metric.values()) {
      for (boolean small : new boolean[] {false, true}) {
        long want = expected[small ? 1 : 0][m.ordinal()];
        long have = stats.current(m, small);
        if (want != have) {
          throw new IllegalStateException("CachingAllocator: counter " + m + " of the " + (small ? "small" : "large")
              + " pool is " + have + " but the pieces add up to " + want);
        }
      }
    }
  }

  private static void check(boolean ok, Segment segment, String what, Object... args) {
    if (!ok) {
      throw new IllegalStateException(String.format("CachingAllocator: segment at 0x%x (%d bytes): ", segment.base,
          segment.size) + String.format(what, args));
    }
  }
}
