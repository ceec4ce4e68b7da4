package dev.ember.autograd;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.BinaryOp;
import dev.ember.ops.ElementwiseOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Autograd through in-place ops (PyTorch's semantics): history rebased, version checks, leaves and views. The
 * expected values are derived by hand; src/test/resources/dev/ember/autograd/inplace_reference.py prints torch
 * 1.13's for the same cases.
 */
class InPlaceAutogradTest {

  private static Tensor leaf(double... v) {
    return Tensor.of(v).requiresGrad(true);
  }

  private static void assertValues(double[] expected, Tensor t, double tol) {
    double[] got = t.toDoubleArray();
    assertEquals(expected.length, got.length, "numel");
    for (int i = 0; i < got.length; i++) assertEquals(expected[i], got[i], tol, "element " + i);
  }

  /** A [2, 3] F64 leaf with values in [lo, hi], none within 0.05 of the points in {@code avoid} (kinks). */
  private static Tensor input(long seed, double lo, double hi, double... avoid) {
    Tensor t = Tensor.rand(new Generator(seed), DType.F64, 2, 3).mul(hi - lo).add(lo);
    double[] v = t.toDoubleArray();
    for (int i = 0; i < v.length; i++) {
      for (double a : avoid) if (Math.abs(v[i] - a) < 0.05) v[i] = a + (v[i] < a ? -0.05 : 0.05);
    }
    return Tensor.of(v, 2, 3).requiresGrad(true);
  }

  /** Gradcheck of {@code op} applied in place to a non-leaf copy of the input ({@code x * 1}). */
  private static void checkUnary(String name, UnaryOperator<Tensor> op, Tensor x) {
    GradCheck.check(name, in -> {
      Tensor y = in.get(0).mul(1);
      Tensor r = op.apply(y);
      assertSame(y, r, name + " returns its tensor");
      return r;
    }, List.of(x));
    // and the same values and gradient as the out-of-place op
    assertTrue(x.grad() != null, name + ": no gradient reached the leaf");
  }

  // ---------------------------------------------------------------- gradchecks on a non-leaf

  @Test
  void unaryInPlaceOpsPassGradcheckOnANonLeaf() {
    checkUnary("relu_", Tensor::relu_, input(1, -2, 2, 0));
    checkUnary("sigmoid_", Tensor::sigmoid_, input(2, -3, 3));
    checkUnary("tanh_", Tensor::tanh_, input(3, -2, 2));
    checkUnary("exp_", Tensor::exp_, input(4, -2, 2));
    checkUnary("expm1_", Tensor::expm1_, input(5, -2, 2));
    checkUnary("neg_", Tensor::neg_, input(6, -2, 2));
    checkUnary("abs_", Tensor::abs_, input(7, -2, 2, 0));
    checkUnary("sqrt_", Tensor::sqrt_, input(8, 0.5, 3));
    checkUnary("rsqrt_", Tensor::rsqrt_, input(9, 0.5, 3));
    checkUnary("log_", Tensor::log_, input(10, 0.5, 3));
    checkUnary("log1p_", Tensor::log1p_, input(11, 0, 3));
    checkUnary("square_", Tensor::square_, input(12, -2, 2));
    checkUnary("reciprocal_", Tensor::reciprocal_, input(13, 0.5, 3));
    checkUnary("sin_", Tensor::sin_, input(14, -3, 3));
    checkUnary("cos_", Tensor::cos_, input(15, -3, 3));
    checkUnary("pow_", t -> t.pow_(3), input(16, -2, 2));
    checkUnary("clamp_", t -> t.clamp_(-0.5, 0.7), input(17, -2, 2, -0.5, 0.7));
    checkUnary("leaky_relu_", t -> ElementwiseOps.leakyRelu_(t, 0.1), input(18, -2, 2, 0));
    checkUnary("leaky_relu_ (negative slope)", t -> ElementwiseOps.leakyRelu_(t, -0.3), input(19, -2, 2, 0));
    checkUnary("elu_", t -> ElementwiseOps.elu_(t, 1.5), input(20, -2, 2, 0));
    checkUnary("silu_", ElementwiseOps::silu_, input(21, -3, 3));
    checkUnary("mish_", ElementwiseOps::mish_, input(22, -3, 3));
    checkUnary("add_ scalar", t -> t.add_(1.5), input(23, -2, 2));
    checkUnary("sub_ scalar", t -> t.sub_(1.5), input(24, -2, 2));
    checkUnary("mul_ scalar", t -> t.mul_(-2.5), input(25, -2, 2));
    checkUnary("div_ scalar", t -> t.div_(4), input(26, -2, 2));
  }

  @Test
  void binaryInPlaceOpsPassGradcheckInBothOperandsWithBroadcasting() {
    Tensor b = Tensor.of(new double[] {0.7, -1.3, 2.1}).requiresGrad(true); // broadcasts over [2, 3]
    for (String op : List.of("add_", "sub_", "mul_", "div_")) {
      Tensor a = input(30, -2, 2);
      GradCheck.check(op, in -> {
        Tensor y = in.get(0).mul(1);
        return switch (op) {
          case "add_" -> y.add_(in.get(1));
          case "sub_" -> y.sub_(in.get(1));
          case "mul_" -> y.mul_(in.get(1));
          default -> y.div_(in.get(1));
        };
      }, List.of(a, b));
    }
    // the other differentiable primitives in place reuse their out-of-place rule with a copy of the old value
    for (BinaryOp op : List.of(BinaryOp.MAXIMUM, BinaryOp.MINIMUM, BinaryOp.POW)) {
      Tensor a = input(31, 0.5, 2, 0.7, 2.1);
      GradCheck.check(op + "_", in -> ElementwiseOps.inPlace(op, in.get(0).mul(1), in.get(1)), List.of(a, b));
    }
    Tensor y = leaf(1, 2).mul(1);
    assertEquals("eq_: the result has no gradient: self=[2], other=[2]", assertThrows(IllegalArgumentException.class,
        () -> ElementwiseOps.inPlace(BinaryOp.EQ, y, Tensor.of(new double[] {1, 0}))).getMessage());
  }

  @Test
  void aTensorThatDoesNotRequireGradTakesAHistoryFromItsOperand() {
    Tensor w = leaf(1, 2, 3);
    Tensor acc = Tensor.zeros(DType.F64, 3);
    acc.add_(w.mul(2)).mul_(w); // acc = 2w * w
    assertFalse(acc.isLeaf());
    assertEquals("mul_", acc.gradFn().name());
    acc.sum().backward();
    assertValues(new double[] {4, 8, 12}, w.grad(), 1e-12); // d(2w^2)/dw
  }

  @Test
  void anOperandAliasingTheTensorIsReadAtItsOldValue() {
    Tensor x = leaf(1, -2, 3);
    Tensor y = x.mul(1);
    y.mul_(y); // y^2, the operand read at its old value (torch 1.13 refuses: its saved operand was overwritten)
    assertValues(new double[] {1, 4, 9}, y, 0);
    y.sum().backward();
    assertValues(new double[] {2, -4, 6}, x.grad(), 0);
  }

  @Test
  void copyAndFillGiveTheOverwrittenHistoryZerosAndTheSourceItsGradient() {
    Tensor x = leaf(1, 2, 3);
    Tensor w = leaf(4, 5, 6);
    Tensor y = x.mul(3);
    y.copy_(w.mul(2));
    y.sum().backward();
    assertValues(new double[] {0, 0, 0}, x.grad(), 0);
    assertValues(new double[] {2, 2, 2}, w.grad(), 0);

    Tensor p = leaf(1, 2);
    Tensor q = p.mul(3);
    q.fill_(7).mul(p).sum().backward(); // fill_ cuts q from p; the later mul still reads p
    assertValues(new double[] {7, 7}, p.grad(), 0);
  }

  // ---------------------------------------------------------------- history rebasing

  @Test
  void nodesRecordedBeforeAnInPlaceOpStillRouteToTheOldHistory() {
    // torch: x = [-1, 0.5, 2]; y = x*2; z = y.exp(); y.relu_(); (z.sum() + y.sum()).backward()
    // x.grad = 2 exp(2x) + 2 [2x > 0] = [0.2707, 7.4366, 111.1963]
    Tensor x = leaf(-1, 0.5, 2);
    Tensor y = x.mul(2);
    Tensor z = y.exp();
    Node mul = y.gradFn();
    y.relu_();
    assertEquals("relu_", y.gradFn().name());
    assertEquals("relu_Backward", y.gradFn().toString());
    assertSame(mul, y.gradFn().next[0], "relu_'s input is y's previous history");
    assertSame(mul, z.gradFn().next[0], "exp still reads y's previous history");
    z.sum().add(y.sum()).backward();
    double[] expected = new double[3];
    double[] xs = {-1, 0.5, 2};
    for (int i = 0; i < 3; i++) expected[i] = 2 * Math.exp(2 * xs[i]) + (xs[i] > 0 ? 2 : 0);
    assertValues(expected, x.grad(), 1e-12);
    assertValues(new double[] {0.2707, 7.4366, 111.1963}, x.grad(), 1e-4); // printed by torch 1.13
  }

  @Test
  void inPlaceOpsChainAndMatchTheOutOfPlaceComputation() {
    Tensor x1 = leaf(-1.5, 0.25, 2);
    Tensor x2 = leaf(-1.5, 0.25, 2);
    // each op's saved value is not changed by a later one (sigmoid_ reads its output: it comes last)
    Tensor a = x1.mul(3).add_(1).neg_().mul_(Tensor.of(new double[] {1, -2, 3})).sigmoid_();
    Tensor b = x2.mul(3).add(1).neg().mul(Tensor.of(new double[] {1, -2, 3})).sigmoid();
    assertArrayEquals(b.toDoubleArray(), a.toDoubleArray());
    a.mul(Tensor.of(new double[] {0.5, 2, -1})).sum().backward();
    b.mul(Tensor.of(new double[] {0.5, 2, -1})).sum().backward();
    assertArrayEquals(x2.grad().toDoubleArray(), x1.grad().toDoubleArray());
  }

  @Test
  void hooksOfATensorSeeItsCurrentHistoryOnly() {
    Tensor x = leaf(1, 2);
    Tensor y = x.mul(1);
    int[] calls = {0};
    Tensor z = y.mul(3); // recorded before the in-place op
    y.add_(1);
    y.registerHook(g -> {
      calls[0]++;
      return g.mul(10);
    });
    z.sum().add(y.sum()).backward();
    assertEquals(1, calls[0]);
    assertValues(new double[] {13, 13}, x.grad(), 0); // 3 through z, 10 through y's new history
  }

  // ---------------------------------------------------------------- version checks

  @Test
  void modifyingASavedOutputFailsNamingTheSavingOpAndTheInPlaceOp() {
    Tensor x = leaf(0.5, -1, 2);
    Tensor y = x.sigmoid();
    y.mul_(2);
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> y.sum().backward());
    assertEquals("sigmoid: its output [3] was modified in place (last by mul_) after the forward (version 1,"
        + " expected 0), so its gradient would be wrong; hint: use an out-of-place op or clone() before modifying",
        ex.getMessage());
  }

  @Test
  void modifyingASavedInputFailsNamingTheSavingOp() {
    Tensor x = leaf(0.5, -1, 2);
    Tensor y = x.mul(1);
    Tensor s = y.sin(); // sin saves its input
    y.exp_();
    IllegalStateException ex = assertThrows(IllegalStateException.class, () -> s.sum().backward());
    assertTrue(ex.getMessage().startsWith("sin: input 0 [3] was modified in place (last by exp_) after the forward"
        + " (version 1, expected 0)"), ex.getMessage());

    // a second in-place op invalidates the output the first one saved (relu_ reads its result)
    Tensor x2 = leaf(0.5, -1, 2);
    Tensor r = x2.mul(1).relu_().mul_(2);
    assertTrue(assertThrows(IllegalStateException.class, () -> r.sum().backward()).getMessage()
        .startsWith("relu_: its output [3] was modified in place (last by mul_) after the forward (version 2,"
            + " expected 1)"));
  }

  @Test
  void anInPlaceOpWhoseBackwardReadsNothingMayFollowAnother() {
    Tensor x = leaf(0.5, -1, 2);
    Tensor y = x.mul(1).exp_(); // exp_ reads its output...
    y.mul_(Tensor.scalar(3, DType.F64)); // ...which mul_ changes, so backward must fail
    assertThrows(IllegalStateException.class, () -> y.sum().backward());
    Tensor x2 = leaf(0.5, -1, 2);
    Tensor y2 = x2.mul(1).neg_().add_(3).mul_(2); // neg_ and add_ read nothing
    y2.sum().backward();
    assertValues(new double[] {-2, -2, -2}, x2.grad(), 0);
  }

  // ---------------------------------------------------------------- leaves and views

  @Test
  void aLeafThatRequiresGradOrAViewOfOneCannotBeModifiedInPlaceWhileRecording() {
    Tensor x = Tensor.of(new double[] {1, -2, 3, -4, 5, -6}, 2, 3).requiresGrad(true);
    IllegalStateException leafEx = assertThrows(IllegalStateException.class, x::relu_);
    assertEquals("relu_: a leaf Variable that requires grad is being used in an in-place operation (tensor [2, 3]);"
        + " hint: modify it under Grad.off(), or use the out-of-place op", leafEx.getMessage());
    IllegalStateException viewEx = assertThrows(IllegalStateException.class, () -> x.select(0, 1).mul_(2));
    assertEquals("mul_: a view of a leaf Variable that requires grad is being used in an in-place operation"
        + " (view [3] of [2, 3]); hint: modify it under Grad.off(), or clone() the view first", viewEx.getMessage());
    assertThrows(IllegalStateException.class, () -> x.reshape(6).clamp_(0, 1));
    assertThrows(IllegalStateException.class, () -> x.t().t().sigmoid_()); // a view of a view
    assertValues(new double[] {1, -2, 3, -4, 5, -6}, x, 0); // nothing was written
    assertEquals(0, x.version());
    // outside recording it is the optimizer's business
    try (Grad ignored = Grad.off()) {
      x.relu_();
    }
    assertValues(new double[] {1, 0, 3, 0, 5, 0}, x, 0);
    assertTrue(x.isLeaf());
    // an expanded view has several elements at one location: its write cannot be differentiated (an argument
    // error, as without grad: see MemoryOverlapTest)
    Tensor y = leaf(1, 2).mul(1);
    assertTrue(assertThrows(IllegalArgumentException.class, () -> y.expand(3, 2).add_(1)).getMessage()
        .startsWith("add_: more than one element of the written-to tensor refers to a single memory location"));
    assertTrue(assertThrows(IllegalArgumentException.class, () -> y.expand(3, 2).exp_()).getMessage()
        .startsWith("exp_: more than one element of the written-to tensor refers to a single memory location"));
  }

  @Test
  void anInPlaceOpOnAViewOfANonLeafRebasesTheBase() {
    // y = x * 2 ([2, 3]); y[0] *= 3 through a view; loss = sum(y * c): d/dx = 6c in row 0, 2c in row 1
    Tensor x = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 2, 3).requiresGrad(true);
    Tensor c = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 2, 3);
    Tensor y = x.mul(2);
    Tensor row = y.select(0, 0);
    row.mul_(3);
    assertEquals("copy_slices", y.gradFn().name());
    assertValues(new double[] {6, 12, 18, 8, 10, 12}, y, 0);
    y.mul(c).sum().backward();
    assertValues(new double[] {6, 12, 18, 8, 10, 12}, x.grad(), 0);

    // the view's own history goes through the op too: d(sum(row))/dx = 6 in row 0
    Tensor x2 = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 2, 3).requiresGrad(true);
    Tensor y2 = x2.mul(2);
    Tensor col = y2.select(1, 1); // a strided view
    col.mul_(3).relu_(); // (relu_ then mul_ would fail: relu_ reads its output)
    col.sum().backward();
    assertValues(new double[] {0, 6, 0, 0, 6, 0}, x2.grad(), 0);
  }

  @Test
  void aViewMadeBeforeItsBaseWasModifiedFollowsTheBasesNewHistory() {
    // torch regenerates the view's grad_fn: v = y.view(6); y.exp_(); v.sum() -> d/dx = 2 exp(2x)
    double[] xs = {-1, 0.5, 2, 0, 1, -0.5};
    Tensor x = Tensor.of(xs, 2, 3).requiresGrad(true);
    Tensor y = x.mul(2);
    Tensor v = y.reshape(6);
    y.exp_();
    assertEquals("as_strided", v.gradFn().name());
    v.sum().backward();
    double[] expected = new double[6];
    for (int i = 0; i < 6; i++) expected[i] = 2 * Math.exp(2 * xs[i]);
    assertValues(expected, x.grad(), 1e-12);

    // a sibling view modified in place after the base: its history is brought up to date first, and the older
    // view follows both writes (mul_ by 3 reads no saved value, so the later add_ does not invalidate it)
    Tensor x2 = Tensor.of(xs, 2, 3).requiresGrad(true);
    Tensor y2 = x2.mul(2);
    Tensor v2 = y2.reshape(6);
    Tensor row = y2.select(0, 1);
    y2.mul_(3);
    row.mul_(Tensor.of(new double[] {1, 10, 100}));
    v2.sum().backward();
    assertValues(new double[] {6, 6, 6, 6, 60, 600}, x2.grad(), 0);

    // an expanded view of a modified base: its elements' gradients add up at their one location
    Tensor p = Tensor.of(new double[] {1, 2}).requiresGrad(true);
    Tensor q = p.mul(1);
    Tensor e = q.expand(3, 2);
    q.mul_(5);
    e.sum().backward();
    assertValues(new double[] {15, 15}, p.grad(), 0);
  }

  @Test
  void writingSlicesOfABufferThatDoesNotRequireGradGivesItAHistory() {
    // torch: out = zeros(3, 2); out[0] = a; out[1] = b * 2; loss = sum(out * c). Here row 1's view is made before
    // the first write, which torch 1.13 refuses (it takes the regenerated view for a leaf); the gradients are the same
    Tensor a = leaf(1, 2);
    Tensor b = leaf(3, 4);
    Tensor c = Tensor.of(new double[] {1, 2, 3, 4, 5, 6}, 3, 2);
    Tensor out = Tensor.zeros(DType.F64, 3, 2);
    Tensor row1 = out.select(0, 1);
    out.select(0, 0).copy_(a);
    assertTrue(out.requiresGrad());
    assertTrue(row1.requiresGrad(), "a view made before the write follows its base's new history");
    row1.copy_(b.mul(2));
    assertValues(new double[] {1, 2, 6, 8, 0, 0}, out, 0);
    out.mul(c).sum().backward();
    assertValues(new double[] {1, 2}, a.grad(), 0);
    assertValues(new double[] {6, 8}, b.grad(), 0);
    assertNull(out.grad());
  }

  @Test
  void inPlaceOpsWithoutGradientsLeaveNoHistory() {
    Tensor t = Tensor.of(new double[] {-1, 2});
    t.relu_().exp_();
    assertTrue(t.isLeaf());
    assertNull(t.gradFn());
    assertEquals(2, t.version());
    assertValues(new double[] {1, Math.exp(2)}, t, 1e-12);
    Tensor i = Tensor.of(new long[] {1, 2});
    assertEquals("exp_: result type float32 can't be cast to the desired output type int64: x=[2]",
        assertThrows(IllegalArgumentException.class, i::exp_).getMessage());
  }

  private static void assertSameBits(Tensor expected, Tensor got) {
    assertArrayEquals(expected.toFloatArray(), got.toFloatArray());
  }

  @Test
  void inPlaceUnaryOpsGiveTheOutOfPlaceBitsInF32AndOnStridedViews() {
    Tensor a = Tensor.randn(new Generator(3), 4, 5);
    assertSameBits(a.t().relu(), a.cloneContiguous().t().relu_());
    assertSameBits(a.t().tanh(), a.cloneContiguous().t().tanh_());
    assertSameBits(a.t().exp(), a.cloneContiguous().t().exp_());
    assertSameBits(a.t().sigmoid(), a.cloneContiguous().t().sigmoid_());
    assertSameBits(ElementwiseOps.mish(a.t()), ElementwiseOps.mish_(a.cloneContiguous().t()));
    Tensor h = Tensor.of(new double[] {-1, 0.3, 2}).to(DType.BF16);
    Tensor expected = h.sigmoid();
    assertArrayEquals(expected.toFloatArray(), h.sigmoid_().toFloatArray());
    assertEquals(DType.BF16, h.dtype());
  }
}
