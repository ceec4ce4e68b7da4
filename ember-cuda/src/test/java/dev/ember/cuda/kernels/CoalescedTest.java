package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The launch geometry: merged axes, the element offsets it reaches, blocks beyond MAXR, and the Geo bytes. */
class CoalescedTest {
  @Test
  void contiguousOperandsBecomeOneAxis() {
    Tensor a = Tensor.zeros(2, 3, 4);
    Coalesced c = Coalesced.of(a, a);
    assertArrayEquals(new int[] {24}, c.shape());
    assertArrayEquals(new int[] {1}, c.strides()[0]);
  }

  @Test
  void broadcastAndTransposedOperandsKeepTheirAxes() {
    Tensor out = Tensor.zeros(5, 7);
    Tensor bias = Views.expand(Tensor.zeros(7), new int[] {5, 7});
    Coalesced c = Coalesced.of(out, bias);
    assertArrayEquals(new int[] {5, 7}, c.shape());
    assertArrayEquals(new int[] {0, 1}, c.strides()[1]);
    Tensor t = Views.transpose(Tensor.zeros(7, 5), 0, 1);
    Coalesced ct = Coalesced.of(out, t);
    assertArrayEquals(new int[] {1, 5}, ct.strides()[1]);
  }

  @Test
  void sizeOneAxesAndScalarsAreDropped() {
    Tensor a = Tensor.zeros(1, 6, 1);
    Coalesced c = Coalesced.of(a);
    assertArrayEquals(new int[] {6}, c.shape());
    Coalesced s = Coalesced.of(Tensor.scalar(3f));
    assertArrayEquals(new int[] {1}, s.shape());
    assertEquals(1, s.numel());
  }

  /** Every element's offset as the kernels compute it equals the row-major walk over the original views. */
  @Test
  void offsetsMatchTheViewsIncludingBlocksBeyondMaxRank() {
    int[] shape = {2, 1, 3, 2, 2, 3, 2, 2, 2, 3, 2};
    Tensor base = Tensor.zeros(shape);
    int[] reversed = new int[shape.length];
    int[] dims = new int[shape.length];
    for (int d = 0; d < shape.length; d++) {
      reversed[d] = shape[shape.length - 1 - d];
      dims[d] = shape.length - 1 - d;
    }
    Tensor perm = Views.permute(Tensor.zeros(reversed), dims); // no two axes merge: 10 axes of size > 1 remain
    Tensor sliced = Views.slice(Tensor.zeros(2, 1, 3, 2, 2, 3, 2, 2, 2, 3, 4), 10, 1, 2, 2);
    Coalesced c = Coalesced.of(base, perm, sliced);
    assertEquals(10, c.rank());
    List<long[]> seen = new ArrayList<>();
    c.forEachBlock(b -> {
      assertEquals(true, b.rank() <= Coalesced.MAXR);
      for (long i = 0; i < b.numel(); i++) {
        long[] o = new long[3];
        long rest = i;
        for (int d = b.rank() - 1; d >= 0; d--) {
          long r = rest % b.shape()[d];
          rest /= b.shape()[d];
          for (int k = 0; k < 3; k++) o[k] += r * b.strides()[k][d];
        }
        for (int k = 0; k < 3; k++) o[k] += b.offsets()[k];
        seen.add(o);
      }
    });
    List<long[]> want = new ArrayList<>();
    int n = (int) base.numel();
    Tensor[] views = {base, perm, sliced};
    for (int i = 0; i < n; i++) {
      long[] o = new long[3];
      for (int k = 0; k < 3; k++) {
        long rest = i;
        long off = views[k].offset();
        for (int d = shape.length - 1; d >= 0; d--) {
          off += (rest % shape[d]) * views[k].stridesRef()[d];
          rest /= shape[d];
        }
        o[k] = off;
      }
      want.add(o);
    }
    assertEquals(want.size(), seen.size());
    for (int i = 0; i < n; i++) assertArrayEquals(want.get(i), seen.get(i), "element " + i);
    Set<Long> distinct = new HashSet<>();
    for (long[] o : seen) distinct.add(o[0]);
    assertEquals(n, distinct.size());
  }
}
