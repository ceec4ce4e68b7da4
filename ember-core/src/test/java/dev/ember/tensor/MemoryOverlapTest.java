package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;

/**
 * In-place binary ops and copy_ refuse, as PyTorch 1.13, an operand that partly overlaps the written tensor and a
 * written tensor with several elements at one location; the same view and disjoint views of one storage are
 * allowed. The result never depends on whether grad is recorded. Expected values from PyTorch 1.13 (the line in
 * each comment, {@code t = torch.tensor([1., 2, 3, 4])}).
 */
class MemoryOverlapTest {
  private static Tensor y() {
    return Tensor.of(new double[] {1, 2, 3, 4}, 4);
  }

  /** The write on y() as a plain tensor and on a non-leaf that requires grad (y * 1): the same values. */
  private static void bothWays(double[] expected, Consumer<Tensor> write) {
    Tensor plain = y();
    write.accept(plain);
    assertArrayEquals(expected, plain.toDoubleArray(), "without grad");
    Tensor leaf = y().requiresGrad(true);
    Tensor recorded = leaf.mul(1);
    write.accept(recorded);
    assertArrayEquals(expected, recorded.toDoubleArray(), "recorded");
    recorded.sum().backward(); // the recorded write differentiates
  }

  /** The write on y() as a plain tensor and on a recorded non-leaf: the exact message, nothing written. */
  private static void refused(String expected, Consumer<Tensor> write) {
    for (boolean grad : new boolean[] {false, true}) {
      Tensor t = grad ? y().requiresGrad(true).mul(1) : y();
      int version = t.version();
      TensorArgumentException e = assertThrows(TensorArgumentException.class, () -> write.accept(t));
      assertEquals(expected, e.getMessage(), grad ? "recorded" : "without grad");
      assertArrayEquals(new double[] {1, 2, 3, 4}, t.toDoubleArray());
      assertEquals(version, t.version());
    }
  }

  @Test
  void partialOverlapIsRefused() {
    // t[1:].mul_(t[:3]): RuntimeError: unsupported operation: some elements of the input tensor and the written-to
    // tensor refer to a single memory location. Please clone() the tensor before performing the operation.
    // (Ember gave [1, 2, 6, 24] without grad and [1, 2, 6, 12] recording)
    refused("mul_: some elements of other and of the written-to tensor refer to a single memory location (storage"
        + " elements 0..2 and 1..3): self=[3], other=[3]; hint: clone() other before the in-place operation",
        t -> t.narrow(0, 1, 3).mul_(t.narrow(0, 0, 3)));
    refused("add_: some elements of other and of the written-to tensor refer to a single memory location (storage"
        + " elements 1..3 and 0..2): self=[3], other=[3]; hint: clone() other before the in-place operation",
        t -> t.narrow(0, 0, 3).add_(t.narrow(0, 1, 3)));
    // t[1:].copy_(t[:3]): the same RuntimeError
    refused("copy_: some elements of src and of the written-to tensor refer to a single memory location (storage"
        + " elements 0..2 and 1..3): self=[3], src=[3]; hint: clone() src before the in-place operation",
        t -> t.narrow(0, 1, 3).copy_(t.narrow(0, 0, 3)));
    // t.add_(t[1]) (a broadcast element of t) and t.view(2, 2).add_(t.view(2, 2).t()) (all elements, another
    // order): the same RuntimeError
    refused("add_: some elements of other and of the written-to tensor refer to a single memory location (storage"
        + " elements 1..1 and 0..3): self=[4], other=[]; hint: clone() other before the in-place operation",
        t -> t.add_(t.select(0, 1)));
    refused("sub_: some elements of other and of the written-to tensor refer to a single memory location (storage"
        + " elements 0..3 and 0..3): self=[2, 2], other=[2, 2]; hint: clone() other before the in-place operation",
        t -> t.view(2, 2).sub_(t.view(2, 2).t()));
  }

  @Test
  void theSameViewIsAllowed() {
    bothWays(new double[] {2, 4, 6, 8}, t -> t.add_(t)); // t.add_(t) -> [2, 4, 6, 8]
    bothWays(new double[] {1, 4, 9, 16}, t -> t.view(2, 2).mul_(t.view(2, 2))); // t.view(2, 2).mul_(t.view(2, 2))
    bothWays(new double[] {1, 2, 3, 4}, t -> t.narrow(0, 1, 2).copy_(t.narrow(0, 1, 2))); // t[1:3].copy_(t[1:3])
  }

  @Test
  void disjointViewsOfOneStorageAreAllowed() {
    bothWays(new double[] {4, 6, 3, 4}, t -> t.narrow(0, 0, 2).add_(t.narrow(0, 2, 2))); // t[:2].add_(t[2:])
    bothWays(new double[] {1, 2, 1, 2}, t -> t.narrow(0, 2, 2).copy_(t.narrow(0, 0, 2))); // t[2:].copy_(t[:2])
    // interleaved: the ranges intersect, no element is shared; t[1::2].mul_(t[0::2]) -> [1, 2, 3, 12]
    bothWays(new double[] {1, 2, 3, 12}, t -> t.slice(0, 1, 4, 2).mul_(t.slice(0, 0, 4, 2)));
  }

  /**
   * Views with gaps whose elements do overlap: PyTorch cannot tell from the ranges and lets the write run in its
   * kernel's order (x = torch.arange(16.).view(4, 4); x[:, 1:].mul_(x[:, :3]) gives row 1 [4, 20, 120, 840], each
   * element reading one already written); Ember reads the operand's old values, with or without grad.
   */
  @Test
  void overlappingViewsWithGapsReadTheOperandsOldValues() {
    for (boolean grad : new boolean[] {false, true}) {
      Tensor x = Tensor.arange(0, 16, 1, DType.F64).reshape(4, 4);
      Tensor w = grad ? x.requiresGrad(true).mul(1) : x;
      w.narrow(1, 1, 3).mul_(w.narrow(1, 0, 3));
      assertArrayEquals(new double[] {4, 20, 30, 42}, w.select(0, 1).toDoubleArray(), "grad " + grad);
    }
    Tensor x = Tensor.arange(0, 16, 1, DType.F64).reshape(4, 4);
    x.narrow(1, 1, 3).copy_(x.narrow(1, 0, 3));
    assertArrayEquals(new double[] {4, 4, 5, 6}, x.select(0, 1).toDoubleArray());
  }

  @Test
  void aWrittenTensorWithSeveralElementsAtOneLocationIsRefused() {
    // torch.zeros(3, 1).expand(3, 2).add_(1), and .copy_(torch.ones(3, 2)): RuntimeError: unsupported operation:
    // more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor
    // before performing the operation.
    for (boolean grad : new boolean[] {false, true}) {
      Tensor z = grad ? Tensor.zeros(DType.F64, 3, 1).requiresGrad(true).mul(1) : Tensor.zeros(DType.F64, 3, 1);
      assertEquals("add_: more than one element of the written-to tensor refers to a single memory location (strides"
          + " [1, 0]): self=[3, 2], other=[]; hint: clone() it before the in-place operation",
          assertThrows(TensorArgumentException.class, () -> z.expand(3, 2).add_(1)).getMessage());
      assertEquals("copy_: more than one element of the written-to tensor refers to a single memory location (strides"
          + " [1, 0]): self=[3, 2], src=[3, 2]; hint: clone() it before the in-place operation",
          assertThrows(TensorArgumentException.class, () -> z.expand(3, 2).copy_(Tensor.ones(DType.F64, 3, 2)))
              .getMessage());
      assertArrayEquals(new double[3], z.toDoubleArray());
    }
    // torch.zeros(3, 1).expand(3, 2).exp_() and .clamp_(1, 2): the same RuntimeError (without it, each element was
    // written twice: exp applied twice gave e, not 1)
    Tensor column = Tensor.zeros(DType.F64, 3, 1);
    assertTrue(assertThrows(TensorArgumentException.class, () -> column.expand(3, 2).exp_()).getMessage()
        .startsWith("exp_: more than one element of the written-to tensor refers to a single memory location"));
    assertTrue(assertThrows(TensorArgumentException.class, () -> column.expand(3, 2).clamp_(1, 2)).getMessage()
        .startsWith("clamp_: more than one element of the written-to tensor refers to a single memory location"));
    assertArrayEquals(new double[3], column.toDoubleArray());
    try (Grad ignored = Grad.off()) { // fill_ writes one value: allowed, as PyTorch's
      Tensor z = Tensor.zeros(DType.F64, 3, 1);
      z.expand(3, 2).fill_(2);
      assertArrayEquals(new double[] {2, 2, 2}, z.toDoubleArray());
    }
  }

  @Test
  void statusFollowsPyTorchsRules() {
    Tensor t = Tensor.arange(0, 16, 1, DType.F32).reshape(4, 4);
    assertEquals(MemoryOverlap.Status.FULL, MemoryOverlap.of(t, t.view(16).view(4, 4)));
    assertEquals(MemoryOverlap.Status.FULL, MemoryOverlap.of(t, t.unsqueeze(0))); // size-1 dims aside
    assertEquals(MemoryOverlap.Status.NO, MemoryOverlap.of(t, t.clone()));
    assertEquals(MemoryOverlap.Status.NO, MemoryOverlap.of(t.narrow(0, 0, 2), t.narrow(0, 2, 2)));
    assertEquals(MemoryOverlap.Status.NO, MemoryOverlap.of(t, t.narrow(0, 0, 0)));
    assertEquals(MemoryOverlap.Status.PARTIAL, MemoryOverlap.of(t, t.t())); // dense, another order
    assertEquals(MemoryOverlap.Status.PARTIAL, MemoryOverlap.of(t.narrow(0, 1, 2), t.narrow(0, 0, 2)));
    assertEquals(MemoryOverlap.Status.TOO_HARD, MemoryOverlap.of(t.narrow(1, 1, 3), t.narrow(1, 0, 3)));
    assertEquals(MemoryOverlap.Status.TOO_HARD, MemoryOverlap.of(t.slice(1, 0, 4, 2), t.slice(1, 1, 4, 2)));
    assertTrue(MemoryOverlap.internal(t.narrow(0, 0, 1).expand(4, 4)));
    assertFalse(MemoryOverlap.internal(t.narrow(0, 0, 1).expand(1, 4)));
  }
}
