package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Float pow follows C99's pow, as PyTorch's kernels (which call it), where C and Java's Math.pow differ: 1^y = 1 for
 * every y, NaN and +-inf included, and (-1)^+-inf = 1 (Math.pow gives NaN for all three). Every other value keeps
 * Math.pow's bits. Expected values from PyTorch 1.13, each with its line.
 */
class PowSpecialValuesTest {
  private static final double NAN = Double.NaN;
  private static final double INF = Double.POSITIVE_INFINITY;

  private static Tensor f(float... v) {
    return Tensor.of(v, v.length);
  }

  @Test
  void onePowAnythingIsOneAndMinusOnePowInfinityIsOne() {
    // F(1, 2).pow(nan): tensor([1., nan]); F(-1).pow(inf), F(-1).pow(-inf), F(1).pow(inf): tensor([1.]) each
    assertArrayEquals(new double[] {1, NAN}, f(1, 2).pow(NAN).toDoubleArray());
    assertArrayEquals(new double[] {1}, f(-1).pow(INF).toDoubleArray());
    assertArrayEquals(new double[] {1}, f(-1).pow(-INF).toDoubleArray());
    assertArrayEquals(new double[] {1}, f(1).pow(INF).toDoubleArray());
    // F(-1, 1).pow(F(inf, nan)): tensor([1., 1.])
    assertArrayEquals(new double[] {1, 1}, f(-1, 1).pow(f(Float.POSITIVE_INFINITY, Float.NaN)).toDoubleArray());
    // torch.pow(1, F(nan, inf, -inf)): tensor([1., 1., 1.]); torch.pow(-1, F(inf, -inf, nan)): tensor([1., 1., nan])
    Tensor y = f(Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY);
    assertArrayEquals(new double[] {1, 1, 1}, Tensor.scalar(1, DType.F32).pow(y).toDoubleArray());
    Tensor y2 = f(Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN);
    assertArrayEquals(new double[] {1, 1, NAN}, Tensor.scalar(-1, DType.F32).pow(y2).toDoubleArray());
    // torch.tensor([1., -1.], dtype=torch.float64).pow(torch.tensor([nan, inf], dtype=torch.float64)): tensor([1., 1.])
    Tensor d = Tensor.of(new double[] {1, -1}, 2).pow(Tensor.of(new double[] {NAN, INF}, 2));
    assertArrayEquals(new double[] {1, 1}, d.toDoubleArray());
    // x = F(1, 2); x.pow_(nan): tensor([1., nan])
    assertArrayEquals(new double[] {1, NAN}, f(1, 2).pow_(NAN).toDoubleArray());
    // F(nan).pow(0): tensor([1.]); F(-1).pow(nan): tensor([nan]); F(-2).pow(inf): tensor([inf])
    assertArrayEquals(new double[] {1}, f(Float.NaN).pow(0).toDoubleArray());
    assertArrayEquals(new double[] {NAN}, f(-1).pow(NAN).toDoubleArray());
    assertArrayEquals(new double[] {INF}, f(-2).pow(INF).toDoubleArray());
  }

  /** The scalar and the vector kernel sets, over a length with a vector body and a scalar tail, in every layout. */
  @Test
  void bothKernelSetsTakeCsCasesInEveryLayout() {
    FloatKernels vector = CpuBackends.vectorKernelsOrNull();
    assertNotNull(vector, "tests run with --add-modules jdk.incubator.vector");
    for (Backend be : List.of(CpuBackends.scalar(), new CpuBackend(vector))) {
      for (DType dt : new DType[] {DType.F32, DType.F64}) {
        int n = 37;
        Tensor ones = Tensor.ones(dt, n);
        Tensor minusOnes = ones.neg();
        Tensor nans = Tensor.full(NAN, dt, n);
        Tensor infs = Tensor.full(INF, dt, n);
        double[] want = new double[n];
        Arrays.fill(want, 1);
        String at = be.name() + " " + dt;
        Tensor out = Tensor.empty(dt, n);
        be.unary(UnaryOp.POW_SCALAR, NAN, ones, out); // x^scalar
        assertArrayEquals(want, out.toDoubleArray(), at);
        be.unary(UnaryOp.POW_SCALAR, -INF, minusOnes, out);
        assertArrayEquals(want, out.toDoubleArray(), at);
        be.binary(BinaryOp.POW, ones, nans, out); // x^y
        assertArrayEquals(want, out.toDoubleArray(), at);
        be.binary(BinaryOp.POW, minusOnes, Views.expand(Tensor.scalar(INF, dt), new int[] {n}), out); // x^scalar
        assertArrayEquals(want, out.toDoubleArray(), at);
        be.binary(BinaryOp.POW, Views.expand(Tensor.scalar(1, dt), new int[] {n}), nans, out); // scalar^y
        assertArrayEquals(want, out.toDoubleArray(), at);
        be.binary(BinaryOp.POW, Views.expand(Tensor.scalar(-1, dt), new int[] {n}), infs.neg(), out);
        assertArrayEquals(want, out.toDoubleArray(), at);
        Tensor strided = Tensor.empty(dt, n, 2).select(1, 0); // neither operand nor out contiguous
        be.binary(BinaryOp.POW, Tensor.ones(dt, n, 2).select(1, 1), Tensor.full(NAN, dt, n, 2).select(1, 0), strided);
        assertArrayEquals(want, strided.toDoubleArray(), at);
      }
    }
  }

  /** On a grid of special and ordinary values: Math.pow's bits everywhere but 1^y and (-1)^+-inf. */
  @Test
  void everyOtherValueKeepsMathPowsBits() {
    double[] grid = {0.0, -0.0, 1, -1, 2, -2, 0.5, -0.5, 3, -3, 1e-300, 1e300, 0.75, INF, -INF, NAN, Math.nextUp(1.0),
        Math.nextDown(-1.0)};
    for (double x : grid) {
      for (double y : grid) {
        boolean c = x == 1 || x == -1 && Double.isInfinite(y);
        double want = c ? 1 : Math.pow(x, y);
        assertEquals(Double.doubleToRawLongBits(want), Double.doubleToRawLongBits(ScalarKernels.pow(x, y)),
            "pow(" + x + ", " + y + ")");
        assertEquals(Double.doubleToRawLongBits(want), Double.doubleToRawLongBits(
            ScalarKernels.apply(BinaryOp.POW, x, y)), "POW " + x + ", " + y);
        assertEquals(Double.doubleToRawLongBits(want), Double.doubleToRawLongBits(
            ScalarKernels.apply(UnaryOp.POW_SCALAR, x, y)), "POW_SCALAR " + x + ", " + y);
      }
    }
  }
}
