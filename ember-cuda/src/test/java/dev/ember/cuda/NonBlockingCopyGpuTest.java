package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.cuda.memory.PinnedStagingPool;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.Linear;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.loss.CrossEntropyLoss;
import dev.ember.optim.SGD;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.MemoryScope;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@code x.to(cuda, true)} on a GPU: pinned staging and a copy stream ordered against the compute stream. Skips
 * without a GPU. Each test prints one line of what it saw, for the GPU check's log.
 */
class NonBlockingCopyGpuTest {
  private Device cuda;
  private CudaBackend backend;

  @BeforeEach
  void gpu() {
    Gpu.assumeDevice();
    cuda = Device.cuda(0);
    backend = (CudaBackend) cuda.backend();
  }

  @Test
  void largeTensorsRoundTripExactly() {
    Generator g = new Generator(1);
    Tensor big = Tensor.randn(g, 64, 1 << 18); // 64 MiB of float32
    Tensor y = big.to(cuda, true);
    assertEquals(cuda, y.device());
    assertArrayEquals(big.toFloatArray(), y.cpu().toFloatArray());
    Tensor longs = Tensor.randint(g, -1_000_000_000_000L, 1_000_000_000_000L, 3 << 20); // 24 MiB of int64
    assertArrayEquals(longs.toLongArray(), longs.to(cuda, true).toLongArray());
    // strided and odd-sized: staged contiguous on the host, same values as the blocking copy
    Tensor t = Tensor.randn(g, 1001, 37).t();
    assertArrayEquals(t.to(cuda).cpu().toFloatArray(), t.to(cuda, true).cpu().toFloatArray());
    assertArrayEquals(t.contiguous().toFloatArray(), t.to(cuda, true).cpu().toFloatArray());
    System.out.println("NonBlockingCopyGpuTest: 64 MiB f32, 24 MiB i64 and a transposed [37, 1001] round-trip exactly; "
        + backend.asyncCopies().pool());
  }

  @Test
  void kernelsRightAfterTheCopySeeItsValuesAndTheHostArrayIsFreeAtOnce() {
    Generator g = new Generator(2);
    int n = 4 << 20;
    for (int round = 0; round < 8; round++) {
      Tensor x = Tensor.randn(g, n);
      float[] want = x.toFloatArray();
      Tensor busy = Tensor.randn(g, 2048, 2048).to(cuda);
      for (int k = 0; k < 4; k++) busy = busy.matmul(busy).mul(1e-3); // the compute stream busy for a while
      Tensor d = x.to(cuda, true);
      Tensor doubled = d.mul(2.0); // queued at once: must wait for the copy
      java.util.Arrays.fill(x.storage().floats(), Float.NaN); // the host array is free as soon as to() returns
      float[] got = doubled.cpu().toFloatArray();
      for (int i = 0; i < n; i++) {
        if (got[i] != want[i] * 2f) {
          throw new AssertionError("round " + round + ": element " + i + " is " + got[i] + ", want " + want[i] * 2f);
        }
      }
      busy.sum().item();
    }
    System.out.println("NonBlockingCopyGpuTest: 8 rounds of a 16 MiB copy behind 4 queued 2048^2 matmuls, read at once"
        + " by a kernel: no race");
  }

  @Test
  void theCopyWaitsForQueuedKernelsThatStillReadTheBlockItOverwrites() {
    Generator g = new Generator(3);
    backend.allocator().emptyCache(); // no other cached block of a's size class to reuse
    Tensor a = Tensor.randn(g, 4096, 4600).to(cuda); // 72 MiB, a size no other test uses
    double reference = a.sum().item();
    long address = a.storage().memory().address();
    Tensor busy = null;
    for (int k = 0; k < 6; k++) busy = a.t().matmul(a).mul(1e-3); // tens of ms of queued work reading a
    Tensor sum = a.sum(); // queued behind them, reads a
    a.storage().memory().release(); // a's block is free for work queued from now on
    Tensor x = Tensor.randn(g, 4096, 4600);
    Tensor y = x.to(cuda, true);
    boolean reused = y.storage().memory().address() == address;
    assertEquals(reference, sum.item(), 0.0, "the sum read a's values, not the copy's");
    assertArrayEquals(x.toFloatArray(), y.cpu().toFloatArray());
    busy.sum().item();
    System.out.println("NonBlockingCopyGpuTest: the copy into a's " + (reused ? "reused" : "NOT reused (check weaker)")
        + " block waited for the 7 kernels queued on it");
    assertTrue(reused, "the test needs the copy's destination to be a's freed block");
  }

  @Test
  void aPinnedBufferIsReusedOnceItsCopyHasCompleted() {
    PinnedStagingPool pool = backend.asyncCopies().pool();
    Tensor x = Tensor.randn(new Generator(4), 3 << 18); // 3 MiB: the 4 MiB bin
    x.to(cuda, true);
    cuda.synchronize();
    long allocations = pool.hostAllocations();
    long reuses = pool.reuses();
    for (int i = 0; i < 5; i++) {
      Tensor y = x.to(cuda, true);
      cuda.synchronize();
      assertArrayEquals(x.toFloatArray(), y.cpu().toFloatArray());
    }
    assertEquals(allocations, pool.hostAllocations(), "no new pinned buffer once the copies have completed");
    assertEquals(reuses + 5, pool.reuses());
    // copies queued back to back may need more buffers, but every one holds its own values
    List<Tensor> hosts = new ArrayList<>();
    List<Tensor> devs = new ArrayList<>();
    for (int i = 0; i < 6; i++) {
      Tensor h = Tensor.full(i, DType.F32, 3 << 18);
      hosts.add(h);
      devs.add(h.to(cuda, true));
    }
    for (int i = 0; i < 6; i++) assertArrayEquals(hosts.get(i).toFloatArray(), devs.get(i).cpu().toFloatArray());
    System.out.println("NonBlockingCopyGpuTest: " + pool);
  }

  private List<Double> train(Tensor[][] batches, boolean nonBlocking) throws Exception {
    Generator g = new Generator(0);
    Module model = new Sequential(new Linear(784, 128, true, g), new ReLU(), new Linear(128, 10, true, g));
    model.to(cuda);
    SGD opt = new SGD(model.parameters(), 0.05);
    CrossEntropyLoss loss = new CrossEntropyLoss();
    List<Double> losses = new ArrayList<>();
    ExecutorService ahead = Executors.newSingleThreadExecutor();
    try {
      // as PinnedBatches: batch i+1 goes to the GPU on another thread while step i is queued
      Future<Tensor[]> next = nonBlocking ? ahead.submit(() -> move(batches[0], true)) : null;
      for (int i = 0; i < batches.length; i++) {
        Tensor[] d;
        if (nonBlocking) {
          d = next.get();
          int k = i + 1;
          if (k < batches.length) next = ahead.submit(() -> move(batches[k], true));
        } else {
          d = move(batches[i], false);
        }
        try (MemoryScope step = MemoryScope.open()) {
          opt.zeroGrad();
          Tensor l = loss.forward(model.call(d[0]), d[1]);
          l.backward();
          opt.step();
          losses.add(l.item());
        }
      }
    } finally {
      ahead.shutdownNow();
    }
    return losses;
  }

  private Tensor[] move(Tensor[] hostBatch, boolean nonBlocking) {
    return new Tensor[] {hostBatch[0].to(cuda, nonBlocking), hostBatch[1].to(cuda, nonBlocking)};
  }

  @Test
  void aTrainingLoopGivesTheSameLossesWithBatchesMovedAhead() throws Exception {
    Generator g = new Generator(5);
    Tensor[][] batches = new Tensor[40][];
    for (int i = 0; i < batches.length; i++) {
      batches[i] = new Tensor[] {Tensor.randn(g, 64, 784), Tensor.randint(g, 0, 10, 64)};
    }
    List<Double> blocking = train(batches, false);
    List<Double> ahead = train(batches, true);
    assertEquals(blocking, ahead);
    System.out.println("NonBlockingCopyGpuTest: 40 SGD steps of a 784-128-10 MLP, losses identical with batches moved"
        + " ahead on another thread (first " + blocking.get(0) + ", last " + blocking.get(blocking.size() - 1) + ")");
  }
}
