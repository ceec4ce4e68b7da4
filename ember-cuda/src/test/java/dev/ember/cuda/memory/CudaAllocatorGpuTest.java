package dev.ember.cuda.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.lib.CudaDriver;
import dev.ember.cuda.runtime.CudaContext;
import dev.ember.cuda.testing.Gpu;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The caching allocator over a real device, through {@link CudaRawMemory} and {@link CudaStreamEvents}; skipped
 * where there is no GPU. Each test uses an allocator of its own and empties its cache at the end.
 */
class CudaAllocatorGpuTest {
  static final long MiB = 1L << 20;

  CudaContext ctx;
  CudaDriver d;
  CudaStreamEvents events;
  CachingAllocator alloc;

  @BeforeEach
  void gpu() {
    Gpu.assumeDevice();
    ctx = CudaContext.of(0);
    ctx.makeCurrent();
    d = ctx.driver();
    events = new CudaStreamEvents(ctx);
    alloc = new CachingAllocator(0, new CudaRawMemory(ctx), events);
  }

  @AfterEach
  void release() {
    if (alloc != null) {
      ctx.synchronize();
      alloc.emptyCache();
      assertEquals(0, alloc.stats().reservedBytes().current(), "a test left a block allocated");
      events.close();
    }
  }

  @Test
  void blocksHoldDataAndAreReusedWithoutADriverCall() {
    long s = ctx.stream();
    Block a = alloc.allocate(3 * MiB, s);
    Block b = alloc.allocate(1000 * 4, s); // small pool; another segment
    float[] x = new float[1000];
    for (int i = 0; i < x.length; i++) x[i] = i * 0.25f - 3;
    d.memcpyHtoDSync(b.ptr(), MemorySegment.ofArray(x), 4L * x.length);
    float[] back = new float[x.length];
    d.memcpyDtoHSync(MemorySegment.ofArray(back), b.ptr(), 4L * x.length);
    assertArrayEquals(x, back);
    d.memsetD8(a.ptr() + a.size() - 512, 7, 512, s); // the block's last bytes are the device's
    alloc.free(a);
    Block c = alloc.allocate(3 * MiB, s);
    assertEquals(a.ptr(), c.ptr());
    assertEquals(2, alloc.stats().numDeviceAlloc());
    alloc.free(b);
    alloc.free(c);
  }

  @Test
  void emptyCacheGivesMemoryBackToTheDevice() {
    long before = d.memInfo()[0];
    Block a = alloc.allocate(512 * MiB, ctx.stream());
    assertTrue(d.memInfo()[0] <= before - 512 * MiB, "the segment is taken from the device");
    alloc.free(a);
    alloc.emptyCache();
    assertTrue(d.memInfo()[0] >= before - 64 * MiB, "the segment went back: free " + d.memInfo()[0]
        + " bytes, before " + before);
  }

  @Test
  void blockUsedOnAnotherStreamIsReusedOnceThatStreamIsDone() {
    long side = d.streamCreate(true);
    try {
      Block a = alloc.allocate(12 * MiB, ctx.stream());
      d.memsetD8(a.ptr(), 1, a.size(), side);
      alloc.recordStream(a, side);
      alloc.free(a);
      assertEquals(1, alloc.stats().active().current(), "waiting for the side stream's event");
      d.streamSynchronize(side);
      Block b = alloc.allocate(12 * MiB, ctx.stream());
      assertEquals(a.ptr(), b.ptr(), "the side stream finished: the block is reused");
      assertEquals(1, events.pooled(), "the event went back to the pool");
      alloc.free(b);
    } finally {
      d.streamDestroy(side);
    }
  }

  @Test
  void requestBeyondTheDeviceThrowsCudaOutOfMemoryErrorAfterOneRetry() {
    long total = d.memInfo()[1];
    CudaOutOfMemoryError e = assertThrows(CudaOutOfMemoryError.class, () -> alloc.allocate(total + MiB, 0));
    assertTrue(e.getMessage().startsWith("CUDA out of memory. Tried to allocate "), e.getMessage());
    assertEquals(total, e.deviceTotal());
    MemoryStats s = alloc.stats();
    assertEquals(1, s.numAllocRetries());
    assertEquals(1, s.numOoms());
    Block ok = alloc.allocate(MiB, 0); // the context survived the failure
    alloc.free(ok);
  }

  @Test
  void theProcessSharesOneAllocatorPerDevice() {
    assertSame(CudaAllocators.of(ctx), CudaAllocators.of(CudaContext.of(0)));
    assertEquals(0, CudaAllocators.of(ctx).device());
  }
}
