package dev.ember.ops;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.autograd.Grad;
import dev.ember.backend.BinaryOp;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the elementwise definitions declare is what the ops do: the result dtype is the dtype policy's, and the
 * backward reads exactly what {@link Reads} says (changing anything else in place after the forward is harmless,
 * changing what it reads fails the backward).
 */
class DefinitionsTest {
  private static final DType[] DTYPES = {DType.BOOL, DType.I32, DType.I64, DType.F32, DType.F64};

  private static double param(Unary u) {
    return switch (u) {
      case LEAKY_RELU -> 0.1;
      case ELU -> 1.3;
      case SOFTPLUS -> 2;
      case POW_SCALAR -> 2.5;
      default -> 0;
    };
  }

  /** Values in [0.5, 1.5], where every op here is defined and differentiable. */
  private static Tensor positive(long seed, DType dtype) {
    return Tensor.rand(new Generator(seed), DType.F64, 2, 3).add(0.5).to(dtype);
  }

  private static void bumpVersion(Tensor t) {
    try (var ignored = Grad.off()) {
      ElementwiseOps.inPlace(BinaryOp.ADD, t, Tensor.scalar(0, t.dtype()));
    }
  }

  @ParameterizedTest
  @EnumSource(Unary.class)
  void unaryResultDtypeFollowsThePolicy(Unary u) {
    for (DType dt : DTYPES) {
      Tensor out = u.apply(positive(1, DType.F64).mul(3).to(dt), param(u));
      assertEquals(u.def().dtypes().result(dt), out.dtype(), u + " on " + dt);
    }
  }

  @ParameterizedTest
  @EnumSource(Unary.class)
  void unaryBackwardReadsWhatItDeclares(Unary u) {
    for (boolean changeInput : new boolean[] {true, false}) {
      Tensor leaf = positive(2, DType.F64).requiresGrad(true);
      Tensor x = leaf.mul(1);
      Tensor y = u.apply(x, param(u));
      Tensor loss = y.sum();
      bumpVersion(changeInput ? x : y);
      boolean reads = changeInput ? u.def().reads().input() : u.def().reads().output();
      String what = u + (changeInput ? " after its input changed" : " after its output changed");
      if (reads) {
        assertThrows(IllegalStateException.class, () -> loss.backward(), what);
      } else {
        assertDoesNotThrow(() -> loss.backward(), what);
      }
    }
  }

  @ParameterizedTest
  @EnumSource(Binary.class)
  void binaryResultDtypeFollowsThePolicy(Binary b) {
    DType[][] pairs = {{DType.I64, DType.I64}, {DType.I32, DType.I64}, {DType.I64, DType.F32}, {DType.F32, DType.F64},
        {DType.F64, DType.F64}};
    for (DType[] p : pairs) {
      Tensor out = b.apply(positive(3, DType.F64).mul(3).to(p[0]), positive(4, DType.F64).mul(3).to(p[1]));
      assertEquals(b.def().dtypes().result(DType.promote(p[0], p[1])), out.dtype(), b + " on " + p[0] + ", " + p[1]);
    }
  }

  @ParameterizedTest
  @EnumSource(Binary.class)
  void binaryBackwardReadsWhatItDeclares(Binary b) {
    if (!b.def().differentiable()) return;
    for (int change = 0; change < 3; change++) { // input a, input b, the output
      Tensor la = positive(5, DType.F64).requiresGrad(true);
      Tensor lb = positive(6, DType.F64).requiresGrad(true);
      Tensor a = la.mul(1);
      Tensor c = lb.mul(1);
      Tensor y = b.apply(a, c);
      Tensor loss = y.sum();
      bumpVersion(change == 0 ? a : change == 1 ? c : y);
      boolean reads = change < 2 ? b.def().reads().input() : b.def().reads().output();
      String what = b + " after " + (change == 0 ? "a" : change == 1 ? "b" : "its output") + " changed";
      if (reads) {
        assertThrows(IllegalStateException.class, () -> loss.backward(), what);
      } else {
        assertDoesNotThrow(() -> loss.backward(), what);
      }
    }
  }

  /**
   * mish's forward is its composite x * tanh(softplus(x)) run as one tape node: the same bits as those three ops
   * (what F.mish computed before mish was an op), recorded as one node, not three.
   */
  @Test
  void mishForwardIsItsCompositeBitForBitAndOneNode() {
    for (DType dt : new DType[] {DType.F32, DType.F64}) {
      Tensor x = Tensor.randn(new Generator(7), dt, 1000).mul(6).requiresGrad(true);
      Tensor y = ElementwiseOps.mish(x);
      Tensor composite;
      try (var ignored = Grad.off()) {
        composite = x.mul(ElementwiseOps.softplus(x, 1).tanh());
      }
      assertArrayEquals(composite.toDoubleArray(), y.toDoubleArray(), 0.0, dt.toString());
      assertEquals("mish", y.gradFn().name());
    }
  }
}
