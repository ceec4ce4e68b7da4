package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

/**
 * Scalars against integer and bool tensors as PyTorch 1.13 treats them: a comparison with a number the tensor's
 * dtype cannot hold compares the numbers (it was rounded to the dtype first), and an in-place op whose result would
 * not fit the tensor's dtype is refused (it was truncated). Also logsumexp over an empty dim.
 */
class ScalarOperandsTest {
  private static boolean[] bools(Tensor t) {
    double[] v = t.to(DType.F64).toDoubleArray();
    boolean[] b = new boolean[v.length];
    for (int i = 0; i < v.length; i++) b[i] = v[i] != 0;
    return b;
  }

  @Test
  void comparingWithANumberTheDtypeCannotHoldComparesTheNumbers() {
    Tensor l = Tensor.of(new long[] {1, 2, 3}, 3);
    // torch.tensor([1, 2, 3]) < 2.5 -> [True, True, False]; == 2.5 -> all False; != 2.5 -> all True
    assertArrayEquals(new boolean[] {true, true, false}, bools(l.lt(2.5)));
    assertArrayEquals(new boolean[] {false, false, true}, bools(l.gt(2.5)));
    assertArrayEquals(new boolean[] {true, true, false}, bools(l.le(2.5)));
    assertArrayEquals(new boolean[] {false, false, true}, bools(l.ge(2.5)));
    assertArrayEquals(new boolean[] {false, false, false}, bools(l.eq(2.5)));
    assertArrayEquals(new boolean[] {true, true, true}, bools(l.ne(2.5)));
    assertArrayEquals(new boolean[] {false, true, false}, bools(l.eq(2))); // an integral number stays exact
    // torch.tensor([True, False]) > 0.5 -> [True, False]; torch.tensor([True]) == 2 -> [False]
    Tensor b = Tensor.of(new float[] {1, 0}, 2).gt(0.5);
    assertArrayEquals(new boolean[] {true, false}, bools(b.gt(0.5)));
    assertArrayEquals(new boolean[] {false, false}, bools(b.eq(2)));
    // int32 against a number past its range: torch.tensor([7], dtype=torch.int32) < 3e9 -> [True]
    assertArrayEquals(new boolean[] {true}, bools(Tensor.of(new int[] {7}, 1).lt(3e9)));
    assertArrayEquals(new boolean[] {false}, bools(l.narrow(0, 0, 1).eq(Double.NaN)));
  }

  @Test
  void anInPlaceOpWhoseResultTheDtypeCannotHoldIsRefused() {
    // torch.tensor([1, 2]).add_(0.5): RuntimeError: result type Float can't be cast to the desired output type Long
    Tensor l = Tensor.of(new long[] {1, 2}, 2);
    assertEquals("add_: result type float64 can't be cast to the desired output type int64: self=[2], other=[]",
        assertThrows(TensorArgumentException.class, () -> l.add_(0.5)).getMessage());
    assertThrows(TensorArgumentException.class, () -> l.mul_(2.5));
    assertThrows(TensorArgumentException.class, () -> l.add_(Tensor.of(new float[] {0.5f, 0.5f}, 2)));
    // torch.tensor([7, -7]).div_(2): the same error (true division of integers is floating)
    assertThrows(TensorArgumentException.class, () -> l.div_(2));
    // torch.tensor([True, False]).add_(torch.tensor([1, 2])): result type Long can't be cast to ... Bool
    Tensor b = Tensor.of(new float[] {1, 0}, 2).gt(0.5);
    assertThrows(TensorArgumentException.class, () -> b.add_(Tensor.of(new long[] {1, 2}, 2)));
    assertArrayEquals(new double[] {1, 2}, l.to(DType.F64).toDoubleArray(), "nothing was written");
    // what fits still runs: integral scalars on integers, any float on floats (float64 into float32)
    assertArrayEquals(new double[] {4, 6}, l.add_(1).mul_(2).to(DType.F64).toDoubleArray());
    Tensor f = Tensor.of(new float[] {1, 2}, 2);
    f.add_(Tensor.of(new double[] {0.25, 0.5}, 2));
    assertArrayEquals(new double[] {1.25, 2.5}, f.to(DType.F64).toDoubleArray());
  }

  @Test
  void aScalarAnIntegerDtypeCannotHoldMakesTheResultFloating() {
    // torch.tensor([3], dtype=torch.int32) * 1e10 -> tensor([3.0000e+10]) (float32); Ember gave int32 2147483645
    Tensor r = Tensor.of(new int[] {3}, 1).mul(1e10);
    assertEquals(DType.F32, r.dtype());
    assertEquals(3e10f, (float) r.item());
    assertEquals(DType.I32, Tensor.of(new int[] {3}, 1).mul(2).dtype()); // an integral scalar that fits stays int
  }

  @Test
  void logsumexpOverAnEmptyDimIsMinusInfinity() {
    // torch.logsumexp(torch.zeros(3, 0), 1) -> tensor([-inf, -inf, -inf]); over every dim of an empty tensor: -inf
    Tensor x = Tensor.zeros(3, 0);
    assertArrayEquals(new double[] {Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY, Double.NEGATIVE_INFINITY},
        ReduceOps.logsumexp(x, new int[] {1}, false).to(DType.F64).toDoubleArray());
    assertArrayEquals(new int[] {3, 1}, ReduceOps.logsumexp(x, new int[] {1}, true).shape());
    assertEquals(Double.NEGATIVE_INFINITY, ReduceOps.logsumexp(x, null, false).item());
    assertArrayEquals(new int[] {0}, ReduceOps.logsumexp(x, new int[] {0}, false).shape()); // over a non-empty dim
  }
}
