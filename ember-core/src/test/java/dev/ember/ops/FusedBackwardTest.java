package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import org.junit.jupiter.api.Test;

/**
 * Backward passes that run as one kernel instead of the tensor ops of their formula (softmax's and
 * log_softmax's, max over a dim's) give the formula's bits. The float64 gradient checks of the op
 * table show the formula is the derivative; this shows the fused form is the formula.
 */
class FusedBackwardTest {
  /** Row lengths around the vector width and its tails, one long single row summed in chunk partials, and a 3-d case. */
  private static final int[][] SHAPES = {{5, 1}, {5, 3}, {4, 17}, {3, 33}, {2, 1000}, {64, 1024}, {1, 300_000}, {3, 4, 33}};

  private static Tensor data(long seed, DType dt, int... shape) {
    return Tensor.randn(new Generator(seed), shape).mul(2).to(dt);
  }

  /** What the composite formula gives, op by op, for the gradient of softmax (or log_softmax) over the last axis. */
  private static Tensor composite(Tensor g, Tensor y, boolean log) {
    int ax = y.dim() - 1;
    return log ? g.sub(y.exp().mul(g.sum(ax, true))) : y.mul(g.sub(g.mul(y).sum(ax, true)));
  }

  @Test
  void softmaxBackwardGivesTheCompositesBits() {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      for (boolean log : new boolean[] {false, true}) {
        for (int[] shape : SHAPES) {
          Tensor x = data(shape.length * 31L + shape[shape.length - 1], dt, shape).requiresGrad(true);
          Tensor y = log ? x.logSoftmax(-1) : x.softmax(-1);
          Tensor g = data(7, dt, shape);
          y.backward(g);
          Tensor want = composite(g, y.detach(), log);
          String what = (log ? "log_softmax " : "softmax ") + dt + " " + java.util.Arrays.toString(shape);
          assertBitsEqual(want, x.grad(), what);
        }
      }
    }
  }

  @Test
  void softmaxBackwardOfAStridedGradientTakesTheComposite() {
    Tensor x = data(3, DType.F32, 6, 5).requiresGrad(true);
    Tensor y = x.softmax(1);
    Tensor g = Views.transpose(data(4, DType.F32, 5, 6), 0, 1); // not contiguous: the kernel is not used
    y.backward(g);
    assertBitsEqual(composite(g, y.detach(), false), x.grad(), "strided g");
  }

  @Test
  void softmaxBackwardKernelRejectsWhatItCannotTake() {
    Tensor y = Tensor.ones(4, 3);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> dev.ember.tensor.Device.CPU.backend().softmaxBackward(Views.transpose(Tensor.ones(3, 4), 0, 1), y, false, Tensor.empty(4, 3)));
    assertEquals("softmax backward: g, y and out must be contiguous tensors of one floating dtype and shape,"
        + " got g float32[4, 3], y float32[4, 3], out float32[4, 3]", e.getMessage());
    e = assertThrows(IllegalArgumentException.class,
        () -> dev.ember.tensor.Device.CPU.backend().softmaxBackward(Tensor.ones(4, 3), y, true, Tensor.empty(DType.F64, 4, 3)));
    assertEquals("log_softmax backward: g, y and out must be contiguous tensors of one floating dtype and shape,"
        + " got g float32[4, 3], y float32[4, 3], out float64[4, 3]", e.getMessage());
  }

  @Test
  void maxOverADimSendsTheGradientToTheFirstExtreme() {
    float nan = Float.NaN;
    float[][] rows = {{1, 3, 3, 2}, {-0f, 0f, -1, -2}, {1, nan, 5, nan}, {-5, -5, -5, -5}, {2, Float.POSITIVE_INFINITY, 7, 1}};
    int[] maxAt = {1, 0, 1, 0, 1};
    int[] minAt = {0, 3, 1, 0, 3};
    float[] flat = new float[20];
    for (int r = 0; r < 5; r++) System.arraycopy(rows[r], 0, flat, r * 4, 4);
    for (boolean max : new boolean[] {true, false}) {
      int[] at = max ? maxAt : minAt;
      for (DType dt : new DType[] {DType.F32, DType.F64}) {
        for (boolean transposed : new boolean[] {false, true}) { // the row kernel, then the strided loop
          Tensor base = transposed ? Views.transpose(Tensor.of(flat, 5, 4).to(dt).transpose(0, 1).contiguous(), 0, 1)
              : Tensor.of(flat, 5, 4).to(dt);
          Tensor x = base.detach().requiresGrad(true);
          Tensor[] r = max ? ReduceOps.max(x, 1, false) : ReduceOps.min(x, 1, false);
          long[] idx = r[1].toLongArray();
          String what = (max ? "max " : "min ") + dt + (transposed ? " transposed" : "");
          for (int i = 0; i < 5; i++) assertEquals(at[i], idx[i], what + " row " + i);
          r[0].backward(Tensor.of(new float[] {1, 2, 3, 4, 5}, 5).to(dt));
          double[] grad = x.grad().toDoubleArray();
          double[] want = new double[20];
          for (int i = 0; i < 5; i++) want[i * 4 + at[i]] = i + 1;
          assertArrayEquals(want, grad, 0, what + " gradient");
        }
      }
    }
  }

  private static void assertBitsEqual(Tensor want, Tensor got, String what) {
    assertEquals(want.dtype(), got.dtype(), what + " dtype");
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    if (want.dtype() == DType.F32) {
      float[] w = want.toFloatArray();
      float[] o = got.toFloatArray();
      for (int i = 0; i < w.length; i++) {
        if (Float.floatToIntBits(w[i]) != Float.floatToIntBits(o[i])) {
          throw new AssertionError(what + ": element " + i + " is " + o[i] + ", the composite gives " + w[i]);
        }
      }
    } else {
      double[] w = want.toDoubleArray();
      double[] o = got.toDoubleArray();
      for (int i = 0; i < w.length; i++) {
        if (Double.doubleToLongBits(w[i]) != Double.doubleToLongBits(o[i])) {
          throw new AssertionError(what + ": element " + i + " is " + o[i] + ", the composite gives " + w[i]);
        }
      }
    }
  }
}
