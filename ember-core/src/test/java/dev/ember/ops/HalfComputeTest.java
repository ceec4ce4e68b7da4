package dev.ember.ops;

import static dev.ember.testing.HalfBits.bits;
import static dev.ember.testing.HalfBits.rounded;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Random;
import java.util.function.BinaryOperator;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Ops on BF16 and F16 compute in F32 and round once on store (PyTorch's CPU semantics): each result is checked bit
 * for bit against the F32 op on the widened inputs, rounded with {@link HalfFloats}.
 */
class HalfComputeTest {
  static final DType[] HALVES = {DType.BF16, DType.F16};

  /** n values in [-3, 3), already representable in dtype (so widening them to F32 is exact). */
  static Tensor input(DType dtype, long seed, int... shape) {
    Random r = new Random(seed);
    int n = 1;
    for (int d : shape) n *= d;
    float[] v = new float[n];
    for (int i = 0; i < n; i++) v[i] = (float) (r.nextDouble() * 6 - 3);
    return Tensor.of(v, shape).to(dtype);
  }



  static void assertHalfOf(DType dtype, Tensor f32Reference, Tensor got, String what) {
    assertEquals(dtype, got.dtype(), what + ": result dtype");
    assertArrayEquals(f32Reference.shape(), got.shape(), what + ": shape");
    assertArrayEquals(rounded(dtype, f32Reference), bits(got), what + " on " + dtype);
  }

  @Test
  void unaryOpsRoundTheF32ResultOnce() {
    Map<String, UnaryOperator<Tensor>> ops = new LinkedHashMap<>();
    ops.put("exp", Tensor::exp);
    ops.put("tanh", Tensor::tanh);
    ops.put("sigmoid", Tensor::sigmoid);
    ops.put("relu", Tensor::relu);
    ops.put("neg", Tensor::neg);
    ops.put("sqrt(abs)", t -> t.abs().sqrt());
    ops.put("log(abs)", t -> t.abs().log());
    ops.put("gelu", t -> ElementwiseOps.gelu(t, false));
    ops.put("mul 0.1", t -> t.mul(0.1));
    ops.put("add 1/3", t -> t.add(1.0 / 3));
    ops.put("div 7", t -> t.div(7.0));
    ops.put("clamp", t -> t.clamp(-1.1, 0.7));
    for (DType dt : HALVES) {
      Tensor x = input(dt, 1, 7, 9);
      Tensor xf = x.to(DType.F32);
      for (Map.Entry<String, UnaryOperator<Tensor>> e : ops.entrySet()) {
        // sqrt(abs) and log(abs) are two ops, but abs is exact in the half type, so one rounding still makes them
        assertHalfOf(dt, e.getValue().apply(xf), e.getValue().apply(x), e.getKey());
      }
    }
  }

  @Test
  void binaryOpsComputeInF32AndPromoteAsTorch() {
    Map<String, BinaryOperator<Tensor>> ops = new LinkedHashMap<>();
    ops.put("add", Tensor::add);
    ops.put("sub", Tensor::sub);
    ops.put("mul", Tensor::mul);
    ops.put("div", Tensor::div);
    ops.put("maximum", ElementwiseOps::maximum);
    ops.put("pow", (a, b) -> a.abs().pow(b));
    for (DType dt : HALVES) {
      Tensor a = input(dt, 2, 4, 6);
      Tensor b = input(dt, 3, 6); // broadcast along the rows
      for (Map.Entry<String, BinaryOperator<Tensor>> e : ops.entrySet()) {
        Tensor ref = e.getValue().apply(a.to(DType.F32), b.to(DType.F32));
        assertHalfOf(dt, ref, e.getValue().apply(a, b), e.getKey());
      }
      // half with an integer stays half: the integer is first converted to the half type, as torch
      Tensor ints = Tensor.of(new long[] {1, 257, -3, 2049, 5, 6}, 6);
      Tensor ref = a.to(DType.F32).add(ints.to(dt).to(DType.F32));
      assertHalfOf(dt, ref, a.add(ints), "add int64");
      // half with float32 gives float32, computed without rounding
      Tensor f = Tensor.of(new float[] {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, 6);
      Tensor mixed = a.mul(f);
      assertEquals(DType.F32, mixed.dtype());
      assertArrayEquals(a.to(DType.F32).mul(f).toFloatArray(), mixed.toFloatArray());
      // comparisons give bool
      Tensor gt = a.gt(b);
      assertEquals(DType.BOOL, gt.dtype());
      assertArrayEquals(a.to(DType.F32).gt(b.to(DType.F32)).toFloatArray(), gt.toFloatArray());
    }
    // bf16 with f16 gives f32: both convert exactly, the op does not round
    Tensor x = input(DType.BF16, 4, 5);
    Tensor y = input(DType.F16, 5, 5);
    Tensor s = x.add(y);
    assertEquals(DType.F32, s.dtype());
    assertArrayEquals(x.to(DType.F32).add(y.to(DType.F32)).toFloatArray(), s.toFloatArray());
  }

  @Test
  void reductionsAccumulateInF32() {
    for (DType dt : HALVES) {
      Tensor x = input(dt, 6, 5, 40);
      Tensor xf = x.to(DType.F32);
      assertHalfOf(dt, xf.sum(), x.sum(), "sum");
      assertHalfOf(dt, xf.sum(1, false), x.sum(1, false), "sum(1)");
      assertHalfOf(dt, xf.mean(), x.mean(), "mean");
      assertHalfOf(dt, ReduceOps.var(xf, new int[] {1}, true, true), ReduceOps.var(x, new int[] {1}, true, true), "var");
      assertHalfOf(dt, ReduceOps.std(xf, null, true, false), ReduceOps.std(x, null, true, false), "std");
      assertHalfOf(dt, ReduceOps.softmax(xf, 1, false), ReduceOps.softmax(x, 1, false), "softmax");
      assertHalfOf(dt, ReduceOps.softmax(xf, 0, true), ReduceOps.softmax(x, 0, true), "log_softmax");
      assertHalfOf(dt, ReduceOps.logsumexp(xf, new int[] {1}, false), ReduceOps.logsumexp(x, new int[] {1}, false),
          "logsumexp");
      assertHalfOf(dt, ReduceOps.cumsum(xf, 1), ReduceOps.cumsum(x, 1), "cumsum");
      assertHalfOf(dt, ReduceOps.amax(xf, new int[] {1}, false), ReduceOps.amax(x, new int[] {1}, false), "amax");
      Tensor[] mf = ReduceOps.max(xf, 1, false);
      Tensor[] m = ReduceOps.max(x, 1, false);
      assertHalfOf(dt, mf[0], m[0], "max values");
      assertEquals(DType.I64, m[1].dtype());
      assertArrayEquals(mf[1].toDoubleArray(), m[1].toDoubleArray(), "max indices");
      assertArrayEquals(ReduceOps.argmin(xf, 0, false).toDoubleArray(), ReduceOps.argmin(x, 0, false).toDoubleArray());
      assertEquals(DType.BOOL, ReduceOps.any(x, null, false).dtype());
    }
  }

  @Test
  void matmulAndLinearUseTheF32Gemm() {
    for (DType dt : HALVES) {
      Tensor a = input(dt, 7, 6, 33);
      Tensor b = input(dt, 8, 33, 5);
      assertHalfOf(dt, a.to(DType.F32).matmul(b.to(DType.F32)), a.matmul(b), "matmul");
      Tensor w = input(dt, 9, 5, 33);
      Tensor bias = input(dt, 10, 5);
      assertHalfOf(dt, LinalgOps.linear(a.to(DType.F32), w.to(DType.F32), bias.to(DType.F32)),
          LinalgOps.linear(a, w, bias), "linear");
      Tensor a3 = input(dt, 11, 2, 3, 4);
      Tensor b3 = input(dt, 12, 2, 4, 3);
      assertHalfOf(dt, LinalgOps.bmm(a3.to(DType.F32), b3.to(DType.F32)), LinalgOps.bmm(a3, b3), "bmm");
    }
    // as torch, matmul does not mix dtypes
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> input(DType.BF16, 1, 2, 2).matmul(input(DType.F16, 2, 2, 2)));
    assertTrue(e.getMessage().startsWith("matmul: operands have different dtypes (bfloat16 vs float16)"),
        e.getMessage());
  }

  @Test
  void backwardThroughHalfOpsGivesTheHalfRoundedF32Gradient() {
    for (DType dt : HALVES) {
      Tensor x = input(dt, 13, 4, 8).requiresGrad(true);
      Tensor w = input(dt, 14, 8, 3);
      Tensor loss = x.exp().matmul(w).tanh().sum();
      assertEquals(dt, loss.dtype());
      loss.backward();
      // the same graph in F32 on the same values, rounding where the half graph rounds its forward results
      Tensor xf = x.detach().to(DType.F32).requiresGrad(true);
      Tensor e = xf.exp();
      Tensor eh = e.to(dt).to(DType.F32); // the rounded forward value the matmul reads
      Tensor p = eh.matmul(w.to(DType.F32)).to(dt).to(DType.F32);
      p.tanh().sum().backward();
      assertEquals(dt, x.grad().dtype(), "the gradient has the parameter's dtype");
      assertArrayEquals(rounded(dt, xf.grad()), bits(x.grad()), "gradient on " + dt);
    }
  }

  @Test
  void inPlaceOpsRoundOnceIntoTheHalfTensor() {
    for (DType dt : HALVES) {
      Tensor a = input(dt, 15, 3, 4);
      Tensor b = input(dt, 16, 4);
      Tensor af = a.to(DType.F32);
      Tensor bf = b.to(DType.F32);
      Tensor x = a.clone();
      x.add_(b);
      assertHalfOf(dt, af.add(bf), x, "add_");
      x = a.clone();
      x.mul_(b);
      assertHalfOf(dt, af.mul(bf), x, "mul_");
      x = a.clone();
      x.sub_(Tensor.of(new float[] {0.1f, 0.2f, 0.3f, 0.4f}, 4)); // a float32 operand is not rounded first
      assertHalfOf(dt, af.sub(Tensor.of(new float[] {0.1f, 0.2f, 0.3f, 0.4f}, 4)), x, "sub_ float32");
      x = a.clone();
      x.mul_(0.1);
      assertHalfOf(dt, af.mul(Tensor.scalar(0.1, DType.F32)), x, "mul_ scalar");
      x = a.clone();
      x.div_(3);
      assertHalfOf(dt, af.div(3.0), x, "div_ scalar");
      x = a.clone();
      x.clamp_(-1, 0.5);
      assertHalfOf(dt, af.clamp(-1, 0.5), x, "clamp_");
      int v = x.storage().version();
      x.add_(1);
      assertEquals(v + 1, x.storage().version(), "in-place ops bump the version");
    }
  }

  @Test
  void castAndPolicyDtypes() {
    assertEquals(DType.F32, DTypePolicy.FLOATING.computeIn(DType.BF16));
    assertEquals(DType.BF16, DTypePolicy.FLOATING.result(DType.BF16));
    assertEquals(DType.F16, DTypePolicy.ACCUMULATING.result(DType.F16));
    assertEquals(DType.BOOL, DTypePolicy.PREDICATE.result(DType.F16));
    assertEquals(DType.BF16, DTypePolicy.REQUESTED.computeIn(DType.BF16));
    assertTrue(DTypePolicy.FLOATING_ONLY.accepts(DType.BF16));
  }
}
