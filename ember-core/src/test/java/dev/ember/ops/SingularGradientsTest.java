package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Gradients at the points where an op built from others would give NaN (a square root's derivative at 0 times a zero,
 * inf minus inf): the values PyTorch 1.13 gives there, and float64 central differences where they are defined. The
 * op table checks the same ops at random points.
 */
class SingularGradientsTest {
  private static Tensor leaf(double[] v, int... shape) {
    return Tensor.of(v, shape).requiresGrad(true);
  }

  @Test
  void theTwoNormsGradientIsZeroWhereTheNormIs() {
    // x = torch.zeros(3, dtype=torch.float64, requires_grad=True); torch.linalg.vector_norm(x, 2).backward()
    // -> x.grad = [0, 0, 0]
    Tensor x = leaf(new double[3], 3);
    ReduceOps.norm(x, 2, null, false).backward();
    assertArrayEquals(new double[] {0, 0, 0}, x.grad().toDoubleArray(), 0);

    // x = torch.tensor([[0., 0, 0], [3, -4, 0]], dtype=torch.float64, requires_grad=True)
    // torch.linalg.vector_norm(x, 2, dim=1).mul(torch.tensor([2., 3], dtype=torch.float64)).sum().backward()
    // -> x.grad = [[0, 0, 0], [1.8, -2.4, 0]]
    Tensor rows = leaf(new double[] {0, 0, 0, 3, -4, 0}, 2, 3);
    Tensor n = ReduceOps.norm(rows, 2, new int[] {1}, false);
    assertArrayEquals(new double[] {0, 5}, n.toDoubleArray(), 0);
    n.mul(Tensor.of(new double[] {2, 3})).sum().backward();
    assertArrayEquals(new double[] {0, 0, 0, 1.8, -2.4, 0}, rows.grad().toDoubleArray(), 1e-15);

    GradCheck.check("norm_2 at a zero row", l -> ReduceOps.norm(l.get(0), 2, new int[] {1}, true),
        List.of(leaf(new double[] {0, 0, 0, 3, -4, 0.5}, 2, 3)));
  }

  @Test
  void theStandardDeviationsGradientIsZeroWhereItIs() {
    // x = torch.full((3,), 2., dtype=torch.float64, requires_grad=True); x.std().backward()  -> x.grad = [0, 0, 0]
    Tensor x = leaf(new double[] {2, 2, 2}, 3);
    ReduceOps.std(x, null, true, false).backward();
    assertArrayEquals(new double[] {0, 0, 0}, x.grad().toDoubleArray(), 0);

    // x = torch.tensor([[1., 1, 1], [1, 2, 4]], dtype=torch.float64, requires_grad=True)
    // x.std(dim=1, unbiased=False).mul(torch.tensor([2., 3], dtype=torch.float64)).sum().backward()
    // -> std = [0, 1.24721912892464704], x.grad = [[0, 0, 0], [-1.06904496764969759, -0.26726124191242445,
    //    1.33630620956212165]]
    Tensor rows = leaf(new double[] {1, 1, 1, 1, 2, 4}, 2, 3);
    Tensor s = ReduceOps.std(rows, new int[] {1}, false, false);
    assertArrayEquals(new double[] {0, 1.24721912892464704}, s.toDoubleArray(), 1e-15);
    s.mul(Tensor.of(new double[] {2, 3})).sum().backward();
    assertArrayEquals(new double[] {0, 0, 0, -1.06904496764969759, -0.26726124191242445, 1.33630620956212165},
        rows.grad().toDoubleArray(), 1e-15);

    GradCheck.check("std at a constant row", l -> ReduceOps.std(l.get(0), new int[] {1}, true, false),
        List.of(leaf(new double[] {1, 1, 1, 1, 2, 4}, 2, 3)));
  }

  @Test
  void powAtBaseZeroFollowsPyTorchsRules() {
    // a = torch.tensor([0., 0, 0, 2], dtype=torch.float64, requires_grad=True)
    // b = torch.tensor([0., -1, 2, 0.5], dtype=torch.float64, requires_grad=True); torch.pow(a, b).sum().backward()
    // -> pow = [1, inf, 0, 1.41421356237309515], a.grad = [0, -inf, 0, 0.35355339059327379],
    //    b.grad = [0, -inf, 0, 0.98025814346854723]
    Tensor a = leaf(new double[] {0, 0, 0, 2}, 4);
    Tensor b = leaf(new double[] {0, -1, 2, 0.5}, 4);
    a.pow(b).sum().backward();
    double inf = Double.POSITIVE_INFINITY;
    assertArrayEquals(new double[] {0, -inf, 0, 0.35355339059327379}, a.grad().toDoubleArray(), 1e-15);
    assertArrayEquals(new double[] {0, -inf, 0, 0.98025814346854723}, b.grad().toDoubleArray(), 1e-15);

    // central differences where defined: the base's at exponent 0 and 2, the exponent's at base 0 with exponent 2
    GradCheck.check("pow, base at 0", l -> l.get(0).pow(l.get(1)),
        List.of(leaf(new double[] {0, 0, 1.5}, 3), Tensor.of(new double[] {0, 2, 0.7})));
    GradCheck.check("pow, exponent at base 0", l -> l.get(0).pow(l.get(1)),
        List.of(Tensor.of(new double[] {0, 1.5}), leaf(new double[] {2, 0.7}, 2)));
  }

  @Test
  void cumsumsGradientIsTheReversedCumulativeSum() {
    // x = torch.tensor([1., 2, 3], requires_grad=True)
    // torch.cumsum(x, 0).mul(torch.tensor([1e8, 1, 1])).sum().backward()  -> x.grad = [1e8, 2, 1] (float32)
    Tensor x = Tensor.of(new float[] {1, 2, 3}).requiresGrad(true);
    ReduceOps.cumsum(x, 0).mul(Tensor.of(new float[] {1e8f, 1, 1})).sum().backward();
    assertArrayEquals(new float[] {1e8f, 2, 1}, x.grad().toFloatArray(), 0);

    // x = torch.tensor([1., 2, 3], dtype=torch.float64, requires_grad=True)
    // torch.cumsum(x, 0).backward(torch.tensor([float('inf'), 1, 1], dtype=torch.float64))  -> x.grad = [inf, 2, 1]
    Tensor y = leaf(new double[] {1, 2, 3}, 3);
    ReduceOps.cumsum(y, 0).backward(Tensor.of(new double[] {Double.POSITIVE_INFINITY, 1, 1}));
    assertArrayEquals(new double[] {Double.POSITIVE_INFINITY, 2, 1}, y.grad().toDoubleArray(), 0);

    // x = torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64, requires_grad=True)
    // torch.cumsum(x, 1).backward(torch.tensor([[1., 2, 3], [4, 5, 6]], dtype=torch.float64))
    // -> x.grad = [[6, 5, 3], [15, 11, 6]]
    Tensor z = leaf(new double[] {1, 2, 3, 4, 5, 6}, 2, 3);
    ReduceOps.cumsum(z, 1).backward(Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 2, 3));
    assertArrayEquals(new double[] {6, 5, 3, 15, 11, 6}, z.grad().toDoubleArray(), 0);
  }
}
