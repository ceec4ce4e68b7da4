package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
import dev.ember.cuda.kernels.CudaIndexChecks;
import dev.ember.cuda.testing.Gpu;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

/**
 * On a GPU (skipped without one): {@link Backend#checkIndexRange} is deferred on CUDA. The call returns without an
 * exception; the first failed check is raised at the next synchronizing point (synchronize, a copy to the host),
 * once, naming the position and value; later reads succeed. Cross entropy, nll_loss and embedding with device
 * targets raise their typed exceptions there too, and give the CPU's loss (to rounding) when the targets are valid.
 */
class IndexCheckGpuTest {
  private static Backend.IndexRangeError error(String op) {
    return (position, value) -> new IllegalArgumentException(op + ": value " + value + " at position " + position);
  }

  @Test
  void aFailedCheckIsRaisedAtTheNextSynchronizeOnce() {
    Gpu.assumeDevice();
    Device cuda = Device.cuda(0);
    Backend b = cuda.backend();
    cuda.synchronize(); // nothing pending from other tests
    Tensor i64 = Tensor.of(new long[] {0, 1, -100, 4, 5, 2}, 2, 3).to(cuda);
    b.checkIndexRange(i64, 0, 5, -100, error("a")); // 5 at position 4
    b.checkIndexRange(i64.t(), 0, 5, -100, error("t")); // [3, 2] view: 5 at row-major position 3 ([1, 1])
    b.checkIndexRange(i64.to(DType.I32), 0, 6, -100, error("ok")); // all in range or allowed
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, cuda::synchronize);
    System.out.println("IndexCheckGpuTest deferred: " + e.getMessage() + " suppressed "
        + java.util.Arrays.toString(e.getSuppressed()));
    assertEquals("a: value 5 at position 4", e.getMessage());
    assertEquals(1, e.getSuppressed().length);
    assertEquals("t: value 5 at position 3", e.getSuppressed()[0].getMessage());
    cuda.synchronize(); // raised once: nothing left
    assertArrayEquals(new long[] {0, 1, -100, 4, 5, 2}, i64.toLongArray(), "the device still works");
  }

  @Test
  void aCopyToTheHostRaisesAndMoreChecksThanSlotsStillCount() {
    Gpu.assumeDevice();
    Device cuda = Device.cuda(0);
    Backend b = cuda.backend();
    cuda.synchronize();
    Tensor ok = Tensor.of(new long[] {3, 1, 0}, 3).to(cuda);
    for (int k = 0; k < CudaIndexChecks.CAPACITY + 10; k++) b.checkIndexRange(ok, 0, 4, 0, error("ok" + k));
    Tensor bad = Tensor.of(new int[] {3, -7, 0}, 3).to(cuda);
    b.checkIndexRange(bad, 0, 4, 0, error("bad"));
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, ok::toLongArray);
    assertEquals("bad: value -7 at position 1", e.getMessage());
    assertArrayEquals(new long[] {3, 1, 0}, ok.toLongArray());
  }

  @Test
  void lossesAndEmbeddingRaiseTheirTypedErrorsAtTheNextRead() {
    Gpu.assumeDevice();
    Device cuda = Device.cuda(0);
    cuda.synchronize();
    Tensor logits = Tensor.randn(new Generator(1), 4, 5);
    Tensor target = Tensor.of(new long[] {0, 4, -100, 2}, 4);
    for (Reduction r : new Reduction[] {Reduction.MEAN, Reduction.SUM}) {
      double cpu = F.crossEntropy(logits, target, null, -100, r, 0.1).item();
      double gpu = F.crossEntropy(logits.to(cuda), target.to(cuda), null, -100, r, 0.1).item();
      System.out.println("IndexCheckGpuTest cross_entropy " + r + ": cpu " + cpu + " cuda " + gpu);
      assertEquals(cpu, gpu, 1e-5 * Math.max(1, Math.abs(cpu)));
    }
    // 5 is one past the last class: the queued gather reads next to the row (inside the block), the check fails
    Tensor badTarget = Tensor.of(new long[] {0, 5, -100, 2}, 4).to(cuda);
    Tensor loss = F.crossEntropy(logits.to(cuda), badTarget, null, -100, Reduction.MEAN, 0);
    TensorArgumentException e = assertThrows(TensorArgumentException.class, loss::item);
    System.out.println("IndexCheckGpuTest cross_entropy error: " + e.getMessage());
    assertTrue(e.getMessage().contains("cross_entropy") && e.getMessage().contains("target[1] = 5"), e.getMessage());
    Tensor nll = F.nllLoss(logits.to(cuda), badTarget, null, -100, Reduction.SUM);
    e = assertThrows(TensorArgumentException.class, cuda::synchronize);
    assertTrue(e.getMessage().contains("nll_loss") && e.getMessage().contains("target[1] = 5"), e.getMessage());
    nll.item(); // raised once
    Tensor w = Tensor.randn(new Generator(2), 6, 3).to(cuda);
    Tensor rows = F.embedding(Tensor.of(new long[] {1, 6}, 2).to(cuda), w, null, null, 2);
    e = assertThrows(TensorArgumentException.class, rows::toFloatArray);
    System.out.println("IndexCheckGpuTest embedding error: " + e.getMessage());
    assertTrue(e.getMessage().contains("embedding") && e.getMessage().contains("index out of range (6"),
        e.getMessage());
  }
}
