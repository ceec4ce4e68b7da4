package dev.ember.cuda.kernels;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.Backend;
import dev.ember.backend.BinaryOp;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.cuda.runtime.KernelCache;
import dev.ember.tensor.DType;
import dev.ember.tensor.Storage;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The semantics of elementwise.cu without a GPU: its kernel bodies compiled as host C++ (g++, with a shim for the
 * CUDA qualifiers and intrinsics, one thread looping over the grid) and run against the CPU's scalar kernels on
 * data with NaN, infinities, signed zeros, halves and integer extremes, every op and dtype, and contiguous, strided,
 * broadcast and transposed operands. The host's libm stands in for CUDA's, so transcendental results are compared
 * within a tolerance and everything else to the bit. Skipped where g++ is absent; the GPU test checks CUDA itself.
 */
class ElementwiseHostTest {
  static final int N = 301;
  static final Backend CPU = CpuBackends.scalar();

  @TempDir static Path dir;
  static Path exe;

  @BeforeAll
  static void compile() throws IOException, InterruptedException {
    Assumptions.assumeTrue(HostDriver.run(List.of("g++", "--version"), null, 30) == 0, "needs g++ to run the kernels on the host");
    String source = resource("host_shim.h") + KernelCache.PRELUDE + Elementwise.source(Elementwise.Family.FILL, DType.F32)
        + resource("host_main.cpp");
    Path cpp = dir.resolve("elementwise_host.cpp");
    Files.writeString(cpp, source);
    exe = dir.resolve("elementwise_host");
    Path log = dir.resolve("g++.log");
    int rc = HostDriver.run(List.of("g++", "-std=c++17", "-O1", "-ffp-contract=off", "-o", exe.toString(), cpp.toString()), log, 300);
    assertEquals(0, rc, () -> "elementwise.cu does not compile as host C++:\n" + HostDriver.read(log));
  }

  // ------------------------------------------------------------------------------------------ cases

  @Test
  void unaryMatchesTheCpu() throws Exception {
    Batch b = new Batch();
    for (DType t : Elementwise.dtypes()) {
      for (UnaryOp op : UnaryOp.values()) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor x = operand(t, layout, 5 + layout);
          Tensor out = Tensor.empty(t, N);
          CPU.unary(op, param(op), x, out);
          b.add("UNARY", op.ordinal(), param(op), out, tol(t, exact(op)), "unary " + op + " " + t + " layout " + layout, x);
        }
      }
    }
    Tensor x = operand(DType.F32, 0, 9); // into another dtype: computed in double, converted as the CPU stores
    Tensor out = Tensor.empty(DType.I64, N);
    CPU.unary(UnaryOp.FLOOR, 0, x, out);
    b.add("UNARY", UnaryOp.FLOOR.ordinal(), 0, out, 0, "floor f32 -> i64", x);
    b.check();
  }

  @Test
  void binaryMatchesTheCpu() throws Exception {
    Batch b = new Batch();
    for (DType t : Elementwise.dtypes()) {
      for (BinaryOp op : BinaryOp.values()) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor x = operand(t, layout, 7 + layout);
          Tensor y = operand(t, (layout + 1) % 3, 9 + layout);
          Tensor out = Tensor.empty(op.returnsBool() ? DType.BOOL : t, N);
          CPU.binary(op, x, y, out);
          b.add("BINARY", op.ordinal(), 0, out, op == BinaryOp.POW ? tol(t, false) : 0,
              "binary " + op + " " + t + " layout " + layout, x, y);
        }
      }
    }
    DType[][] mixed = {{DType.I64, DType.F32, DType.F32}, {DType.F32, DType.F64, DType.F64},
        {DType.I32, DType.I64, DType.I64}, {DType.BOOL, DType.I32, DType.I32}, {DType.F64, DType.F32, DType.BOOL},
        {DType.F32, DType.F32, DType.I64}};
    for (DType[] c : mixed) {
      for (BinaryOp op : BinaryOp.values()) {
        Tensor x = operand(c[0], 0, 3);
        Tensor y = operand(c[1], 1, 4);
        Tensor out = Tensor.empty(op.returnsBool() ? DType.BOOL : c[2], N);
        CPU.binary(op, x, y, out);
        b.add("BINARY", op.ordinal(), 0, out, op == BinaryOp.POW ? tol(DType.F32, false) : 0,
            "binary " + op + " " + c[0] + ", " + c[1] + " -> " + out.dtype(), x, y);
      }
    }
    for (DType t : new DType[] {DType.F32, DType.F64}) { // signed zeros and NaN against each other
      Tensor x = Tensor.of(new double[] {-0.0, 0.0, -0.0, 0.0, Double.NaN, 1, Double.NaN, -1}, 8).to(t);
      Tensor y = Tensor.of(new double[] {0.0, -0.0, -0.0, 0.0, 1, Double.NaN, Double.NaN, -0.0}, 8).to(t);
      for (BinaryOp op : BinaryOp.values()) {
        Tensor out = Tensor.empty(op.returnsBool() ? DType.BOOL : t, 8);
        CPU.binary(op, x, y, out);
        b.add("BINARY", op.ordinal(), 0, out, 0, "binary " + op + " " + t + " on signed zeros and NaN", x, y);
      }
    }
    for (DType t : Elementwise.dtypes()) { // rank 2: a transposed operand minus a broadcast row
      Tensor at = Views.transpose(data(t, 12 * 5, 1).reshape(5, 12), 0, 1);
      Tensor row = Views.expand(data(t, 5, 2), new int[] {12, 5});
      Tensor out = Tensor.empty(t, 12, 5);
      CPU.binary(BinaryOp.SUB, at, row, out);
      b.add("BINARY", BinaryOp.SUB.ordinal(), 0, out, 0, "sub transposed - row " + t, at, row);
    }
    b.check();
  }

  @Test
  void convertFillWhereAndUnaryBackwardMatchTheCpu() throws Exception {
    Batch b = new Batch();
    for (DType s : Elementwise.dtypes()) {
      for (DType d : Elementwise.dtypes()) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor x = operand(s, layout, 11);
          Tensor out = Tensor.empty(d, N);
          CPU.copy(x, out);
          b.add("CONVERT", 0, 0, out, 0, "convert " + s + " -> " + d + " layout " + layout, x);
        }
      }
    }
    for (DType t : Elementwise.dtypes()) {
      for (double v : new double[] {0, -0.0, 1.5, -2.7, Double.NaN, Double.NEGATIVE_INFINITY, 1e20, -1e20, 3e9}) {
        Tensor out = Tensor.empty(t, N);
        CPU.fill(out, v);
        b.add("FILL", 0, v, out, 0, "fill " + t + " " + v);
      }
    }
    for (DType c : new DType[] {DType.BOOL, DType.F32, DType.I64}) {
      for (DType t : Elementwise.dtypes()) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor cond = operand(c, layout, 1);
          Tensor x = operand(t, (layout + 1) % 3, 2);
          Tensor y = operand(t, (layout + 2) % 3, 3);
          Tensor out = Tensor.empty(t, N);
          CPU.where(cond, x, y, out);
          b.add("WHERE", 0, 0, out, 0, "where " + c + " " + t + " layout " + layout, cond, x, y);
        }
      }
    }
    Tensor cond = operand(DType.BOOL, 0, 1);
    Tensor x = operand(DType.I32, 1, 2);
    Tensor y = operand(DType.F64, 2, 3);
    Tensor out = Tensor.empty(DType.F32, N);
    CPU.where(cond, x, y, out);
    b.add("WHERE", 0, 0, out, 0, "where bool ? i32 : f64 -> f32", cond, x, y);
    for (DType t : new DType[] {DType.F32, DType.F64}) {
      for (UnaryOp op : List.of(UnaryOp.RELU, UnaryOp.TANH, UnaryOp.SIGMOID)) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor g = operand(t, layout, 1);
          Tensor ref = operand(t, (layout + 1) % 3, 2);
          Tensor o = Tensor.empty(t, N);
          CPU.unaryBackward(op, g, ref, o);
          b.add("UNARY_BACKWARD", op.ordinal(), 0, o, 0, op + " backward " + t + " layout " + layout, g, ref);
        }
      }
    }
    b.check();
  }

  /**
   * BF16 and F16 through the families that take them, against the CPU's copy, fill and where: every one of the
   * 65,536 bit patterns of each widened to float32 and to float64, float32 patterns around every rounding boundary
   * narrowed to each, and conversions between the halves and every other dtype in every layout.
   */
  @Test
  void halvesConvertFillAndSelectAsTheCpu() throws Exception {
    Batch b = new Batch();
    short[] all = new short[65536];
    for (int i = 0; i < all.length; i++) all[i] = (short) i;
    for (DType h : new DType[] {DType.BF16, DType.F16}) {
      Tensor every = dev.ember.tensor.TensorData.wrapHalf(all, h, all.length);
      for (DType d : new DType[] {DType.F32, DType.F64, h == DType.BF16 ? DType.F16 : DType.BF16}) {
        Tensor out = Tensor.empty(d, all.length);
        CPU.copy(every, out);
        b.add("CONVERT", 0, 0, out, 0, "every " + h + " pattern -> " + d, every);
      }
      Tensor floats = boundaryFloats();
      Tensor narrowed = Tensor.empty(h, (int) floats.numel());
      CPU.copy(floats, narrowed);
      b.add("CONVERT", 0, 0, narrowed, 0, "float32 rounding boundaries -> " + h, floats);
      Tensor doubles = floats.to(DType.F64).add(Tensor.scalar(1e-12, DType.F64)); // through float, as the CPU
      Tensor fromDouble = Tensor.empty(h, (int) doubles.numel());
      CPU.copy(doubles, fromDouble);
      b.add("CONVERT", 0, 0, fromDouble, 0, "float64 -> " + h, doubles);
      for (DType t : Elementwise.dtypes()) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor x = operand(t, layout, 13);
          Tensor out = Tensor.empty(h, N);
          CPU.copy(x, out);
          b.add("CONVERT", 0, 0, out, 0, "convert " + t + " -> " + h + " layout " + layout, x);
          Tensor hx = operand(h, layout, 14);
          Tensor back = Tensor.empty(t, N);
          CPU.copy(hx, back);
          b.add("CONVERT", 0, 0, back, 0, "convert " + h + " -> " + t + " layout " + layout, hx);
        }
      }
      for (double v : new double[] {0, -0.0, 1.5, -2.7, Double.NaN, Double.NEGATIVE_INFINITY, 1e20, 65519, 65520, 1e-7}) {
        Tensor out = Tensor.empty(h, N);
        CPU.fill(out, v);
        b.add("FILL", 0, v, out, 0, "fill " + h + " " + v);
      }
      for (DType c : new DType[] {DType.BOOL, DType.F32}) {
        for (int layout = 0; layout < 3; layout++) {
          Tensor cond = operand(c, layout, 4);
          Tensor x = operand(h, (layout + 1) % 3, 5);
          Tensor y = operand(h, (layout + 2) % 3, 6);
          Tensor out = Tensor.empty(h, N);
          CPU.where(cond, x, y, out);
          b.add("WHERE", 0, 0, out, 0, "where " + c + " " + h + " layout " + layout, cond, x, y);
        }
      }
    }
    b.check();
  }

  /**
   * float32 values at and beside the rounding boundaries of both halves (each BF16 / F16 value, the midpoints to
   * the next, one float ulp either side), the F16 subnormal and overflow ranges, signed zeros, infinities, NaNs.
   */
  static Tensor boundaryFloats() {
    List<Float> v = new ArrayList<>();
    for (int i = 0; i < 65536; i += 7) {
      int mid = (i << 16) | 0x8000; // a BF16 midpoint
      for (int d = -1; d <= 1; d++) v.add(Float.intBitsToFloat(mid + d));
      float f16 = dev.ember.tensor.HalfFloats.f16ToFloat((short) i);
      float next = dev.ember.tensor.HalfFloats.f16ToFloat((short) (i + 1));
      if (Float.isFinite(f16) && Float.isFinite(next) && Math.abs(next) > Math.abs(f16)) {
        int m = Float.floatToRawIntBits((f16 + next) / 2); // an F16 midpoint (exact: 11 significant bits)
        for (int d = -1; d <= 1; d++) v.add(Float.intBitsToFloat(m + d));
      }
    }
    float[] special = {0f, -0f, Float.NaN, Float.intBitsToFloat(0xFFC00001), Float.intBitsToFloat(0x7F800001),
        Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_VALUE, 65504f,
        65519.996f, 65520f, -65520f, 6.0e-8f, 2.9802322e-8f, 2.9802326e-8f, 6.1035156e-5f, 6.1035153e-5f, 1e-45f};
    for (float f : special) v.add(f);
    float[] a = new float[v.size()];
    for (int i = 0; i < a.length; i++) a[i] = v.get(i);
    return Tensor.of(a, a.length);
  }

  // ------------------------------------------------------------------------------------------ data

  static Tensor data(DType t, int n, long seed) {
    Random r = new Random(seed);
    double[] special = {Double.NaN, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY, -0.0, 0.0, 0.5, 2.5, -1.5,
        1.0, -1.0, 30.0, -30.0, 1e-30, 1e20, -3e9};
    switch (t) {
      case F32, F64 -> {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) v[i] = i % 5 == 2 ? special[(i / 5) % special.length] : r.nextDouble() * 6 - 3;
        Tensor x = Tensor.of(v, n);
        return t == DType.F64 ? x : x.to(DType.F32);
      }
      case I64 -> {
        long[] v = new long[n];
        for (int i = 0; i < n; i++) v[i] = i % 7 == 3 ? (i % 2 == 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : r.nextInt(21) - 10;
        return Tensor.of(v, n);
      }
      case I32 -> {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) v[i] = i % 7 == 3 ? (i % 2 == 0 ? Integer.MIN_VALUE : Integer.MAX_VALUE) : r.nextInt(21) - 10;
        return Tensor.of(v, n);
      }
      case BOOL -> {
        boolean[] v = new boolean[n];
        for (int i = 0; i < n; i++) v[i] = r.nextBoolean();
        return Tensor.of(v, n);
      }
      case BF16, F16 -> {
        return data(DType.F32, n, seed).to(t);
      }
    }
    throw new AssertionError(t);
  }

  /** N elements: contiguous (0), every other element of 2N (1), or one value expanded (2). */
  static Tensor operand(DType t, int layout, long seed) {
    return switch (layout) {
      case 0 -> data(t, N, seed);
      case 1 -> Views.slice(data(t, 2 * N, seed), 0, 1, N, 2);
      default -> Views.expand(data(t, 1, seed), new int[] {N});
    };
  }

  static double param(UnaryOp op) {
    return switch (op) {
      case LEAKY_RELU -> 0.01;
      case ELU -> 1.3;
      case SOFTPLUS -> 2.0;
      case POW_SCALAR -> 2.5;
      default -> 0;
    };
  }

  /** Ops with no libm function inside: the same bits whatever the math library. */
  static boolean exact(UnaryOp op) {
    return switch (op) {
      case NEG, ABS, SIGN, SQRT, SQUARE, RECIPROCAL, RELU, LEAKY_RELU, FLOOR, CEIL, ROUND, TRUNC -> true;
      default -> false;
    };
  }

  static double tol(DType t, boolean exact) {
    if (exact || !t.isFloatingPoint()) return 0;
    return t == DType.F32 ? 3e-6 : 1e-13;
  }

  // ------------------------------------------------------------------------------------------ the driver

  /** Requests to the host driver and the CPU's answers to compare its output with. */
  static final class Batch {
    private final StringBuilder requests = new StringBuilder();
    private final List<Object[]> expected = new ArrayList<>();

    void add(String family, int op, double param, Tensor out, double tol, String what, View... inputs) {
      View[] all = new View[inputs.length + 1];
      all[0] = out;
      System.arraycopy(inputs, 0, all, 1, inputs.length);
      int types = family.equals("UNARY_BACKWARD") ? 1 : all.length;
      requests.append(family).append(' ').append(types);
      for (int k = 0; k < types; k++) requests.append(' ').append(all[k].dtype().ordinal());
      requests.append(' ').append(op).append(' ').append(Long.toHexString(Double.doubleToRawLongBits(param)))
          .append(' ').append(out.rank());
      for (int s : out.shapeRef()) requests.append(' ').append(s);
      requests.append('\n');
      for (View v : all) {
        for (int s : v.stridesRef()) requests.append(s).append(' ');
        int size = v.storage().size() - v.offset();
        requests.append(size).append(' ').append(v.dtype().ordinal()).append('\n');
        for (int i = 0; i < size; i++) requests.append(Long.toHexString(bits(v.storage(), v.offset() + i))).append(' ');
        requests.append('\n');
      }
      expected.add(new Object[] {out, tol, what});
    }

    void check() throws IOException, InterruptedException {
      Path in = dir.resolve("requests-" + System.nanoTime() + ".txt");
      Path outFile = dir.resolve("answers-" + System.nanoTime() + ".txt");
      Files.writeString(in, requests);
      ProcessBuilder pb = new ProcessBuilder(exe.toString()).redirectInput(in.toFile()).redirectOutput(outFile.toFile())
          .redirectError(ProcessBuilder.Redirect.INHERIT);
      Process p = pb.start();
      if (!p.waitFor(300, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        fail("the host driver did not finish in 300 s");
      }
      assertEquals(0, p.exitValue(), "the host driver failed");
      List<String> answers = Files.readAllLines(outFile);
      assertEquals(expected.size(), answers.size(), "one answer per request");
      List<String> failures = new ArrayList<>();
      for (int c = 0; c < expected.size(); c++) {
        String f = compare((Tensor) expected.get(c)[0], (double) expected.get(c)[1], answers.get(c).trim().split(" "));
        if (f != null) failures.add(expected.get(c)[2] + ": " + f);
      }
      if (!failures.isEmpty()) fail(failures.size() + " of " + expected.size() + " cases differ:\n" + String.join("\n", failures));
    }
  }

  /** Null when the driver's answer matches want (its bits when tol is 0, any NaN for NaN), else why not. */
  static String compare(Tensor want, double tol, String[] got) {
    int n = (int) want.numel();
    int bad = 0;
    String first = null;
    for (int i = 0; i < n; i++) {
      long gb = Long.parseUnsignedLong(got[i], 16);
      long wb = bits(want.storage(), i);
      double g = value(want.dtype(), gb);
      double w = value(want.dtype(), wb);
      boolean ok = Double.isNaN(w) ? Double.isNaN(g)
          : tol == 0 ? gb == wb : g == w || Math.abs(g - w) <= tol * (1 + Math.abs(w));
      if (!ok && bad++ == 0) {
        first = "element " + i + ": want " + w + " (0x" + Long.toHexString(wb) + "), got " + g + " (0x"
            + Long.toHexString(gb) + ")";
      }
    }
    return bad == 0 ? null : bad + "/" + n + " differ, first " + first;
  }

  static long bits(Storage s, int i) {
    return switch (s.dtype()) {
      case F32 -> Float.floatToRawIntBits(s.floats()[i]) & 0xffffffffL;
      case F64 -> Double.doubleToRawLongBits(s.doubles()[i]);
      case I64 -> s.longs()[i];
      case I32 -> s.ints()[i] & 0xffffffffL;
      case BOOL -> s.bools()[i] & 0xff;
      case I8 -> s.int8s()[i] & 0xff;
      case BF16, F16 -> s.halves()[i] & 0xffff;
    };
  }

  static double value(DType t, long b) {
    return switch (t) {
      case F32 -> Float.intBitsToFloat((int) b);
      case F64 -> Double.longBitsToDouble(b);
      case I64 -> b;
      case I32 -> (int) b;
      case BOOL -> b;
      case I8 -> (byte) b;
      case BF16 -> dev.ember.tensor.HalfFloats.bf16ToFloat((short) b);
      case F16 -> dev.ember.tensor.HalfFloats.f16ToFloat((short) b);
    };
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = ElementwiseHostTest.class.getResourceAsStream(name)) {
      if (in == null) throw new IOException("missing test resource " + name);
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

}
