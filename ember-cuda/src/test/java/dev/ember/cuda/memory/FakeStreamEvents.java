package dev.ember.cuda.memory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Stream events for allocator tests: an event completes when the test says its stream is done, or is synchronized. */
class FakeStreamEvents implements StreamEvents {
  private final Map<Long, Long> streamOf = new HashMap<>();
  private final Set<Long> complete = new HashSet<>();
  final List<Long> recordedOn = new ArrayList<>();
  final Set<Long> destroyed = new HashSet<>();
  int synchronizeCalls;
  private long next = 1;

  @Override
  public long record(long stream) {
    long event = next++;
    streamOf.put(event, stream);
    recordedOn.add(stream);
    return event;
  }

  @Override
  public boolean query(long event) {
    checkAlive(event);
    return complete.contains(event);
  }

  @Override
  public void synchronize(long event) {
    checkAlive(event);
    synchronizeCalls++;
    complete.add(event);
  }

  @Override
  public void destroy(long event) {
    checkAlive(event);
    destroyed.add(event);
  }

  /** Completes every event recorded on {@code stream} so far. */
  void finish(long stream) {
    streamOf.forEach((event, s) -> {
      if (s == stream) {
        complete.add(event);
      }
    });
  }

  /** Events recorded and not destroyed yet. */
  int liveEvents() {
    return streamOf.size() - destroyed.size();
  }

  private void checkAlive(long event) {
    if (!streamOf.containsKey(event) || destroyed.contains(event)) {
      throw new AssertionError("use of event " + event + ", which is not live");
    }
  }
}
