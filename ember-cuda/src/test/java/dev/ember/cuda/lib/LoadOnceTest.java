package dev.ember.cuda.lib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The load-once holder behind CudaDriver, NVRTC, cuBLASLt and cuDNN. */
class LoadOnceTest {
  @Test
  void aLoadedLibraryIsLoadedOnceAndShared() throws InterruptedException {
    AtomicInteger loads = new AtomicInteger();
    Object lib = new Object();
    LoadOnce<Object> once = new LoadOnce<>(() -> {
      loads.incrementAndGet();
      return lib;
    });
    CountDownLatch start = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    List<Object> seen = java.util.Collections.synchronizedList(new ArrayList<>());
    for (int i = 0; i < 8; i++) {
      threads.add(Thread.ofPlatform().start(() -> {
        try {
          start.await();
        } catch (InterruptedException e) {
          throw new IllegalStateException(e);
        }
        seen.add(once.get());
      }));
    }
    start.countDown();
    for (Thread t : threads) t.join();
    assertEquals(1, loads.get());
    for (Object o : seen) assertSame(lib, o);
    assertSame(lib, once.tryGet().orElseThrow());
  }

  @Test
  void aMissingLibraryIsLookedForOnceAndEachCallerGetsItsOwnException() {
    AtomicInteger loads = new AtomicInteger();
    LoadOnce<Object> once = new LoadOnce<>(() -> {
      loads.incrementAndGet();
      throw new CudaUnavailableException("CUDA: cuDNN (libcudnn.so) was not found");
    });
    CudaUnavailableException a = assertThrows(CudaUnavailableException.class, once::get);
    CudaUnavailableException b = assertThrows(CudaUnavailableException.class, once::get);
    assertNotSame(a, b); // each with the caller's own stack
    assertEquals("CUDA: cuDNN (libcudnn.so) was not found", b.getMessage());
    assertTrue(once.tryGet().isEmpty());
    assertEquals(1, loads.get());
  }

  @Test
  void anotherFailureIsNotKeptAndTheNextCallLoadsAgain() {
    AtomicInteger loads = new AtomicInteger();
    LoadOnce<String> once = new LoadOnce<>(() -> {
      if (loads.incrementAndGet() == 1) throw new CudaException("cudnnCreate", 1001, "CUDNN_STATUS_NOT_INITIALIZED");
      return "loaded";
    });
    assertThrows(CudaException.class, once::get);
    assertEquals("loaded", once.get());
    assertEquals("loaded", once.get());
    assertEquals(2, loads.get());
  }
}
