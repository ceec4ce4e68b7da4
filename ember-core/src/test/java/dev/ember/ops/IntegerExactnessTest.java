package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * Integer tensors compute in integer arithmetic, as PyTorch's integer kernels: int64 values above 2^53 (which a
 * double cannot hold) come back exact from comparisons, reductions, indexing and unary ops, and results past a
 * dtype's range wrap (two's complement) rather than saturate. Expected values from PyTorch 1.13, each with its line.
 */
class IntegerExactnessTest {
  /** 2^53 + 1: the first int64 a double rounds (to 2^53). */
  private static final long B = 9007199254740993L;

  private static Tensor l(long... v) {
    return Tensor.of(v, v.length);
  }

  private static Tensor i(int... v) {
    return Tensor.of(v, v.length);
  }

  private static Tensor i8(int... v) {
    byte[] b = new byte[v.length];
    for (int k = 0; k < v.length; k++) b[k] = (byte) v[k];
    return Tensor.of(b, v.length);
  }

  private static Tensor bools(boolean... v) {
    return Tensor.of(v, v.length);
  }

  static void assertBools(boolean[] want, Tensor got) {
    double[] d = got.toDoubleArray();
    boolean[] b = new boolean[d.length];
    for (int k = 0; k < d.length; k++) b[k] = d[k] != 0;
    assertArrayEquals(want, b);
  }

  @Test
  void comparisonsOfTwoIntegerTensorsCompareAsLongs() {
    // L(B).eq(L(B-1)), .ne: tensor([False]) tensor([True]); L(B-1).lt(L(B)), .le, .gt, .ge: True True False False
    assertBools(new boolean[] {false}, l(B).eq(l(B - 1)));
    assertBools(new boolean[] {true}, l(B).ne(l(B - 1)));
    assertBools(new boolean[] {true}, l(B - 1).lt(l(B)));
    assertBools(new boolean[] {true}, l(B - 1).le(l(B)));
    assertBools(new boolean[] {false}, l(B - 1).gt(l(B)));
    assertBools(new boolean[] {false}, l(B - 1).ge(l(B)));
    // L(B, 5).eq(I(5)) (broadcast, int64 with int32), L(B, 5).eq(L(B - 1, 5)): tensor([False, True]), twice
    assertBools(new boolean[] {false, true}, l(B, 5).eq(i(5)));
    assertBools(new boolean[] {false, true}, l(B, 5).eq(l(B - 1, 5)));
  }

  @Test
  void maxMinAndTheirIndicesOfLargeInt64AreExact() {
    // L(B-1, B).argmax(0): tensor(1); L(B, B-1).argmin(0): tensor(1)
    assertArrayEquals(new long[] {1}, l(B - 1, B).argmax(0, true).toLongArray());
    assertArrayEquals(new long[] {1}, l(B, B - 1).argmin(0, true).toLongArray());
    // L(B-1, B).max(0): values=tensor(9007199254740993), indices=tensor(1)
    Tensor[] max = ReduceOps.max(l(B - 1, B), 0, false);
    assertArrayEquals(new long[] {B}, max[0].toLongArray());
    assertArrayEquals(new long[] {1}, max[1].toLongArray());
    // L(B, B-1).min(0): values=tensor(9007199254740992), indices=tensor(1)
    Tensor[] min = ReduceOps.min(l(B, B - 1), 0, false);
    assertArrayEquals(new long[] {B - 1}, min[0].toLongArray());
    assertArrayEquals(new long[] {1}, min[1].toLongArray());
    // L(B-1, B).amax(), L(B-1, B).max(): tensor(9007199254740993); L(-B, 1-B).amin(): tensor(-9007199254740993)
    assertArrayEquals(new long[] {B}, l(B - 1, B).max().toLongArray());
    assertArrayEquals(new long[] {-B}, l(-B, 1 - B).min().toLongArray());
    // m = torch.tensor([[B-1, B], [B, B-1]]): m.amax(1), m.amax(0): tensor([B, B]); m.amin(0): tensor([B-1, B-1]);
    // m.argmax(0): tensor([1, 0])
    Tensor m = Tensor.of(new long[] {B - 1, B, B, B - 1}, 2, 2);
    assertArrayEquals(new long[] {B, B}, ReduceOps.amax(m, new int[] {1}, false).toLongArray());
    assertArrayEquals(new long[] {B, B}, ReduceOps.amax(m, new int[] {0}, false).toLongArray());
    assertArrayEquals(new long[] {B - 1, B - 1}, ReduceOps.amin(m, new int[] {0}, false).toLongArray());
    assertArrayEquals(new long[] {1, 0}, m.argmax(0, false).toLongArray());
  }

  @Test
  void indexingAndSelectionCopyLargeInt64Exactly() {
    // L(B-1, B).gather(0, L(1, 0)): tensor([9007199254740993, 9007199254740992])
    assertArrayEquals(new long[] {B, B - 1}, l(B - 1, B).gather(0, l(1, 0)).toLongArray());
    // torch.where(tensor([True, False]), L(B, 0), L(0, B)): tensor([9007199254740993, 9007199254740993])
    assertArrayEquals(new long[] {B, B}, ElementwiseOps.where(bools(true, false), l(B, 0), l(0, B)).toLongArray());
    // L(B, B).masked_fill(tensor([True, False]), 5): tensor([5, 9007199254740993])
    assertArrayEquals(new long[] {5, B}, l(B, B).maskedFill(bools(true, false), 5).toLongArray());
    // L(B, 0).scatter_add(0, L(0), L(0)): tensor([B, 0]); L(B, 0).scatter_add(0, L(0, 0), L(1, 1)): tensor([B + 2, 0])
    assertArrayEquals(new long[] {B, 0}, IndexOps.scatterAdd(l(B, 0), 0, l(0), l(0)).toLongArray());
    assertArrayEquals(new long[] {B + 2, 0}, IndexOps.scatterAdd(l(B, 0), 0, l(0, 0), l(1, 1)).toLongArray());
    // L(0, 0).scatter(0, L(1), L(B)): tensor([0, 9007199254740993])
    assertArrayEquals(new long[] {0, B}, IndexOps.scatter(l(0, 0), 0, l(1), l(B), false).toLongArray());
  }

  @Test
  void unaryOpsOnLargeInt64AreExact() {
    // L(-B).abs(), L(B).neg(), .relu(), .floor(), .ceil(), .round(), .trunc(): B, -B, B, B, B, B, B
    assertArrayEquals(new long[] {B}, l(-B).abs().toLongArray());
    assertArrayEquals(new long[] {-B}, l(B).neg().toLongArray());
    assertArrayEquals(new long[] {B}, l(B).relu().toLongArray());
    assertArrayEquals(new long[] {B}, l(B).floor().toLongArray());
    assertArrayEquals(new long[] {B}, l(B).ceil().toLongArray());
    assertArrayEquals(new long[] {B}, l(B).round().toLongArray());
    assertArrayEquals(new long[] {B}, l(B).trunc().toLongArray());
    // L(-B, 0, B).sign(): tensor([-1, 0, 1]); I(-5, 7).relu(): tensor([0, 7], dtype=torch.int32)
    assertArrayEquals(new long[] {-1, 0, 1}, l(-B, 0, B).sign().toLongArray());
    assertArrayEquals(new long[] {0, 7}, i(-5, 7).relu().toLongArray());
    // L(B).square(): tensor([18014398509481985]) (wrapped: (2^53 + 1)^2 mod 2^64)
    assertArrayEquals(new long[] {18014398509481985L}, l(B).square().toLongArray());
    // L(-B).abs_(), L(B).neg_(): tensor([9007199254740993]) tensor([-9007199254740993])
    assertArrayEquals(new long[] {B}, l(-B).abs_().toLongArray());
    assertArrayEquals(new long[] {-B}, l(B).neg_().toLongArray());
  }

  @Test
  void integerUnaryOpsWrapAtTheRangeEnds() {
    // I(-2**31).neg(), .abs(): tensor([-2147483648], dtype=torch.int32), twice
    assertArrayEquals(new long[] {Integer.MIN_VALUE}, i(Integer.MIN_VALUE).neg().toLongArray());
    assertArrayEquals(new long[] {Integer.MIN_VALUE}, i(Integer.MIN_VALUE).abs().toLongArray());
    // I(50000).square(): tensor([-1794967296], dtype=torch.int32)
    assertArrayEquals(new long[] {-1794967296}, i(50000).square().toLongArray());
    // L(-2**63).abs(), .neg(): tensor([-9223372036854775808]), twice
    assertArrayEquals(new long[] {Long.MIN_VALUE}, l(Long.MIN_VALUE).abs().toLongArray());
    assertArrayEquals(new long[] {Long.MIN_VALUE}, l(Long.MIN_VALUE).neg().toLongArray());
    assertArrayEquals(new long[] {Long.MIN_VALUE}, l(Long.MIN_VALUE).neg_().toLongArray());
    // L(3037000500).square(): tensor([-9223372036709301616])
    assertArrayEquals(new long[] {-9223372036709301616L}, l(3037000500L).square().toLongArray());
    // torch.tensor([-128], dtype=torch.int8).neg(), .abs(): tensor([-128]); tensor([100], dtype=int8).square(): 16
    assertArrayEquals(new long[] {-128}, i8(-128).neg().toLongArray());
    assertArrayEquals(new long[] {-128}, i8(-128).abs().toLongArray());
    assertArrayEquals(new long[] {16}, i8(100).square().toLongArray());
  }

  @Test
  void integerPowSquaresRepeatedlyAndWraps() {
    // L(3, 2).pow(L(39, 62)): tensor([4052555153018976267, 4611686018427387904])
    assertArrayEquals(new long[] {4052555153018976267L, 4611686018427387904L}, l(3, 2).pow(l(39, 62)).toLongArray());
    // L(B).pow(L(1)): tensor([9007199254740993]); L(-3).pow(L(39)): tensor([-4052555153018976267])
    assertArrayEquals(new long[] {B}, l(B).pow(l(1)).toLongArray());
    assertArrayEquals(new long[] {-4052555153018976267L}, l(-3).pow(l(39)).toLongArray());
    // L(3).pow(L(41)): tensor([-420491770248316829]); L(2).pow(L(64)): tensor([0])
    assertArrayEquals(new long[] {-420491770248316829L}, l(3).pow(l(41)).toLongArray());
    assertArrayEquals(new long[] {0}, l(2).pow(l(64)).toLongArray());
    // L(2, 1, -1, -1, 0, 0).pow(L(-1, -3, -3, -2, -1, 0)): tensor([0, 1, -1, 1, 0, 1])
    assertArrayEquals(new long[] {0, 1, -1, 1, 0, 1}, l(2, 1, -1, -1, 0, 0).pow(l(-1, -3, -3, -2, -1, 0)).toLongArray());
    // I(3).pow(I(21)), I(-2).pow(I(31)), I(2).pow(I(32)): 1870418611, -2147483648, 0 (dtype=torch.int32)
    Tensor p = i(3, -2, 2).pow(i(21, 31, 32));
    assertArrayEquals(new long[] {1870418611, Integer.MIN_VALUE, 0}, p.toLongArray());
    assertEquals(DType.I32, p.dtype());
  }
}
