package dev.ember.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.cuda.testing.Gpu;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import dev.ember.testing.Assertions;
import java.util.List;
import java.util.Random;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The CUDA backend's elementwise primitives and copies against the CPU's scalar reference kernels, on random data
 * with NaN, infinities, signed zeros and halves mixed in: every op, every dtype the CPU accepts, sizes around the
 * 256-thread block, and contiguous, strided (slice), transposed and broadcast (expand) operands, as inputs and as
 * outputs. Skipped without a GPU.
 */
class CudaElementwiseTest {
  static final int[] SIZES = {0, 1, 3, 255, 256, 257, 100003};
  static final DType[] ALL = dev.ember.cuda.kernels.Elementwise.dtypes();

  static Device device;
  static Backend gpu;
  static final Backend cpu = CpuBackends.scalar();

  @BeforeAll
  static void gpu() {
    Gpu.assumeDevice();
    device = Device.cuda(0);
    gpu = device.backend();
  }

  // ------------------------------------------------------------------------------------------ data and layouts

  /** Random values of dtype over n elements, with the special values floats have. */
  static Tensor data(DType t, int n, long seed) {
    Random r = new Random(seed);
    double[] specials = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, 0.0, 0.5, 2.5, -1.5,
        1.0, -1.0, 30.0, -30.0, 1e-30};
    switch (t) {
      case F32, F64 -> {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = i % 17 == 5 ? specials[(i / 17) % specials.length] : r.nextDouble() * 6 - 3;
        Tensor x = Tensor.of(v, n);
        return t == DType.F64 ? x : x.to(DType.F32);
      }
      case I64 -> {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) v[i] = r.nextInt(21) - 10;
        return Tensor.of(v, n);
      }
      case I32 -> {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) v[i] = r.nextInt(21) - 10;
        return Tensor.of(v, n);
      }
      case BOOL -> {
        boolean[] v = new boolean[n];
        for (int i = 0; i < n; i++) v[i] = r.nextBoolean();
        return Tensor.of(v, n);
      }
    }
    throw new AssertionError(t);
  }

  /** A host tensor's copy on the GPU, made by the backend under test. */
  static Tensor onGpu(Tensor host) {
    Tensor d = Tensor.empty(device, host.dtype(), host.shapeRef());
    gpu.copy(host, d);
    return d;
  }

  /** A GPU tensor's (or view's) contiguous copy on the host, made by the backend under test. */
  static Tensor onHost(Tensor dev) {
    Tensor h = Tensor.empty(dev.dtype(), dev.shapeRef());
    gpu.copy(dev, h);
    return h;
  }

  /**
   * One operand of n elements in a layout: its host version and the same view of the same values on the GPU.
   * Layouts: 0 contiguous, 1 every other element of a 2n buffer, 2 one value expanded, 3 the transpose of a
   * contiguous [n/3, 3] block seen as [3, n/3] and flattened by the caller's shape (n divisible by 3 only).
   */
  record Operand(Tensor host, Tensor dev) {}

  static Operand operand(DType t, int n, int layout, long seed) {
    return switch (layout) {
      case 0 -> pair(data(t, n, seed), x -> x);
      case 1 -> pair(data(t, 2 * n, seed), x -> Views.slice(x, 0, 1, n, 2));
      case 2 -> pair(data(t, 1, seed), x -> Views.expand(x, new int[] {n}));
      default -> throw new AssertionError(layout);
    };
  }

  static Operand pair(Tensor base, UnaryOperator<Tensor> view) {
    return new Operand(view.apply(base), view.apply(onGpu(base)));
  }

  /** A [rows, cols] operand seen through a transpose of a contiguous [cols, rows] buffer. */
  static Operand transposed(DType t, int rows, int cols, long seed) {
    Tensor base = data(t, rows * cols, seed).reshape(cols, rows);
    return pair(base, x -> Views.transpose(x, 0, 1));
  }

  /** An output of n elements: contiguous, or every third element of a 3n buffer (layout 1). */
  static Operand output(DType t, int n, int layout) {
    if (layout == 0) return new Operand(Tensor.empty(t, n), Tensor.empty(device, t, n));
    return new Operand(Views.slice(Tensor.empty(t, 3 * n), 0, 2, n, 3),
        Views.slice(Tensor.empty(device, t, 3 * n), 0, 2, n, 3));
  }

  static void assertMatches(Operand out, double tol, String what) {
    Tensor got = onHost(out.dev());
    Assertions.assertClose(out.host().contiguous(), got, tol, tol, what);
  }

  static double tol(DType t, boolean exact) {
    if (exact || !t.isFloatingPoint()) return 0;
    return t == DType.F32 ? 2e-6 : 1e-13;
  }

  // ------------------------------------------------------------------------------------------ tests

  static double param(UnaryOp op) {
    return switch (op) {
      case LEAKY_RELU -> 0.01;
      case ELU -> 1.3;
      case SOFTPLUS -> 2.0;
      case POW_SCALAR -> 2.5;
      default -> 0;
    };
  }

  /** Ops whose float result is the reference's to the bit (no transcendental function inside). */
  static boolean exact(UnaryOp op) {
    return switch (op) {
      case NEG, ABS, SIGN, SQRT, SQUARE, RECIPROCAL, RELU, LEAKY_RELU, FLOOR, CEIL, ROUND, TRUNC -> true;
      default -> false;
    };
  }

  @Test
  void unaryOnEveryDtypeLayoutAndSize() {
    for (DType t : ALL) {
      for (UnaryOp op : UnaryOp.values()) {
        for (int n : SIZES) {
          for (int layout = 0; layout < 3; layout++) {
            Operand x = operand(t, n, layout, n * 31L + layout);
            Operand out = output(t, n, layout == 1 ? 1 : 0);
            cpu.unary(op, param(op), x.host(), out.host());
            gpu.unary(op, param(op), x.dev(), out.dev());
            assertMatches(out, tol(t, exact(op)), op + " " + t + " n=" + n + " layout=" + layout);
          }
        }
      }
    }
  }

  @Test
  void unaryWithOtherParamsAndIntoAnotherDtype() {
    for (double p : new double[] {-0.5, 0, 1, 3}) {
      Operand x = operand(DType.F32, 257, 0, 7);
      Operand out = output(DType.F32, 257, 0);
      cpu.unary(UnaryOp.POW_SCALAR, p, x.host(), out.host());
      gpu.unary(UnaryOp.POW_SCALAR, p, x.dev(), out.dev());
      assertMatches(out, 2e-6, "pow " + p);
    }
    Operand x = operand(DType.F32, 1000, 0, 9);
    Operand out = output(DType.I64, 1000, 0);
    cpu.unary(UnaryOp.FLOOR, 0, x.host(), out.host());
    gpu.unary(UnaryOp.FLOOR, 0, x.dev(), out.dev());
    assertMatches(out, 0, "floor f32 -> i64");
  }

  @Test
  void binaryOnEveryDtypeLayoutAndSize() {
    for (DType t : ALL) {
      for (BinaryOp op : BinaryOp.values()) {
        DType ot = op.returnsBool() ? DType.BOOL : t;
        boolean exact = op != BinaryOp.POW;
        for (int n : SIZES) {
          for (int la = 0; la < 3; la++) {
            int lb = (la + 1) % 3;
            Operand a = operand(t, n, la, n * 7L + la);
            Operand b = operand(t, n, lb, n * 13L + lb);
            Operand out = output(ot, n, la == 2 ? 1 : 0);
            cpu.binary(op, a.host(), b.host(), out.host());
            gpu.binary(op, a.dev(), b.dev(), out.dev());
            assertMatches(out, tol(ot, exact), op + " " + t + " n=" + n + " layouts=" + la + "," + lb);
          }
        }
      }
    }
  }

  @Test
  void binaryOnTransposedAndBroadcastMatrices() {
    for (DType t : new DType[] {DType.F32, DType.F64, DType.I64}) {
      for (BinaryOp op : List.of(BinaryOp.ADD, BinaryOp.MUL, BinaryOp.MAXIMUM, BinaryOp.LT, BinaryOp.DIV)) {
        DType ot = op.returnsBool() ? DType.BOOL : t;
        Operand a = transposed(t, 37, 129, 1);
        Operand bias = pair(data(t, 129, 2), x -> Views.expand(x, new int[] {37, 129}));
        Operand out = new Operand(Tensor.empty(ot, 37, 129), Tensor.empty(device, ot, 37, 129));
        cpu.binary(op, a.host(), bias.host(), out.host());
        gpu.binary(op, a.dev(), bias.dev(), out.dev());
        assertMatches(out, 0, op + " " + t + " transposed + broadcast row");
      }
    }
  }

  @Test
  void binaryOnMixedDtypes() {
    DType[][] cases = {{DType.I64, DType.F32, DType.F32}, {DType.F32, DType.F64, DType.F64}, {DType.I32, DType.I64, DType.I64},
        {DType.BOOL, DType.I32, DType.I32}, {DType.F64, DType.F32, DType.BOOL}};
    for (DType[] c : cases) {
      for (BinaryOp op : List.of(BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV, BinaryOp.GE, BinaryOp.LOGICAL_XOR)) {
        DType ot = op.returnsBool() ? DType.BOOL : c[2];
        Operand a = operand(c[0], 1000, 0, 3);
        Operand b = operand(c[1], 1000, 1, 4);
        Operand out = output(ot, 1000, 0);
        cpu.binary(op, a.host(), b.host(), out.host());
        gpu.binary(op, a.dev(), b.dev(), out.dev());
        assertMatches(out, tol(ot, false), op + " " + c[0] + "," + c[1] + " -> " + ot);
      }
    }
  }

  @Test
  void whereOnEveryDtype() {
    for (DType t : ALL) {
      for (int n : SIZES) {
        for (int layout = 0; layout < 3; layout++) {
          Operand c = operand(DType.BOOL, n, (layout + 1) % 3, n + 1);
          Operand a = operand(t, n, layout, n + 2);
          Operand b = operand(t, n, (layout + 2) % 3, n + 3);
          Operand out = output(t, n, layout == 1 ? 1 : 0);
          cpu.where(c.host(), a.host(), b.host(), out.host());
          gpu.where(c.dev(), a.dev(), b.dev(), out.dev());
          assertMatches(out, 0, "where " + t + " n=" + n + " layout=" + layout);
        }
      }
    }
    Operand c = operand(DType.F32, 300, 0, 5); // a float condition: nonzero (NaN included) is true
    Operand a = operand(DType.I32, 300, 0, 6);
    Operand b = operand(DType.F64, 300, 2, 7);
    Operand out = output(DType.F64, 300, 0);
    cpu.where(c.host(), a.host(), b.host(), out.host());
    gpu.where(c.dev(), a.dev(), b.dev(), out.dev());
    assertMatches(out, 0, "where f32 cond, i32 and f64 branches");
  }

  @Test
  void fillEveryDtypeContiguousAndStrided() {
    double[] values = {0, -0.0, 1.5, -2.7, Double.NaN, 1e20, -1e20, 3e9};
    for (DType t : ALL) {
      for (double v : values) {
        for (int layout = 0; layout < 2; layout++) {
          Operand out = output(t, 257, layout);
          cpu.fill(out.host(), v);
          gpu.fill(out.dev(), v);
          assertMatches(out, 0, "fill " + t + " " + v + " layout=" + layout);
        }
      }
    }
  }

  @Test
  void copyBetweenHostAndDeviceConvertsEveryDtypePair() {
    for (DType from : ALL) {
      for (DType to : ALL) {
        for (int n : new int[] {0, 1, 257, 100003}) {
          for (int layout = 0; layout < 3; layout++) {
            Tensor src = operand(from, n, layout, n + layout).host();
            Tensor want = Tensor.empty(to, n);
            cpu.copy(src, want);
            String what = from + " -> " + to + " n=" + n + " layout=" + layout;
            // host -> device (strided or not), device -> device converting, device -> host strided
            Operand dst = output(to, n, layout == 1 ? 1 : 0);
            gpu.copy(src, dst.dev());
            Assertions.assertClose(want, onHost(dst.dev()), 0, 0, "h2d " + what);
            Operand s = operand(from, n, layout, n + layout);
            Tensor d2 = Tensor.empty(device, to, n);
            gpu.copy(s.dev(), d2);
            Assertions.assertClose(want, onHost(d2), 0, 0, "d2d " + what);
            Tensor h = Views.slice(Tensor.empty(to, 2 * n), 0, 0, n, 2);
            gpu.copy(s.dev(), h);
            Assertions.assertClose(want, h.contiguous(), 0, 0, "d2h " + what);
          }
        }
      }
    }
  }

  @Test
  void copyOfTransposedMatrices() {
    Operand a = transposed(DType.F32, 65, 300, 11);
    Tensor d = Tensor.empty(device, DType.F32, 65, 300);
    gpu.copy(a.host(), d); // host transpose -> device contiguous
    Assertions.assertClose(a.host().contiguous(), onHost(d), 0, 0, "h2d transposed");
    Tensor h = Tensor.empty(DType.F64, 65, 300);
    gpu.copy(a.dev(), h); // device transpose -> host, converting
    Assertions.assertClose(a.host().contiguous().to(DType.F64), h, 0, 0, "d2h transposed f32 -> f64");
  }

  @Test
  void unaryBackwardIsTheCompositeToTheBit() {
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (UnaryOp op : List.of(UnaryOp.RELU, UnaryOp.TANH, UnaryOp.SIGMOID)) {
        for (int n : SIZES) {
          for (int layout = 0; layout < 3; layout++) {
            Operand g = operand(t, n, layout, n + 1);
            Operand ref = operand(t, n, (layout + 1) % 3, n + 2);
            Operand out = output(t, n, layout == 2 ? 1 : 0);
            cpu.unaryBackward(op, g.host(), ref.host(), out.host());
            gpu.unaryBackward(op, g.dev(), ref.dev(), out.dev());
            assertMatches(out, 0, op + " backward " + t + " n=" + n + " layout=" + layout);
          }
        }
      }
    }
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> gpu.unaryBackward(UnaryOp.GELU, onGpu(Tensor.ones(2)), onGpu(Tensor.ones(2)), Tensor.empty(device, DType.F32, 2)));
    assertEquals("unaryBackward: GELU has no one-pass backward (RELU, TANH or SIGMOID)", e.getMessage());
  }

  @Test
  void hostOperandsAreRejectedNamingTheOp() {
    Tensor d = Tensor.empty(device, DType.F32, 4);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> gpu.binary(BinaryOp.ADD, d, Tensor.ones(4), d));
    assertEquals("binary ADD: b is on " + Device.CPU + ", expected cuda:0: b=[4]", e.getMessage());
  }

  @Test
  void allocationIsZeroedWhenAskedAndTheProviderKeepsOneBackend() {
    Tensor z = Tensor.zeros(device, DType.F64, 1000);
    Assertions.assertClose(Tensor.zeros(DType.F64, 1000), onHost(z), 0, 0, "zeros");
    assertSame(gpu, device.backend());
    assertEquals("cuda", gpu.name());
    assertEquals(device, gpu.device());
    assertTrue(z.storage().memory() instanceof CudaMemory);
  }
}
