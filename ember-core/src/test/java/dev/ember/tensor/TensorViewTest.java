package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class TensorViewTest {

  /** [r, c] with values 0 .. r*c-1. */
  private static Tensor grid(int... shape) {
    return Tensor.arange(0, Shapes.numel(shape), 1, DType.F32).reshape(shape);
  }

  private static float[] f(double... v) {
    float[] out = new float[v.length];
    for (int i = 0; i < v.length; i++) out[i] = (float) v[i];
    return out;
  }

  @Test
  void reshapeAndViewShareStorage() {
    Tensor x = grid(2, 3);
    Tensor r = x.reshape(3, 2);
    Tensor v = x.view(6);
    Tensor inferred = x.reshape(-1, 2);
    assertSame(x.storage(), r.storage());
    assertSame(x.storage(), v.storage());
    assertArrayEquals(new int[] {3, 2}, inferred.shape());
    r.select(0, 1).fill_(-1); // elements 2 and 3
    assertArrayEquals(f(0, 1, -1, -1, 4, 5), x.toFloatArray());
    v.narrow(0, 5, 1).copy_(Tensor.of(new float[] {9}));
    assertEquals(9.0, x.getDouble(1, 2));
  }

  @Test
  void permuteTransposeAndTShareStorage() {
    Tensor x = grid(2, 3, 4);
    Tensor p = x.permute(2, 0, 1);
    assertArrayEquals(new int[] {4, 2, 3}, p.shape());
    assertArrayEquals(new int[] {1, 12, 4}, p.strides());
    assertEquals(x.getDouble(1, 2, 3), p.getDouble(3, 1, 2));
    p.select(0, 0).fill_(100); // x[:, :, 0]
    for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) assertEquals(100.0, x.getDouble(i, j, 0));

    Tensor m = grid(2, 3);
    Tensor mt = m.t();
    assertArrayEquals(new int[] {3, 2}, mt.shape());
    assertArrayEquals(f(0, 3, 1, 4, 2, 5), mt.toFloatArray());
    assertFalse(mt.isContiguous());
    mt.select(0, 2).copy_(Tensor.of(new float[] {7, 8})); // column 2 of m
    assertArrayEquals(f(0, 1, 7, 3, 4, 8), m.toFloatArray());
    Tensor tr = m.transpose(-1, 0);
    assertArrayEquals(mt.toFloatArray(), tr.toFloatArray());
    assertSame(m.storage(), tr.storage());
    assertThrows(TensorArgumentException.class, () -> grid(2, 3, 4).t());
    TensorArgumentException rep = assertThrows(TensorArgumentException.class, () -> x.permute(0, 0, 1));
    assertEquals("permute: repeated dim 0 in [0, 0, 1]: x=[2, 3, 4]", rep.getMessage());
  }

  @Test
  void expandAndBroadcastToUseStrideZero() {
    Tensor col = Tensor.of(new float[] {1, 2, 3}, 3, 1);
    Tensor e = col.expand(2, 3, 4);
    assertArrayEquals(new int[] {2, 3, 4}, e.shape());
    assertArrayEquals(new int[] {0, 1, 0}, e.strides());
    assertSame(col.storage(), e.storage());
    assertEquals(3.0, e.getDouble(1, 2, 3));
    Tensor b = Tensor.of(new float[] {5, 6}).broadcastTo(3, 2);
    assertArrayEquals(new int[] {0, 1}, b.strides());
    assertArrayEquals(f(5, 6, 5, 6, 5, 6), b.toFloatArray());
    assertArrayEquals(new int[] {3, 4}, col.expand(-1, 4).shape());
    col.fill_(0);
    assertArrayEquals(new float[24], e.toFloatArray());
    assertThrows(TensorArgumentException.class, () -> col.expand(2, 4));
    assertThrows(TensorArgumentException.class, () -> col.expand(3));
  }

  @Test
  void narrowSliceSelect() {
    Tensor x = grid(4, 5);
    Tensor n = x.narrow(1, 1, 3);
    assertArrayEquals(new int[] {4, 3}, n.shape());
    assertEquals(x.getDouble(2, 3), n.getDouble(2, 2));
    Tensor s = x.slice(1, 0, 5, 2); // columns 0, 2, 4
    assertArrayEquals(new int[] {4, 3}, s.shape());
    assertArrayEquals(f(0, 2, 4, 5, 7, 9, 10, 12, 14, 15, 17, 19), s.toFloatArray());
    Tensor neg = x.slice(0, -3, -1, 1); // rows 1, 2
    assertArrayEquals(new int[] {2, 5}, neg.shape());
    assertArrayEquals(f(5, 6, 7, 8, 9, 10, 11, 12, 13, 14), neg.toFloatArray());
    Tensor clamped = x.slice(1, 3, 100, 1); // like Python, ends past the size are clamped
    assertArrayEquals(new int[] {4, 2}, clamped.shape());
    assertEquals(0, x.slice(0, 3, 1, 1).numel());
    Tensor odd = grid(7).slice(0, 1, 7, 3); // 1, 4
    assertArrayEquals(f(1, 4), odd.toFloatArray());
    Tensor lastRow = x.select(0, -1);
    assertArrayEquals(f(15, 16, 17, 18, 19), lastRow.toFloatArray());
    Tensor col = x.select(1, -2);
    assertArrayEquals(f(3, 8, 13, 18), col.toFloatArray());

    s.fill_(-1);
    assertEquals(-1.0, x.getDouble(3, 4));
    assertEquals(16.0, x.getDouble(3, 1));
    neg.select(1, 1).fill_(50);
    assertEquals(50.0, x.getDouble(1, 1));
    assertEquals(50.0, x.getDouble(2, 1));
    TensorArgumentException bad = assertThrows(TensorArgumentException.class, () -> x.select(0, 4));
    assertEquals("select: index 4 out of range for dimension 0 of size 4: x=[4, 5]", bad.getMessage());
    assertThrows(TensorArgumentException.class, () -> x.slice(0, 0, 4, 0));
  }

  @Test
  void squeezeUnsqueezeFlatten() {
    Tensor x = grid(2, 1, 3, 1);
    Tensor sq = x.squeeze();
    assertArrayEquals(new int[] {2, 3}, sq.shape());
    assertArrayEquals(new int[] {2, 3, 1}, x.squeeze(1).shape());
    assertSame(x, x.squeeze(0)); // size 2: unchanged
    Tensor un = sq.unsqueeze(-1);
    assertArrayEquals(new int[] {2, 3, 1}, un.shape());
    assertArrayEquals(new int[] {1, 2, 3}, sq.unsqueeze(0).shape());
    Tensor fl = grid(2, 3, 4).flatten();
    assertArrayEquals(new int[] {24}, fl.shape());
    assertArrayEquals(new int[] {2, 12}, grid(2, 3, 4).flatten(1, -1).shape());
    for (Tensor v : new Tensor[] {sq, un, x.squeeze(1)}) assertSame(x.storage(), v.storage());
    Tensor base = grid(2, 3, 4);
    Tensor flat = base.flatten(0, 1);
    assertSame(base.storage(), flat.storage());
    flat.select(0, 5).fill_(-7); // base[1, 2, :]
    assertEquals(-7.0, base.getDouble(1, 2, 3));
    un.select(0, 1).fill_(3);
    assertArrayEquals(f(0, 1, 2, 3, 3, 3), x.toFloatArray());
  }

  @Test
  void reshapeCopiesWhenNotViewableAndViewThrows() {
    Tensor x = grid(2, 3);
    Tensor xt = x.t();
    Tensor r = xt.reshape(6);
    assertNotSame(x.storage(), r.storage());
    assertArrayEquals(f(0, 3, 1, 4, 2, 5), r.toFloatArray());
    r.fill_(1);
    assertEquals(5.0, x.getDouble(1, 2)); // the copy does not write through
    TensorArgumentException ex = assertThrows(TensorArgumentException.class, () -> xt.view(6));
    assertTrue(ex.getMessage().startsWith("view: "), ex.getMessage());
    assertTrue(ex.getMessage().contains("hint: use reshape()"), ex.getMessage());
    assertEquals("view: size [6] is not compatible with the strides [1, 3] (at least one dimension spans two"
        + " contiguous subspaces): x=[3, 2]; hint: use reshape(), or contiguous() first", ex.getMessage());
    // a transposed tensor can still be viewed when the merged dims stay contiguous
    Tensor y = grid(2, 3, 4).permute(1, 0, 2); // [3, 2, 4]: splitting the last dim is fine
    Tensor yv = y.view(3, 2, 2, 2);
    assertSame(y.storage(), yv.storage());
    assertArrayEquals(y.toFloatArray(), yv.toFloatArray());
    TensorArgumentException shape = assertThrows(TensorArgumentException.class, () -> x.reshape(4, 2));
    assertEquals("reshape: shape [4, 2] is invalid for 6 elements: x=[2, 3]", shape.getMessage());
    assertThrows(TensorArgumentException.class, () -> x.reshape(-1, -1));
  }

  @Test
  void contiguousReturnsSameObjectWhenContiguous() {
    Tensor x = grid(3, 4);
    assertSame(x, x.contiguous());
    Tensor c = x.t().contiguous();
    assertNotSame(x.storage(), c.storage());
    assertTrue(c.isContiguous());
    assertArrayEquals(x.t().toFloatArray(), c.toFloatArray());
    Tensor row = x.select(0, 1); // a contiguous view with an offset
    assertTrue(row.isContiguous());
    assertSame(row, row.contiguous());
    assertNotSame(x.storage(), x.clone().storage());
  }

  @Test
  void catStackSplitChunk() {
    Tensor a = grid(2, 3);
    Tensor b = grid(1, 3).add(10);
    Tensor c0 = Tensor.cat(List.of(a, b), 0);
    assertArrayEquals(new int[] {3, 3}, c0.shape());
    assertArrayEquals(f(0, 1, 2, 3, 4, 5, 10, 11, 12), c0.toFloatArray());
    Tensor c1 = Tensor.cat(List.of(a, a.t().t().narrow(1, 0, 1)), -1);
    assertArrayEquals(new int[] {2, 4}, c1.shape());
    assertArrayEquals(f(0, 1, 2, 0, 3, 4, 5, 3), c1.toFloatArray());
    TensorArgumentException bad = assertThrows(TensorArgumentException.class, () -> Tensor.cat(List.of(a, b), 1));
    assertEquals("cat: sizes must match except in dim 1 (2 vs 1 at dim 0): t0=[2, 3], t1=[1, 3]", bad.getMessage());

    Tensor s0 = Tensor.stack(List.of(a, a.mul(2)), 0);
    assertArrayEquals(new int[] {2, 2, 3}, s0.shape());
    assertEquals(10.0, s0.getDouble(1, 1, 2));
    Tensor s2 = Tensor.stack(List.of(a, a.mul(2)), 2);
    assertArrayEquals(new int[] {2, 3, 2}, s2.shape());
    assertArrayEquals(f(0, 0, 1, 2, 2, 4, 3, 6, 4, 8, 5, 10), s2.toFloatArray());
    assertThrows(TensorArgumentException.class, () -> Tensor.stack(List.of(a, b), 0));

    Tensor x = grid(5, 2);
    List<Tensor> sp = x.split(2, 0);
    assertEquals(3, sp.size());
    assertArrayEquals(new int[] {2, 2}, sp.get(0).shape());
    assertArrayEquals(new int[] {1, 2}, sp.get(2).shape());
    assertArrayEquals(f(8, 9), sp.get(2).toFloatArray());
    assertSame(x.storage(), sp.get(1).storage());
    List<Tensor> ch = x.chunk(2, 0); // as torch: sizes 3 and 2
    assertEquals(2, ch.size());
    assertEquals(3, ch.get(0).size(0));
    assertEquals(2, ch.get(1).size(0));
    assertArrayEquals(f(6, 7, 8, 9), ch.get(1).toFloatArray());
    List<Tensor> ch3 = grid(6).chunk(4, 0); // torch.arange(6).chunk(4): sizes 2, 2, 2
    assertEquals(3, ch3.size());
    for (Tensor t : ch3) assertEquals(2, t.numel());
    List<Tensor> cols = grid(2, 5).chunk(5, 1);
    assertEquals(5, cols.size());
    assertArrayEquals(f(3, 8), cols.get(3).toFloatArray());
  }

  // ------------------------------------------------------------------ properties over random shapes

  private static int[] randomShape(SplittableRandom rnd, int maxRank) {
    int[] s = new int[1 + rnd.nextInt(maxRank)];
    for (int i = 0; i < s.length; i++) s[i] = 1 + rnd.nextInt(4);
    return s;
  }

  @Test
  void reshapeRoundTrips() {
    SplittableRandom rnd = new SplittableRandom(1);
    for (int trial = 0; trial < 50; trial++) {
      int[] shape = randomShape(rnd, 4);
      Tensor x = Tensor.rand(new Generator(trial), shape);
      Tensor flat = x.reshape(-1);
      assertEquals(x.numel(), flat.numel());
      Tensor back = flat.reshape(shape);
      assertArrayEquals(shape, back.shape());
      assertArrayEquals(x.toFloatArray(), back.toFloatArray());
      // and through a permuted (non-contiguous) layout
      int[] perm = new int[shape.length];
      for (int i = 0; i < perm.length; i++) perm[i] = perm.length - 1 - i;
      Tensor p = x.permute(perm);
      Tensor p2 = p.reshape(-1).reshape(p.shape()).permute(perm);
      assertArrayEquals(x.toFloatArray(), p2.toFloatArray());
    }
  }

  @Test
  void transposeTwiceIsIdentity() {
    SplittableRandom rnd = new SplittableRandom(2);
    for (int trial = 0; trial < 50; trial++) {
      int[] shape = randomShape(rnd, 4);
      Tensor x = Tensor.randn(new Generator(trial), shape);
      int d0 = rnd.nextInt(shape.length);
      int d1 = rnd.nextInt(shape.length) - shape.length; // negative form
      Tensor tt = x.transpose(d0, d1).transpose(d0, d1);
      assertArrayEquals(x.shape(), tt.shape());
      assertArrayEquals(x.strides(), tt.strides());
      assertArrayEquals(x.toFloatArray(), tt.toFloatArray());
    }
  }

  @Test
  void broadcastingIsSymmetric() {
    SplittableRandom rnd = new SplittableRandom(3);
    for (int trial = 0; trial < 100; trial++) {
      int[] out = randomShape(rnd, 4);
      int[] sa = dropOrOne(rnd, out);
      int[] sb = dropOrOne(rnd, out);
      Tensor a = Tensor.randn(new Generator(2L * trial), sa);
      Tensor b = Tensor.randn(new Generator(2L * trial + 1), sb);
      Tensor ab = a.add(b);
      Tensor ba = b.add(a);
      assertArrayEquals(ab.shape(), ba.shape());
      assertArrayEquals(ab.toFloatArray(), ba.toFloatArray());
      assertArrayEquals(a.mul(b).toFloatArray(), b.mul(a).toFloatArray());
      // and it equals the sum of explicitly expanded operands
      int[] shape = ab.shape();
      assertArrayEquals(a.expand(shape).contiguous().add(b.expand(shape).contiguous()).toFloatArray(), ab.toFloatArray());
    }
  }

  /** A shape that broadcasts to {@code out}: some leading dims dropped, some dims set to 1. */
  private static int[] dropOrOne(SplittableRandom rnd, int[] out) {
    int drop = rnd.nextInt(out.length + 1);
    int[] s = java.util.Arrays.copyOfRange(out, drop, out.length);
    for (int i = 0; i < s.length; i++) if (rnd.nextInt(3) == 0) s[i] = 1;
    return s;
  }
}
