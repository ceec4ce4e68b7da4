package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A full device: release the cache and retry once, then {@link CudaOutOfMemoryError} with PyTorch's message. */
class OutOfMemoryTest {
  static final long KiB = 1L << 10;
  static final long MiB = 1L << 20;
  static final long S = 3;

  @ParameterizedTest(name = "device answers full by {0}")
  @ValueSource(strings = {"returning 0", "throwing"})
  void fullDeviceReleasesTheCacheAndRetries(String how) {
    FakeRawMemory raw = new FakeRawMemory(30 * MiB, how.equals("throwing"));
    CachingAllocator alloc = new CachingAllocator(0, raw, new FakeStreamEvents());
    alloc.free(alloc.allocate(5 * MiB, S)); // caches a 20 MiB segment
    Block b = alloc.allocate(21 * MiB, S); // the cached 20 MiB are too small, and 22 MiB fit only without them
    assertEquals(22 * MiB, b.size());
    assertEquals(1, raw.failedMallocs);
    assertEquals(1, raw.freeCalls);
    MemoryStats s = alloc.stats();
    assertEquals(1, s.numAllocRetries());
    assertEquals(0, s.numOoms());
    assertEquals(22 * MiB, s.reservedBytes().current());
  }

  @ParameterizedTest(name = "device answers full by {0}")
  @ValueSource(strings = {"returning 0", "throwing"})
  void stillFullAfterTheRetryThrowsWithTheNumbers(String how) {
    FakeRawMemory raw = new FakeRawMemory(30 * MiB, how.equals("throwing"));
    CachingAllocator alloc = new CachingAllocator(0, raw, new FakeStreamEvents());
    Block big = alloc.allocate(15 * MiB, S); // a 16 MiB segment, whole
    Block small = alloc.allocate(4 * KiB, S); // a 2 MiB segment, split
    CudaOutOfMemoryError e = assertThrows(CudaOutOfMemoryError.class, () -> alloc.allocate(13 * MiB, S));
    assertEquals("CUDA out of memory. Tried to allocate 14.00 MiB. GPU 0 has a total capacity of 30.00 MiB of"
        + " which 12.00 MiB is free. Ember has 16.00 MiB allocated and 18.00 MiB reserved; 2.00 MiB of the"
        + " reserved memory is free but split into pieces too small for this request (cached memory was already"
        + " released and the allocation retried). Free tensors that are no longer needed, use smaller batches, or"
        + " allocate large buffers early to reduce fragmentation.", e.getMessage());
    assertEquals(14 * MiB, e.triedBytes());
    assertEquals(12 * MiB, e.deviceFree());
    assertEquals(30 * MiB, e.deviceTotal());
    assertEquals(16 * MiB + 4 * KiB, e.allocatedBytes());
    assertEquals(18 * MiB, e.reservedBytes());
    assertEquals(0, e.device());
    MemoryStats s = alloc.stats();
    assertEquals(1, s.numOoms());
    assertEquals(1, s.numAllocRetries());
    assertEquals(2, raw.failedMallocs);
    // The allocator is intact: once memory is freed the same request succeeds.
    alloc.free(big);
    Block b = alloc.allocate(13 * MiB, S);
    assertEquals(big.ptr(), b.ptr(), "served from the freed 16 MiB block, split");
    alloc.free(small);
    alloc.free(b);
  }

  @Test
  void deviceThatCannotReportItsMemoryStillGetsTheOutOfMemoryError() {
    IllegalStateException infoFailure = new IllegalStateException("cuMemGetInfo: CUDA_ERROR_LAUNCH_FAILED");
    FakeRawMemory raw = new FakeRawMemory(4 * MiB) {
      @Override
      public long[] memInfo() {
        throw infoFailure;
      }
    };
    CachingAllocator alloc = new CachingAllocator(2, raw, new FakeStreamEvents());
    CudaOutOfMemoryError e = assertThrows(CudaOutOfMemoryError.class, () -> alloc.allocate(5 * MiB, S));
    assertEquals("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 2 could not report its free memory. Ember has 0"
        + " bytes allocated and 0 bytes reserved;", e.getMessage().substring(0, e.getMessage().indexOf(';') + 1));
    assertEquals(-1, e.deviceTotal());
    assertEquals(List.of(infoFailure), List.of(e.getSuppressed()));
  }

  @Test
  void memoryFractionRefusesSegmentsBeyondItAndReleasesTheCacheFirst() {
    FakeRawMemory raw = new FakeRawMemory(100 * MiB);
    CachingAllocator alloc = new CachingAllocator(0, raw, new FakeStreamEvents());
    alloc.setMemoryFraction(0.5);
    alloc.free(alloc.allocate(5 * MiB, S)); // caches a 20 MiB segment
    Block b = alloc.allocate(24 * MiB, S); // 20 + 24 reserved, under the 50 MiB limit
    assertEquals(0, alloc.stats().numAllocRetries());
    Block d = alloc.allocate(21 * MiB, S); // 44 + 22 is over: the cached 20 MiB go back, then 24 + 22 fits
    assertEquals(22 * MiB, d.size());
    assertEquals(1, alloc.stats().numAllocRetries());
    assertEquals(3, raw.mallocCalls, "the refused attempt never reached the device");
    assertEquals(1, raw.freeCalls);
    CudaOutOfMemoryError e = assertThrows(CudaOutOfMemoryError.class, () -> alloc.allocate(MiB + 1, S));
    assertEquals("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 100.00 MiB of"
        + " which 54.00 MiB is free; Ember may reserve at most 50.00 MiB of it (memory fraction 0.50). Ember has"
        + " 46.00 MiB allocated and 46.00 MiB reserved;", e.getMessage().substring(0, e.getMessage().indexOf(';',
            e.getMessage().indexOf("Ember has")) + 1));
    assertEquals(50 * MiB, e.allowedBytes());
    alloc.setMemoryFraction(1);
    alloc.free(alloc.allocate(MiB + 1, S));
    alloc.free(b);
    alloc.free(d);
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> alloc.setMemoryFraction(0));
    assertEquals("CachingAllocator.setMemoryFraction: fraction must be in (0, 1], got 0.0", bad.getMessage());
    assertThrows(IllegalArgumentException.class, () -> alloc.setMemoryFraction(Double.NaN));
  }

  @Test
  void sizesAreWrittenAsPyTorchWritesThem() {
    assertEquals("512 bytes", CudaOutOfMemoryError.formatSize(512));
    assertEquals("1024 bytes", CudaOutOfMemoryError.formatSize(1024));
    assertEquals("1.50 KiB", CudaOutOfMemoryError.formatSize(1536));
    assertEquals("1024.00 KiB", CudaOutOfMemoryError.formatSize(MiB));
    assertEquals("20.00 MiB", CudaOutOfMemoryError.formatSize(20 * MiB));
    assertEquals("2.00 GiB", CudaOutOfMemoryError.formatSize(2L << 30));
    assertEquals("79.10 GiB", CudaOutOfMemoryError.formatSize((long) (79.1 * (1L << 30))));
  }

  @Test
  void gigabyteMessageReadsLikeTheBrief() {
    long gib = 1L << 30;
    CudaOutOfMemoryError e = new CudaOutOfMemoryError(0, 2 * gib, (long) (1.2 * gib), (long) (79.1 * gib),
        (long) (70.3 * gib), 75 * gib);
    assertEquals("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of"
        + " which 1.20 GiB is free. Ember has 70.30 GiB allocated and 75.00 GiB reserved; 4.70 GiB of the reserved"
        + " memory is free but split into pieces too small for this request (cached memory was already released and"
        + " the allocation retried). Free tensors that are no longer needed, use smaller batches, or allocate large"
        + " buffers early to reduce fragmentation.", e.getMessage());
  }
}
