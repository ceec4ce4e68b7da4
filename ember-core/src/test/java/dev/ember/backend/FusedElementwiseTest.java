package dev.ember.backend;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.cpu.CpuBackend;
import dev.ember.backend.cpu.CpuBackends;
import dev.ember.backend.cpu.FloatKernels;
import dev.ember.backend.cpu.FusedInterpreter;
import dev.ember.ops.FusedOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Fused elementwise programs against the eager chain they stand for, bitwise: random programs (every kind of input,
 * unary ops with their vector and scalar-tail paths, the binary ops) at sizes around the vector length, with tails,
 * on the scalar and the Vector API backends, through the backend and through the op; the op's gradients (by
 * recomputation) against the chain's, and a float64 gradient check.
 */
class FusedElementwiseTest {
  private static final UnaryOp[] UNARY = {UnaryOp.NEG, UnaryOp.ABS, UnaryOp.EXP, UnaryOp.TANH, UnaryOp.SIGMOID,
      UnaryOp.RELU, UnaryOp.GELU, UnaryOp.GELU_TANH, UnaryOp.SILU, UnaryOp.SQUARE, UnaryOp.SQRT, UnaryOp.RECIPROCAL,
      UnaryOp.LEAKY_RELU, UnaryOp.ELU, UnaryOp.SOFTPLUS, UnaryOp.SIN, UnaryOp.EXPM1, UnaryOp.LOG1P, UnaryOp.LOG,
      UnaryOp.RSQRT};
  private static final BinaryOp[] BINARY = {BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV, BinaryOp.MAXIMUM,
      BinaryOp.MINIMUM};
  /** [rows, cols] shapes: below, at and around the vector lengths, tails, and above the parallel threshold. */
  static final int[][] SHAPES = {{1, 1}, {1, 7}, {2, 8}, {1, 15}, {1, 16}, {3, 17}, {1, 31}, {4, 33}, {5, 100},
      {1, 513}, {3, 1000}, {2, 4099}, {70, 1001}, {300, 256}};

  /** The random program of {@code seed}: which inputs, which steps, on which values. */
  public static ElementwiseProgram program(long seed) {
    Random r = new Random(seed);
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    List<Integer> full = new ArrayList<>();
    List<Integer> any = new ArrayList<>();
    int fulls = 1 + r.nextInt(3);
    for (int i = 0; i < fulls; i++) full.add(b.full());
    if (r.nextBoolean()) any.add(b.row());
    if (r.nextBoolean()) any.add(b.column());
    if (r.nextBoolean()) any.add(b.constant(r.nextInt(5) * 0.5 - 1));
    any.addAll(full);
    int steps = 1 + r.nextInt(8);
    for (int s = 0; s < steps; s++) {
      int v;
      if (r.nextInt(3) == 0) {
        UnaryOp op = UNARY[r.nextInt(UNARY.length)];
        double p = switch (op) {
          case LEAKY_RELU -> 0.1;
          case ELU -> 1.3;
          case SOFTPLUS -> 2;
          default -> 0;
        };
        v = b.unary(op, p, full.get(r.nextInt(full.size())));
      } else {
        int x = full.get(r.nextInt(full.size()));
        int y = any.get(r.nextInt(any.size()));
        v = r.nextBoolean() ? b.binary(BINARY[r.nextInt(BINARY.length)], x, y)
            : b.binary(BINARY[r.nextInt(BINARY.length)], y, x);
      }
      full.add(v);
      any.add(v);
    }
    return b.build();
  }

  /** Inputs for the program at [rows, cols]: random values, some beyond exp's range and some negative. */
  public static Tensor[] inputs(ElementwiseProgram p, Generator gen, DType dtype, int rows, int cols) {
    Tensor[] in = new Tensor[p.tensorInputs()];
    for (int i = 0; i < p.inputs().size(); i++) {
      int[] shape = switch (p.inputs().get(i).kind()) {
        case FULL -> new int[] {rows, cols};
        case ROW -> new int[] {cols};
        case COLUMN -> new int[] {rows, 1};
        case CONSTANT -> null;
      };
      if (shape != null) in[p.tensorSlot(i)] = Tensor.randn(gen, dtype, shape).mul(3);
    }
    return in;
  }

  static void assertBitwise(Tensor expected, Tensor actual, String what) {
    assertEquals(Arrays.toString(expected.shape()), Arrays.toString(actual.shape()), what);
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    for (int i = 0; i < e.length; i++) {
      if (Float.floatToRawIntBits(e[i]) != Float.floatToRawIntBits(a[i])) {
        throw new AssertionError(what + ": element " + i + " of " + e.length + ": " + e[i] + " vs " + a[i]);
      }
    }
  }

  /** The chain step by step through {@code backend}'s own unary and binary: the SPI default's reference. */
  private static Tensor stepByStep(Backend backend, ElementwiseProgram p, Tensor[] in) {
    Tensor[] values = new Tensor[p.valueCount()];
    int n = p.inputs().size();
    for (int i = 0; i < n; i++) {
      if (p.inputs().get(i).kind() != ElementwiseProgram.Kind.CONSTANT) values[i] = in[p.tensorSlot(i)];
    }
    int[] shape = null;
    for (int i = n - 1; i >= 0; i--) {
      if (p.inputs().get(i).kind() == ElementwiseProgram.Kind.FULL) shape = values[i].shape();
    }
    for (int s = 0; s < p.steps().size(); s++) {
      Tensor out = Tensor.empty(shape);
      switch (p.steps().get(s)) {
        case ElementwiseProgram.UnaryStep u -> backend.unary(u.op(), u.param(), values[u.x()], out);
        case ElementwiseProgram.BinaryStep b -> {
          Tensor a = values[b.a()] == null ? Tensor.scalar(p.inputs().get(b.a()).value()) : values[b.a()];
          Tensor c = values[b.b()] == null ? Tensor.scalar(p.inputs().get(b.b()).value()) : values[b.b()];
          backend.binary(b.op(), a.expand(shape), c.expand(shape), out);
        }
      }
      values[n + s] = out;
    }
    return values[p.output()];
  }

  /** relu(x0 + x1 * 0.5). */
  static ElementwiseProgram sample() {
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int x = b.full();
    int y = b.full();
    int half = b.constant(0.5);
    b.unary(UnaryOp.RELU, b.binary(BinaryOp.ADD, x, b.binary(BinaryOp.MUL, y, half)));
    return b.build();
  }

  @Test
  void randomProgramsGiveTheEagerChainsBitsOnEveryBackend() {
    FloatKernels vk = CpuBackends.vectorKernelsOrNull();
    assertNotNull(vk, "tests run with the Vector API");
    List<Backend> backends = List.of(CpuBackends.scalar(), new CpuBackend(vk));
    Generator gen = new Generator(7);
    for (long seed = 0; seed < 120; seed++) {
      ElementwiseProgram p = program(seed);
      int[] shape = SHAPES[(int) (seed % SHAPES.length)];
      Tensor[] in = inputs(p, gen, DType.F32, shape[0], shape[1]);
      String what = "seed " + seed + " " + p + " at " + Arrays.toString(shape);
      assertBitwise(FusedOps.elementwiseEager(p, in), FusedOps.elementwise(p, in), what + " (op)");
      for (Backend backend : backends) {
        Tensor out = Tensor.empty(shape);
        backend.fusedElementwise(p, in, out);
        assertBitwise(stepByStep(backend, p, in), out, what + " on " + backend.name());
      }
    }
  }

  @Test
  void theInterpretedKernelMatchesTheEagerChain() {
    FloatKernels vk = CpuBackends.vectorKernelsOrNull();
    Generator gen = new Generator(8);
    for (long seed = 200; seed < 260; seed++) {
      ElementwiseProgram p = program(seed);
      int[] shape = SHAPES[(int) (seed % SHAPES.length)];
      Tensor[] in = inputs(p, gen, DType.F32, shape[0], shape[1]);
      // the interpreter on its own: one block per call, no broadcast inputs expanded for it, so FULL inputs only
      if (p.tensorInputs() != countFull(p)) continue;
      int values = p.valueCount();
      int n = shape[0] * shape[1];
      if (n > 512) continue;
      float[][] arr = new float[values][];
      int[] off = new int[values];
      float[] consts = new float[values];
      for (int i = 0; i < p.inputs().size(); i++) {
        if (p.inputs().get(i).kind() == ElementwiseProgram.Kind.CONSTANT) consts[i] = (float) p.inputs().get(i).value();
        else arr[i] = in[p.tensorSlot(i)].contiguous().toFloatArray();
      }
      for (int v = p.inputs().size(); v < values; v++) arr[v] = new float[n];
      new FusedInterpreter(vk, p).block(arr, off, consts, n);
      assertBitwise(FusedOps.elementwiseEager(p, in), Tensor.of(arr[values - 1], shape), "seed " + seed + " " + p);
    }
  }

  private static int countFull(ElementwiseProgram p) {
    int k = 0;
    for (ElementwiseProgram.Input i : p.inputs()) if (i.kind() == ElementwiseProgram.Kind.FULL) k++;
    return k;
  }

  @Test
  void nonContiguousAndFloat64InputsTakeTheStepByStepPath() {
    ElementwiseProgram p = sample();
    Generator gen = new Generator(9);
    Tensor x = Tensor.randn(gen, 33, 17).t(); // [17, 33], strided
    Tensor y = Tensor.randn(gen, 17, 33);
    assertBitwise(FusedOps.elementwiseEager(p, x, y), FusedOps.elementwise(p, x, y), "transposed x");
    Tensor xd = Tensor.randn(gen, DType.F64, 5, 9);
    Tensor yd = Tensor.randn(gen, DType.F64, 5, 9);
    assertEquals(Arrays.toString(FusedOps.elementwiseEager(p, xd, yd).toDoubleArray()),
        Arrays.toString(FusedOps.elementwise(p, xd, yd).toDoubleArray()));
  }

  @Test
  void halfAndMixedInputsRunTheEagerChain() {
    ElementwiseProgram p = sample();
    Generator gen = new Generator(12);
    Tensor x = Tensor.randn(gen, 4, 9).to(DType.BF16);
    Tensor y = Tensor.randn(gen, 4, 9).to(DType.BF16);
    Tensor fused = FusedOps.elementwise(p, x, y);
    assertEquals(DType.BF16, fused.dtype());
    assertBitwise(FusedOps.elementwiseEager(p, x, y), fused, "bf16");
    Tensor yf = Tensor.randn(gen, 4, 9);
    assertBitwise(FusedOps.elementwiseEager(p, x, yf), FusedOps.elementwise(p, x, yf), "bf16 with f32");
  }

  @Test
  void gradientsAreTheChainsByRecomputation() {
    Generator gen = new Generator(10);
    for (long seed = 300; seed < 340; seed++) {
      ElementwiseProgram p = program(seed);
      Tensor[] in = inputs(p, gen, DType.F32, 4, 33);
      Tensor[] a = new Tensor[in.length];
      Tensor[] b = new Tensor[in.length];
      for (int i = 0; i < in.length; i++) {
        a[i] = in[i].detach().requiresGrad(true);
        b[i] = in[i].detach().requiresGrad(true);
      }
      Tensor g = Tensor.randn(gen, 4, 33);
      FusedOps.elementwise(p, a).backward(g);
      FusedOps.elementwiseEager(p, b).backward(g);
      for (int i = 0; i < in.length; i++) {
        if (b[i].grad() == null) continue;
        assertBitwise(b[i].grad(), a[i].grad(), "seed " + seed + " " + p + " grad of x" + i);
      }
    }
  }

  @Test
  void float64GradCheck() {
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int x = b.full();
    int y = b.full();
    int bias = b.row();
    int col = b.column();
    int half = b.constant(0.5);
    int h = b.binary(BinaryOp.ADD, b.binary(BinaryOp.MUL, x, y), bias);
    h = b.unary(UnaryOp.TANH, b.binary(BinaryOp.SUB, h, col));
    h = b.binary(BinaryOp.MAXIMUM, b.binary(BinaryOp.MUL, h, half), b.unary(UnaryOp.SIGMOID, x));
    b.binary(BinaryOp.DIV, h, b.binary(BinaryOp.ADD, b.unary(UnaryOp.EXP, y), half));
    ElementwiseProgram p = b.build();
    Generator gen = new Generator(11);
    List<Tensor> in = List.of(Tensor.randn(gen, DType.F64, 3, 5).requiresGrad(true),
        Tensor.randn(gen, DType.F64, 3, 5).requiresGrad(true), Tensor.randn(gen, DType.F64, 5).requiresGrad(true),
        Tensor.randn(gen, DType.F64, 3, 1).requiresGrad(true));
    GradCheck.check("fused_elementwise", l -> FusedOps.elementwise(p, l.toArray(Tensor[]::new)), in);
  }

  @Test
  void programsPrintAsExpressionsAndCompareByValue() {
    ElementwiseProgram p = sample();
    assertEquals("relu(add(x0, mul(x1, 0.5)))", p.toString());
    assertEquals(p, sample());
    assertEquals(p.hashCode(), sample().hashCode());
    assertTrue(!p.equals(program(1)));
  }

  @Test
  void badProgramsAndInputsAreRejected() {
    var e = assertThrows(IllegalArgumentException.class, () -> {
      ElementwiseProgram.Builder b = ElementwiseProgram.builder();
      b.unary(UnaryOp.RELU, b.row());
      b.build();
    });
    assertEquals("ElementwiseProgram: step 0 (relu) reads ROW input 0; a unary step reads a FULL input or a register",
        e.getMessage());
    ElementwiseProgram p = sample();
    var e2 = assertThrows(IllegalArgumentException.class, () -> FusedOps.elementwise(p, Tensor.ones(2, 3)));
    assertEquals("fused_elementwise: program relu(add(x0, mul(x1, 0.5))) takes 2 tensor inputs, got 1",
        e2.getMessage());
    var e3 = assertThrows(IllegalArgumentException.class,
        () -> FusedOps.elementwise(p, Tensor.ones(2, 3), Tensor.ones(3)));
    assertEquals("fused_elementwise: input 1 (FULL) does not fit the output [2, 3] of relu(add(x0, mul(x1, 0.5))):"
        + " input=[3]", e3.getMessage());
  }
}
