package dev.ember.cuda.memory;

import java.util.HashMap;
import java.util.Map;

/**
 * A device of fixed capacity for allocator tests: hands out fresh, never reused addresses, counts calls, and fails
 * loudly on a free of memory it did not hand out. Full is answered with 0, or with {@link OutOfDeviceMemory} when
 * made with {@code throwWhenFull}.
 */
class FakeRawMemory implements RawMemory {
  static final long BASE = 0x7f00_0000_0000L;

  private final long capacity;
  private final boolean throwWhenFull;
  private final Map<Long, Long> live = new HashMap<>();
  private long next = BASE;
  private long used;
  int mallocCalls;
  int failedMallocs;
  int freeCalls;

  FakeRawMemory(long capacity, boolean throwWhenFull) {
    this.capacity = capacity;
    this.throwWhenFull = throwWhenFull;
  }

  FakeRawMemory(long capacity) {
    this(capacity, false);
  }

  @Override
  public long malloc(long bytes) {
    mallocCalls++;
    if (used + bytes > capacity) {
      failedMallocs++;
      if (throwWhenFull) {
        throw new OutOfDeviceMemory(bytes, "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY");
      }
      return 0;
    }
    long ptr = next;
    // A gap between segments, so that a merge across segments would show as a wrong size.
    next += bytes + (1L << 20);
    live.put(ptr, bytes);
    used += bytes;
    return ptr;
  }

  @Override
  public void free(long ptr) {
    freeCalls++;
    Long bytes = live.remove(ptr);
    if (bytes == null) {
      throw new AssertionError(String.format("free of 0x%x, which is not a live segment", ptr));
    }
    used -= bytes;
  }

  @Override
  public long[] memInfo() {
    return new long[] {capacity - used, capacity};
  }

  long usedBytes() {
    return used;
  }

  int liveSegments() {
    return live.size();
  }
}
