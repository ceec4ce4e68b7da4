package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Storage;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** CudaMemory's lifetime rules, with a recording free function in place of the driver (no GPU needed). */
class CudaMemoryTest {
  private final List<Long> freed = new CopyOnWriteArrayList<>();

  private CudaMemory memory(long address, long bytes) {
    return new CudaMemory(Device.cuda(0), address, bytes, (a, n) -> {
      assertEquals(bytes, n);
      freed.add(a);
    });
  }

  @Test
  void releaseFreesOnceHoweverOftenCalled() {
    CudaMemory m = memory(0x1000, 64);
    Storage st = CudaMemory.storage(DType.F32, 16, m);
    assertSame(m, st.memory());
    assertEquals(Device.cuda(0), st.device());
    assertFalse(m.isReleased());
    m.release();
    m.release();
    assertTrue(m.isReleased());
    assertEquals(List.of(0x1000L), freed);
  }

  @Test
  void memoryWithoutStorageStillReleasesOnce() {
    CudaMemory m = memory(0x2000, 8);
    m.release();
    m.release();
    assertEquals(List.of(0x2000L), freed);
  }

  @Test
  void unreachableStorageFreesItsMemory() throws InterruptedException {
    for (int i = 0; i < 8; i++) CudaMemory.storage(DType.F64, 4, memory(0x10_000 + 64L * i, 32));
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (freed.size() < 8 && System.nanoTime() < deadline) {
      System.gc();
      Thread.sleep(20);
    }
    assertEquals(8, freed.size(), "every unreachable device storage is freed by the cleaner: " + freed);
  }

  @Test
  void closingTheScopeFreesAndLaterAccessThrows() {
    CudaMemory m = memory(0x3000, 12);
    Storage st;
    try (MemoryScope scope = MemoryScope.open()) {
      st = CudaMemory.storage(DType.I32, 3, m);
    }
    assertTrue(m.isReleased());
    assertEquals(List.of(0x3000L), freed);
    assertThrows(IllegalStateException.class, st::memory);
    m.release();
    assertEquals(1, freed.size());
  }

  @Test
  void negativeSizeIsRejected() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> memory(0, -1));
    assertEquals("CudaMemory: byteSize must be >= 0, got -1", e.getMessage());
  }
}
