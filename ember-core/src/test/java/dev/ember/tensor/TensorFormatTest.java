package dev.ember.tensor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.ember.autograd.Grad;
import org.junit.jupiter.api.Test;

/** Expected strings are what PyTorch 2.x prints for the same tensors (default print options). */
class TensorFormatTest {

  @Test
  void floatVectors() {
    assertEquals("tensor([1., 2., 3.])", Tensor.of(new float[] {1, 2, 3}).toString());
    assertEquals("tensor([-1.,  2., 10.])", Tensor.of(new float[] {-1, 2, 10}).toString());
    assertEquals("tensor([0.5000, 1.0000, 1.5000])", Tensor.of(new float[] {0.5f, 1, 1.5f}).toString());
    assertEquals("tensor([0., 0.])", Tensor.zeros(2).toString());
    assertEquals("tensor([0.1235, 2.0000])", Tensor.of(new double[] {0.123456, 2}).to(DType.F32).toString());
  }

  @Test
  void matrixIsAlignedWithFourDecimals() {
    Tensor m = Tensor.of(new float[][] {{1.5f, -2.25f}, {3f, 4.125f}});
    assertEquals("tensor([[ 1.5000, -2.2500],\n        [ 3.0000,  4.1250]])", m.toString());
    Tensor ints = Tensor.of(new float[][] {{1, 20}, {300, 4}});
    assertEquals("tensor([[  1.,  20.],\n        [300.,   4.]])", ints.toString());
  }

  @Test
  void threeDimensionsSeparateBlocksWithABlankLine() {
    Tensor t = Tensor.arange(0, 8, 1).reshape(2, 2, 2);
    assertEquals("tensor([[[0, 1],\n         [2, 3]],\n\n        [[4, 5],\n         [6, 7]]])", t.toString());
  }

  @Test
  void integerAndBoolTensors() {
    assertEquals("tensor([0, 1, 2])", Tensor.arange(3).toString());
    assertEquals("tensor([ -5,   0, 100])", Tensor.of(new long[] {-5, 0, 100}).toString());
    assertEquals("tensor([ True, False])", Tensor.of(new boolean[] {true, false}).toString());
    assertEquals("tensor([True, True])", Tensor.of(new boolean[] {true, true}).toString());
    assertEquals("tensor([1, 2], dtype=torch.int32)", Tensor.of(new int[] {1, 2}).toString());
  }

  @Test
  void nonDefaultDtypeSuffixUsesTorchNames() {
    assertEquals("tensor([1.5000, 2.0000], dtype=torch.float64)", Tensor.of(new double[] {1.5, 2}).toString());
    assertEquals("tensor(2., dtype=torch.float64)", Tensor.scalar(2, DType.F64).toString());
  }

  @Test
  void scientificModeIsSharedByAllElements() {
    assertEquals("tensor([1.0000e-05, 1.0000e+00])", Tensor.of(new double[] {1e-5, 1}).to(DType.F32).toString());
    assertEquals("tensor([1.0000e+00, 1.0000e+06])", Tensor.of(new float[] {1, 1e6f}).toString());
    assertEquals("tensor([1.0000e+09])", Tensor.of(new double[] {1e9}).to(DType.F32).toString());
    assertEquals("tensor([1000.,    1.])", Tensor.of(new float[] {1000, 1}).toString());
  }

  @Test
  void nonFiniteValuesDoNotWidenColumns() {
    assertEquals("tensor([1., nan, inf])", Tensor.of(new float[] {1, Float.NaN, Float.POSITIVE_INFINITY}).toString());
    assertEquals("tensor([  -inf, 1.5000])", Tensor.of(new float[] {Float.NEGATIVE_INFINITY, 1.5f}).toString());
    assertEquals("tensor([nan, nan])", Tensor.of(new float[] {Float.NaN, Float.NaN}).toString());
  }

  @Test
  void scalars() {
    assertEquals("tensor(3.5000)", Tensor.scalar(3.5).toString());
    assertEquals("tensor(3.)", Tensor.scalar(3).toString());
    assertEquals("tensor(7)", Tensor.scalar(7, DType.I64).toString());
    assertEquals("tensor(True)", Tensor.scalar(1, DType.BOOL).toString());
  }

  @Test
  void emptyTensors() {
    assertEquals("tensor([])", Tensor.zeros(0).toString());
    assertEquals("tensor([], size=(0, 3))", Tensor.zeros(0, 3).toString());
    assertEquals("tensor([], dtype=torch.int64)", Tensor.zeros(DType.I64, 0).toString());
    assertEquals("tensor([], size=(2, 0), dtype=torch.float64)", Tensor.zeros(DType.F64, 2, 0).toString());
  }

  @Test
  void autogradSuffixes() {
    Tensor x = Tensor.of(new float[] {1, 2}).requiresGrad(true);
    assertEquals("tensor([1., 2.], requires_grad=True)", x.toString());
    assertEquals("tensor([2., 4.], grad_fn=<MulBackward0>)", x.mul(2).toString());
    assertEquals("tensor(3., grad_fn=<SumBackward0>)", x.sum().toString());
    assertEquals("tensor([[-0.6931, -0.6931]], grad_fn=<LogSoftmaxBackward0>)",
        Tensor.ones(1, 2).requiresGrad(true).logSoftmax(1).toString());
    assertEquals("tensor([1., 2.], dtype=torch.float64, requires_grad=True)",
        Tensor.of(new double[] {1, 2}).requiresGrad(true).toString());
    try (Grad ignored = Grad.off()) {
      assertEquals("tensor([2., 4.])", x.mul(2).toString());
    }
  }

  @Test
  void viewsPrintTheirOwnElements() {
    Tensor m = Tensor.arange(0, 6, 1).reshape(2, 3);
    assertEquals("tensor([[0, 3],\n        [1, 4],\n        [2, 5]])", m.t().toString());
    assertEquals("tensor([1, 4])", m.select(1, 1).toString());
  }

  @Test
  void summarizesLargeVectors() {
    assertEquals("tensor([   0,    1,    2,  ..., 1997, 1998, 1999])", Tensor.arange(2000).toString());
    // the mode comes from the printed (edge) elements: 2.5 everywhere is not integer-valued
    assertEquals("tensor([2.5000, 2.5000, 2.5000,  ..., 2.5000, 2.5000, 2.5000])", Tensor.full(2.5, 1001).toString());
    // exactly 1000 elements are printed in full
    String full = Tensor.zeros(DType.I64, 1000).toString();
    assertEquals(1000, full.split(",").length);
  }

  @Test
  void summarizesLargeMatrices() {
    String expected = "tensor([[   0,    1,    2,  ...,   17,   18,   19],\n"
        + "        [  20,   21,   22,  ...,   37,   38,   39],\n"
        + "        [  40,   41,   42,  ...,   57,   58,   59],\n"
        + "        ...,\n"
        + "        [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n"
        + "        [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n"
        + "        [1980, 1981, 1982,  ..., 1997, 1998, 1999]])";
    assertEquals(expected, Tensor.arange(2000).reshape(100, 20).toString());
    // small dims are printed in full even when summarizing
    String narrow = Tensor.arange(2002).reshape(1001, 2).toString();
    assertEquals("tensor([[   0,    1],\n        [   2,    3],\n        [   4,    5],\n        ...,\n"
        + "        [1996, 1997],\n        [1998, 1999],\n        [2000, 2001]])", narrow);
  }
}
