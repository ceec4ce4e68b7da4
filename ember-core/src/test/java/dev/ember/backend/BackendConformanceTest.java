package dev.ember.backend;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Shapes;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import dev.ember.testing.Arr;
import dev.ember.testing.Assertions;
import dev.ember.testing.Ref;
import java.util.function.DoubleBinaryOperator;
import java.util.function.DoubleUnaryOperator;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The contract every backend must meet, checked primitive by primitive against naive double
 * oracles, on the sizes where SIMD bodies and tails meet and on strided and broadcast layouts.
 * One subclass per backend; a new backend passes this suite before it is used.
 *
 * <p>The suite runs on the backend's own {@link Backend#device() device}: inputs are made on the host and moved
 * there with {@link #on(Tensor)} (which keeps their layout, so strided and broadcast views are views of device
 * memory), outputs are allocated there with {@link #out(DType, int...)}, and results come back with
 * {@link #host(Tensor)} for the assertions, each move made by the backend under test. On the CPU all three are
 * the identity. A subclass in another module (ember-cuda's) lives in package {@code dev.ember.backend} and
 * overrides {@link #backend()}.
 */
public abstract class BackendConformanceTest {
  static final int[] SIZES = {0, 1, 3, 7, 8, 15, 16, 17, 31, 33, 1000, 4099};

  /** The backend under test. */
  protected abstract Backend backend();

  /** The device the backend computes on. */
  protected final Device device() {
    return backend().device();
  }

  /**
   * {@code t} on the backend's device with the same shape, strides and offset: its whole storage is copied there
   * by the backend (copy moves data between host and device), so a strided or broadcast host view becomes the
   * same view of device memory. A CPU backend gets {@code t} itself.
   */
  protected final Tensor on(Tensor t) {
    if (device().isCpu() || t.storage().onDevice()) return t;
    Storage hs = t.storage();
    int n = hs.size();
    Storage ds = backend().allocate(t.dtype(), n, false);
    backend().copy(new Tensor(hs, new int[] {n}, new int[] {1}, 0), new Tensor(ds, new int[] {n}, new int[] {1}, 0));
    return new Tensor(ds, t.shape(), t.strides(), t.offset());
  }

  /** A new zero-filled contiguous output of {@code shape} on the backend's device, allocated by the backend. */
  protected final Tensor out(DType dtype, int... shape) {
    return new Tensor(backend().allocate(dtype, Shapes.numel(shape), true), shape.clone(),
        Shapes.contiguousStrides(shape), 0);
  }

  /** A float32 output, as {@link #out(DType, int...)}. */
  protected final Tensor out(int... shape) {
    return out(DType.F32, shape);
  }

  /** {@code t} copied to the host by the backend (contiguous), or {@code t} itself when it is there already. */
  protected final Tensor host(Tensor t) {
    if (!t.storage().onDevice()) return t;
    Tensor h = Tensor.empty(t.dtype(), t.shapeRef());
    backend().copy(t, h);
    return h;
  }

  private static Tensor data(long seed, int... shape) {
    return Tensor.rand(new Generator(seed), shape).mul(4).sub(2);
  }

  /** Tolerance for float32 results whose error grows with the number of terms summed. */
  private static double tol(int terms) {
    return 1e-5 * Math.max(1, Math.sqrt(terms)) * 4;
  }

  private static final Object[][] UNARY = {
      {UnaryOp.NEG, (DoubleUnaryOperator) x -> -x}, {UnaryOp.ABS, (DoubleUnaryOperator) Math::abs},
      {UnaryOp.EXP, (DoubleUnaryOperator) Math::exp}, {UnaryOp.TANH, (DoubleUnaryOperator) Math::tanh},
      {UnaryOp.SIGMOID, (DoubleUnaryOperator) x -> 1 / (1 + Math.exp(-x))},
      {UnaryOp.RELU, (DoubleUnaryOperator) x -> Math.max(x, 0)}, {UnaryOp.SQUARE, (DoubleUnaryOperator) x -> x * x},
      {UnaryOp.SIN, (DoubleUnaryOperator) Math::sin}, {UnaryOp.SILU, (DoubleUnaryOperator) x -> x / (1 + Math.exp(-x))},
      {UnaryOp.GELU, (DoubleUnaryOperator) x -> 0.5 * x * (1 + Ref.erf(x / Math.sqrt(2)))}};

  @Test
  void unaryOnContiguousAndStridedInputs() {
    for (Object[] u : UNARY) {
      UnaryOp op = (UnaryOp) u[0];
      DoubleUnaryOperator f = (DoubleUnaryOperator) u[1];
      for (int n : SIZES) {
        Tensor x = data(n, n);
        Tensor out = out(n);
        backend().unary(op, 0, on(x), out);
        Assertions.assertClose(Ref.map(Arr.of(x), f), host(out), 1e-6, 1e-5, op + " n=" + n);
        Tensor base = data(n + 1, 2 * n);
        Tensor strided = Views.slice(base, 0, 0, n, 2);
        Tensor out2 = out(n);
        backend().unary(op, 0, on(strided), out2);
        Assertions.assertClose(Ref.map(Arr.of(strided), f), host(out2), 1e-6, 1e-5, op + " strided n=" + n);
      }
    }
  }

  @Test
  void unaryBackwardOnContiguousStridedAndF64Inputs() {
    UnaryOp[] ops = {UnaryOp.RELU, UnaryOp.TANH, UnaryOp.SIGMOID};
    DoubleBinaryOperator[] fs = {(g, x) -> x > 0 ? g : 0, (g, y) -> g * (1 - y * y), (g, y) -> g * y * (1 - y)};
    for (int k = 0; k < ops.length; k++) {
      DoubleBinaryOperator f = fs[k];
      double tol = k == 0 ? 0 : 1e-5; // ReLU's product by 0 or 1 is exact
      String name = ops[k].name().toLowerCase() + "_backward";
      for (int n : SIZES) {
        Tensor g = data(n, 3, n);
        Tensor x = data(n + 5, 3, n);
        Tensor out = out(3, n);
        backend().unaryBackward(ops[k], on(g), on(x), out);
        Assertions.assertClose(Ref.zip(Arr.of(g), Arr.of(x), f), host(out), tol, tol, name + " n=" + n);
        Tensor xt = Views.transpose(data(n + 3, n, 3), 0, 1);
        Tensor gb = Views.expand(data(n + 4, n), new int[] {3, n});
        backend().unaryBackward(ops[k], on(gb), on(xt), out);
        Assertions.assertClose(Ref.zip(Arr.of(gb), Arr.of(xt), f), host(out), tol, tol, name + " strided n=" + n);
        Tensor g64 = g.to(DType.F64);
        Tensor x64 = x.to(DType.F64);
        Tensor out64 = out(DType.F64, 3, n);
        backend().unaryBackward(ops[k], on(g64), on(x64), out64);
        Assertions.assertClose(Ref.zip(Arr.of(g64), Arr.of(x64), f), host(out64), 1e-15, 1e-15, name + " f64 n=" + n);
      }
    }
    IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class,
        () -> backend().unaryBackward(UnaryOp.GELU, on(Tensor.ones(2)), on(Tensor.ones(2)), out(2)));
    org.junit.jupiter.api.Assertions.assertEquals(
        "unaryBackward: GELU has no one-pass backward (RELU, TANH or SIGMOID)", e.getMessage());
  }

  /**
   * Comparisons of floats into BOOL, with NaNs and ties, on contiguous operands, either one a broadcast
   * scalar, and a transposed one; the logical ops on BOOL; where on F32 and F64 with either branch a
   * scalar and a strided one; any/all over BOOL rows; a unary op on an expanded (stride 0) input.
   */
  @Test
  void comparisonsLogicalWhereAndBoolReductions() {
    BinaryOp[] cmps = {BinaryOp.EQ, BinaryOp.NE, BinaryOp.LT, BinaryOp.LE, BinaryOp.GT, BinaryOp.GE};
    DoubleBinaryOperator[] cf = {(x, y) -> x == y ? 1 : 0, (x, y) -> x != y ? 1 : 0, (x, y) -> x < y ? 1 : 0,
        (x, y) -> x <= y ? 1 : 0, (x, y) -> x > y ? 1 : 0, (x, y) -> x >= y ? 1 : 0};
    for (int n : SIZES) {
      float[] av = data(n, 3, n).toFloatArray();
      float[] bv = data(n + 9, 3, n).toFloatArray();
      for (int i = 0; i < av.length; i += 5) bv[i] = av[i];         // ties
      for (int i = 3; i < av.length; i += 11) av[i] = Float.NaN;    // NaN compares false, and unequal
      for (int i = 7; i < av.length; i += 13) bv[i] = Float.NaN;
      Tensor a = Tensor.of(av, 3, n);
      Tensor b = Tensor.of(bv, 3, n);
      Tensor s = Tensor.of(new float[] {av.length > 0 ? av[0] : 0.5f}, 1); // equal to a[0]: a tie
      Tensor at = Views.transpose(Tensor.of(av, n, 3).contiguous(), 0, 1);
      int[] shape = {3, n};
      Tensor da = on(a);
      Tensor db = on(b);
      Tensor ds = on(s);
      for (int k = 0; k < cmps.length; k++) {
        Tensor out = out(DType.BOOL, shape);
        backend().binary(cmps[k], da, db, out);
        Assertions.assertClose(Ref.zip(Arr.of(a), Arr.of(b), cf[k]), host(out), 0, 0, cmps[k] + " n=" + n);
        backend().binary(cmps[k], da, Views.expand(ds, shape), out);
        Assertions.assertClose(Ref.zip(Arr.of(a), Arr.of(s), cf[k]), host(out), 0, 0, cmps[k] + " scalar right n=" + n);
        backend().binary(cmps[k], Views.expand(ds, shape), db, out);
        Assertions.assertClose(Ref.zip(Arr.of(s), Arr.of(b), cf[k]), host(out), 0, 0, cmps[k] + " scalar left n=" + n);
        backend().binary(cmps[k], on(at), db, out);
        Assertions.assertClose(Ref.zip(Arr.of(at), Arr.of(b), cf[k]), host(out), 0, 0, cmps[k] + " transposed n=" + n);
      }
      Tensor pa = out(DType.BOOL, shape);
      Tensor pb = out(DType.BOOL, shape);
      backend().binary(BinaryOp.LT, da, db, pa);
      backend().binary(BinaryOp.GE, da, Views.expand(ds, shape), pb);
      BinaryOp[] logic = {BinaryOp.LOGICAL_AND, BinaryOp.LOGICAL_OR, BinaryOp.LOGICAL_XOR};
      DoubleBinaryOperator[] lf = {(x, y) -> x != 0 && y != 0 ? 1 : 0, (x, y) -> x != 0 || y != 0 ? 1 : 0,
          (x, y) -> (x != 0) != (y != 0) ? 1 : 0};
      for (int k = 0; k < logic.length; k++) {
        Tensor out = out(DType.BOOL, shape);
        backend().binary(logic[k], pa, pb, out);
        Assertions.assertClose(Ref.zip(Arr.of(host(pa)), Arr.of(host(pb)), lf[k]), host(out), 0, 0, logic[k] + " n=" + n);
      }
      for (DType dt : new DType[] {DType.F32, DType.F64}) {
        Tensor x = data(n + 1, 3, n).to(dt);
        Tensor y = data(n + 2, 3, n).to(dt);
        Tensor c = Tensor.scalar(0.25, dt);
        Tensor out = out(dt, shape);
        Arr hpa = Arr.of(host(pa));
        backend().where(pa, on(x), on(y), out);
        Assertions.assertClose(Ref.where(hpa, Arr.of(x), Arr.of(y)), host(out), 0, 0, "where " + dt + " n=" + n);
        backend().where(pa, Views.expand(on(c), shape), on(y), out);
        Assertions.assertClose(Ref.where(hpa, Arr.of(c), Arr.of(y)), host(out), 0, 0, "where scalar a " + dt + " n=" + n);
        backend().where(pa, on(x), Views.expand(on(c), shape), out);
        Assertions.assertClose(Ref.where(hpa, Arr.of(x), Arr.of(c)), host(out), 0, 0, "where scalar b " + dt + " n=" + n);
        Tensor xt = Views.transpose(data(n + 3, n, 3).to(dt), 0, 1);
        backend().where(pa, on(xt), on(y), out);
        Assertions.assertClose(Ref.where(hpa, Arr.of(xt), Arr.of(y)), host(out), 0, 0, "where strided " + dt + " n=" + n);
      }
      if (n > 0) {
        Tensor any = out(DType.BOOL, 3);
        Tensor all = out(DType.BOOL, 3);
        backend().reduce(ReduceOp.MAX, pa, new int[] {1}, any);
        backend().reduce(ReduceOp.MIN, pa, new int[] {1}, all);
        Assertions.assertClose(Ref.reduce(Arr.of(host(pa)), new int[] {1}, false, 0, Math::max), host(any), 0, 0, "any n=" + n);
        Assertions.assertClose(Ref.reduce(Arr.of(host(pa)), new int[] {1}, false, 1, Math::min), host(all), 0, 0, "all n=" + n);
      }
      Tensor col = data(n + 4, 3, 1);
      Tensor out = out(shape);
      backend().unary(UnaryOp.EXP, 0, Views.expand(on(col), shape), out);
      Assertions.assertClose(Ref.map(Arr.of(Views.expand(col, shape)), Math::exp), host(out), 1e-6, 1e-6, "exp of expanded n=" + n);
    }
  }

  /**
   * A contiguous matrix plus a transposed one (a weight's gradient accumulated from the backward of
   * {@code x.matmul(w.t())}) takes whole 16 x 16 tiles and scalar edges: out of place, in place into
   * either operand's layout, with the transposed operand on either side, against the oracle.
   */
  @Test
  void addOfATransposedMatrix() {
    for (int[] rc : new int[][] {{1, 1}, {3, 5}, {16, 16}, {37, 50}, {64, 48}, {100, 17}}) {
      int rows = rc[0], cols = rc[1];
      Tensor a = data(rows * 31L + cols, rows, cols);
      Tensor bt = Views.transpose(data(rows + 7L * cols, cols, rows), 0, 1); // [rows, cols], strides (1, rows)
      Arr want = Ref.zip(Arr.of(a), Arr.of(bt), Double::sum);
      String what = rows + "x" + cols;
      Tensor out = out(rows, cols);
      Tensor da = on(a);
      Tensor dbt = on(bt);
      backend().binary(BinaryOp.ADD, da, dbt, out);
      Assertions.assertClose(want, host(out), 0, 0, "a + b^T " + what);
      backend().binary(BinaryOp.ADD, dbt, da, out);
      Assertions.assertClose(want, host(out), 0, 0, "b^T + a " + what);
      Tensor acc = on(a.clone());
      backend().binary(BinaryOp.ADD, acc, dbt, acc); // add_, as autograd accumulates a gradient
      Assertions.assertClose(want, host(acc), 0, 0, "a += b^T " + what);
    }
  }

  @Test
  void binaryWithBroadcastLayouts() {
    BinaryOp[] ops = {BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV, BinaryOp.MAXIMUM, BinaryOp.MINIMUM};
    DoubleBinaryOperator[] fs = {Double::sum, (a, b) -> a - b, (a, b) -> a * b, (a, b) -> a / b, Math::max, Math::min};
    for (int k = 0; k < ops.length; k++) {
      for (int n : SIZES) {
        Tensor a = data(n, 3, n);
        Tensor b = data(n + 7, n);                   // row broadcast: a [3, n] op b [n]
        Tensor s = Tensor.scalar(1.25);              // scalar broadcast
        int[] shape = {3, n};
        Tensor out = out(shape);
        backend().binary(ops[k], on(a), Views.expand(on(b), shape), out);
        Assertions.assertClose(Ref.zip(Arr.of(a), Arr.of(b), fs[k]), host(out), 1e-6, 1e-5, ops[k] + " row n=" + n);
        backend().binary(ops[k], Views.expand(on(s), shape), on(a), out);
        Assertions.assertClose(Ref.zip(Arr.of(s), Arr.of(a), fs[k]), host(out), 1e-6, 1e-5, ops[k] + " scalar-left n=" + n);
        Tensor at = Views.transpose(data(n + 3, n, 3), 0, 1); // transposed operand
        backend().binary(ops[k], on(at), Views.expand(on(s), shape), out);
        Assertions.assertClose(Ref.zip(Arr.of(at), Arr.of(s), fs[k]), host(out), 1e-6, 1e-5, ops[k] + " transposed n=" + n);
      }
    }
  }

  @Test
  void reductionsOverRowsColumnsAndAll() {
    for (int n : SIZES) {
      Tensor x = data(n, 5, n);
      Tensor dx = on(x);
      for (int[] axes : new int[][] {{1}, {0}, {0, 1}}) {
        for (ReduceOp op : ReduceOp.values()) {
          if (n == 0 && (op == ReduceOp.MAX || op == ReduceOp.MIN)) continue;
          int[] keep = x.shape();
          for (int a : axes) keep[a] = 1;
          Tensor out = out(keep);
          backend().reduce(op, dx, axes, out);
          Arr expected = switch (op) {
            case SUM -> Ref.sum(Arr.of(x), axes, true);
            case PROD -> Ref.reduce(Arr.of(x), axes, true, 1, (p, v) -> p * v);
            case MAX -> Ref.max(Arr.of(x), axes, true);
            case MIN -> Ref.min(Arr.of(x), axes, true);
          };
          double atol = op == ReduceOp.PROD ? 1e-30 : tol(5 * n);
          double rtol = op == ReduceOp.PROD ? 1e-3 : 1e-5;
          Assertions.assertClose(expected, host(out), atol, rtol, op + " axes " + java.util.Arrays.toString(axes) + " n=" + n);
        }
      }
    }
  }

  @Test
  void fullSumOfALargeVectorUsesFixedChunks() {
    Tensor x = data(1, 1 << 20);
    Tensor out = out(1);
    backend().reduce(ReduceOp.SUM, on(x), new int[] {0}, out);
    Assertions.assertClose(Ref.sum(Arr.of(x), null, true), host(out), 1e-2, 1e-5, "sum of 2^20");
  }

  @Test
  void softmaxAlongEachAxis() {
    for (int n : SIZES) {
      if (n == 0) continue;
      Tensor x = data(n, 4, n).mul(3);
      for (int axis : new int[] {0, 1}) {
        for (boolean log : new boolean[] {false, true}) {
          Tensor out = out(4, n);
          backend().softmax(on(x), axis, log, out);
          Assertions.assertClose(Ref.softmax(Arr.of(x), axis, log), host(out), 1e-6, 1e-5, "softmax axis " + axis + " log=" + log + " n=" + n);
        }
      }
    }
  }

  /** A product case: a [m, k] and b [k, n], either of them a transposed view of its data when ta or tb. */
  @FunctionalInterface
  private interface ProductCase {
    void check(Tensor a, Tensor b, int m, int k, int n, String what);
  }

  /** Runs {@code body} on every {m, k, n} shape with each of the four transpose combinations. */
  private static void forEachTransposeCombination(int[][] shapes, ProductCase body) {
    for (int[] s : shapes) {
      int m = s[0];
      int k = s[1];
      int n = s[2];
      for (boolean ta : new boolean[] {false, true}) {
        for (boolean tb : new boolean[] {false, true}) {
          Tensor a = ta ? Views.transpose(data(m + k, k, m), 0, 1) : data(m + k, m, k);
          Tensor b = tb ? Views.transpose(data(n + k, n, k), 0, 1) : data(n + k, k, n);
          body.check(a, b, m, k, n, m + "x" + k + "x" + n + " ta=" + ta + " tb=" + tb);
        }
      }
    }
  }

  @Test
  void matmulWithEveryTransposeCombination() {
    int[][] shapes = {{1, 1, 1}, {3, 7, 5}, {16, 17, 33}, {33, 1, 15}, {64, 100, 31}, {130, 257, 70}};
    forEachTransposeCombination(shapes, (a, b, m, k, n, what) -> {
      Tensor out = out(1, m, n);
      backend().matmul(on(a.unsqueeze(0)), on(b.unsqueeze(0)), out, false);
      Arr expected = new Arr(Ref.matmul(Arr.of(a), Arr.of(b)).data(), new int[] {1, m, n});
      Assertions.assertClose(expected, host(out), tol(k) * 4, 1e-5, "matmul " + what);
    });
  }

  @Test
  void matmulAccumulatesIntoOutWhenAsked() {
    Tensor a = data(1, 1, 4, 6);
    Tensor b = data(2, 1, 6, 3);
    Tensor out = on(Tensor.ones(1, 4, 3));
    backend().matmul(on(a), on(b), out, true);
    Assertions.assertClose(Ref.map(Ref.matmul(Arr.of(a), Arr.of(b)), v -> v + 1), host(out), 1e-5, 1e-5, "accumulate");
  }

  @Test
  void matmulScalesOutByBeta() {
    assertBetaProduct(data(1, 1, 4, 6), data(2, 1, 6, 3), data(3, 1, 4, 3), 0.5f, 1e-5, "beta 0.5");
    for (boolean ta : new boolean[] {false, true}) { // full 12 x 32 tiles, written from the registers
      Tensor a = ta ? Views.transpose(data(5, 1, 20, 40), 1, 2) : data(5, 1, 40, 20);
      assertBetaProduct(a, data(6, 1, 20, 70), data(7, 1, 40, 70), 0.9f, tol(20) * 4, "beta 0.9, ta=" + ta);
    }
    // k = 0: the sum is empty, out = beta * out
    assertBetaProduct(Tensor.empty(1, 4, 0), Tensor.empty(1, 0, 3), data(4, 1, 4, 3), -2f, 0, "k = 0, beta -2");
  }

  @Test
  void matmulRowsHandsOverEveryRowOnceWithMatmulsBits() {
    Assumptions.assumeTrue(device().isCpu(), "matmulRows hands host rows to a sink: it serves the CPU's deferred"
        + " weight gradients only, which device tensors never take");
    // {m, k, n}: SkinnyGemm's rows; whole and edge tiles of rows and column panels in one K block, on both
    // sides of the 32K-float row block; K past one block (AVX2's 256, AVX-512's 512): the whole product.
    int[][] shapes = {{3, 5, 7}, {40, 20, 70}, {130, 32, 2048}, {301, 64, 1030}, {50, 600, 90}};
    forEachTransposeCombination(shapes, (a, b, m, k, n, what) -> {
      Tensor whole = out(1, m, n);
      backend().matmul(a.unsqueeze(0), b.unsqueeze(0), whole, 0f);
      float[] seen = new float[m * n];
      int[] times = new int[m];
      backend().matmulRows(a, b, (r0, r1, c, off) -> {
        for (int i = r0; i < r1; i++) {
          times[i]++;
          System.arraycopy(c, off + (i - r0) * n, seen, i * n, n);
        }
      });
      for (int i = 0; i < m; i++) org.junit.jupiter.api.Assertions.assertEquals(1, times[i], "matmulRows " + what + " row " + i);
      assertArrayEquals(whole.toFloatArray(), seen, "matmulRows " + what);
    });
  }

  /** out = a b + beta out, against the double-precision product and out's values before the call. */
  private void assertBetaProduct(Tensor a, Tensor b, Tensor out, float beta, double atol, String what) {
    double[] before = Arr.of(out).data().clone();
    Tensor dout = on(out);
    backend().matmul(on(a), on(b), dout, beta);
    Arr product = Ref.matmul(Arr.of(a), Arr.of(b));
    double[] expected = product.data();
    for (int i = 0; i < expected.length; i++) expected[i] += (double) beta * before[i];
    Assertions.assertClose(product, host(dout), atol, atol == 0 ? 0 : 1e-5, what);
  }

  @Test
  void copyConvertsTypesAndLayouts() {
    Tensor x = Views.transpose(data(3, 5, 7), 0, 1);
    Tensor out = out(DType.F64, 7, 5);
    backend().copy(on(x), out);
    Assertions.assertClose(Arr.of(x), host(out), 0, 0, "copy f32->f64 transposed");
    Tensor ints = out(DType.I64, 7, 5);
    backend().copy(on(x.mul(10)), ints);
    double[] xs = x.mul(10).toDoubleArray();
    long[] expected = new long[xs.length];
    for (int i = 0; i < xs.length; i++) expected[i] = (long) xs[i];
    assertArrayEquals(expected, host(ints).toLongArray());
    Tensor back = Tensor.empty(DType.F32, 5, 7); // device to host, converting, into a strided host view
    backend().copy(out, Views.transpose(back, 0, 1));
    Assertions.assertClose(Arr.of(x), Views.transpose(back, 0, 1), 0, 0, "copy f64 device -> f32 host transposed");
  }

  @Test
  void allFiniteFindsEveryNaNAndInfinity() {
    for (DType dtype : new DType[] {DType.F32, DType.F64}) {
      for (int n : new int[] {0, 1, 17, 4099, (1 << 18) + 5}) { // the last spans two tasks of the CPU's check
        Tensor x = data(n, n).to(dtype);
        assertTrue(backend().allFinite(on(x)), dtype + " n=" + n);
        for (int at : new int[] {0, n / 2, n - 1}) {
          if (n == 0) continue;
          for (double bad : new double[] {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY}) {
            Tensor y = x.clone();
            y.storage().setDouble(y.offset() + at, bad);
            assertFalse(backend().allFinite(on(y)), dtype + " n=" + n + " " + bad + " at " + at);
          }
        }
      }
      Tensor big = Tensor.full(Float.MAX_VALUE, dtype).expand(3).contiguous(); // finite however large
      assertTrue(backend().allFinite(on(big)), dtype + " max value");
    }
  }
}
