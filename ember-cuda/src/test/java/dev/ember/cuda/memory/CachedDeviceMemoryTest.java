package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Device;
import org.junit.jupiter.api.Test;

/** A storage's device memory as a cached block: address and size, one release back to the cache. */
class CachedDeviceMemoryTest {
  private final FakeRawMemory raw = new FakeRawMemory(1L << 40);
  private final CachingAllocator alloc = new CachingAllocator(1, raw, new FakeStreamEvents());

  @Test
  void releaseGivesTheBlockBackOnceHoweverOftenItIsCalled() {
    CachedDeviceMemory m = CachedDeviceMemory.allocate(Device.cuda(1), alloc, 1000, 0);
    assertEquals(Device.cuda(1), m.device());
    assertEquals(1000, m.byteSize());
    assertEquals(1024, m.block().size());
    assertEquals(m.block().ptr(), m.address());
    assertFalse(m.isReleased());
    m.release();
    m.release(); // the scope and the Cleaner may both release: the second is a no-op, not a double free
    assertTrue(m.isReleased());
    assertEquals(0, alloc.stats().allocation().current());
    assertEquals(1, alloc.stats().allocation().freed());
    CachedDeviceMemory again = CachedDeviceMemory.allocate(Device.cuda(1), alloc, 1000, 0);
    assertEquals(m.address(), again.address(), "the released block is reused from the cache");
    assertEquals(1, raw.mallocCalls);
    again.release();
  }

  @Test
  void zeroBytesNeedNoDeviceMemory() {
    CachedDeviceMemory m = CachedDeviceMemory.allocate(Device.cuda(1), alloc, 0, 0);
    assertEquals(0, m.byteSize());
    assertEquals(0, raw.mallocCalls);
    m.release();
  }

  @Test
  void deviceMustBeTheAllocators() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> CachedDeviceMemory.allocate(Device.cuda(0), alloc, 64, 0));
    assertEquals("CachedDeviceMemory.allocate: the allocator serves cuda:1, not cuda:0", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> CachedDeviceMemory.allocate(Device.CPU, alloc, 64, 0));
  }
}
