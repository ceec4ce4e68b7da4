package dev.ember.backend.cpu.vector;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.backend.BinaryOp;
import dev.ember.backend.ElementwiseProgram;
import dev.ember.backend.UnaryOp;
import dev.ember.backend.View;
import dev.ember.backend.cpu.CpuFused;
import dev.ember.backend.cpu.FusedInterpreter;
import dev.ember.backend.cpu.FusedKernel;
import dev.ember.backend.cpu.Parallel;
import dev.ember.ops.FusedOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The generated kernels against the interpreted one and the eager chain, bitwise, on random programs (many seeds;
 * sizes around the vector length, with tails; every kind of input), and on one and two threads.
 */
class FusedCodegenTest {
  private static final VectorFloatKernels VK = new VectorFloatKernels();
  private static final UnaryOp[] UNARY = {UnaryOp.NEG, UnaryOp.ABS, UnaryOp.RELU, UnaryOp.SQUARE, UnaryOp.SQRT,
      UnaryOp.RECIPROCAL, UnaryOp.EXP, UnaryOp.TANH, UnaryOp.SIGMOID, UnaryOp.GELU, UnaryOp.GELU_TANH, UnaryOp.SILU,
      UnaryOp.LEAKY_RELU, UnaryOp.LOG, UnaryOp.RSQRT, UnaryOp.SIN};
  private static final BinaryOp[] BINARY = {BinaryOp.ADD, BinaryOp.SUB, BinaryOp.MUL, BinaryOp.DIV, BinaryOp.MAXIMUM,
      BinaryOp.MINIMUM};

  /** A random program, mostly register steps so that long vector stages are generated. */
  static ElementwiseProgram program(long seed) {
    Random r = new Random(seed);
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int[] full = new int[32];
    int nf = 0;
    int[] any = new int[40];
    int na = 0;
    int fulls = 1 + r.nextInt(3);
    for (int i = 0; i < fulls; i++) full[nf++] = b.full();
    if (r.nextBoolean()) any[na++] = b.row();
    if (r.nextBoolean()) any[na++] = b.column();
    if (r.nextBoolean()) any[na++] = b.constant(r.nextInt(7) * 0.25 - 0.75);
    for (int i = 0; i < nf; i++) any[na++] = full[i];
    int steps = 1 + r.nextInt(10);
    for (int s = 0; s < steps; s++) {
      int v;
      if (r.nextInt(3) == 0) {
        UnaryOp op = UNARY[r.nextInt(UNARY.length)];
        v = b.unary(op, op == UnaryOp.LEAKY_RELU ? 0.2 : 0, full[r.nextInt(nf)]);
      } else {
        int x = full[r.nextInt(nf)];
        int y = any[r.nextInt(na)];
        BinaryOp op = BINARY[r.nextInt(BINARY.length)];
        v = r.nextBoolean() ? b.binary(op, x, y) : b.binary(op, y, x);
      }
      full[nf++] = v;
      any[na++] = v;
    }
    return b.build();
  }

  private static Tensor run(FusedKernel k, ElementwiseProgram p, Tensor[] in, int[] shape) {
    Tensor out = Tensor.empty(shape);
    View[] views = in.clone();
    assertTrue(CpuFused.applies(p, views, out));
    CpuFused.run(k, p, views, out);
    return out;
  }

  private static Tensor[] inputs(ElementwiseProgram p, Generator gen, int rows, int cols) {
    Tensor[] in = new Tensor[p.tensorInputs()];
    for (int i = 0; i < p.inputs().size(); i++) {
      int[] shape = switch (p.inputs().get(i).kind()) {
        case FULL -> new int[] {rows, cols};
        case ROW -> new int[] {cols};
        case COLUMN -> new int[] {rows, 1};
        case CONSTANT -> null;
      };
      if (shape != null) in[p.tensorSlot(i)] = Tensor.randn(gen, DType.F32, shape).mul(2.5);
    }
    return in;
  }

  private static void assertBitwise(Tensor expected, Tensor actual, String what) {
    float[] e = expected.toFloatArray();
    float[] a = actual.toFloatArray();
    assertEquals(e.length, a.length, what);
    for (int i = 0; i < e.length; i++) {
      if (Float.floatToRawIntBits(e[i]) != Float.floatToRawIntBits(a[i])) {
        throw new AssertionError(what + ": element " + i + " of " + e.length + ": " + e[i] + " vs " + a[i]);
      }
    }
  }

  @Test
  void generatedEqualsInterpretedEqualsEagerOnRandomPrograms() {
    int l = FusedCodegen.S.length();
    int[] sizes = {1, l - 1, l, l + 1, 2 * l + 3, 3 * l, 511, 512, 513, 1000, 1537};
    int[] colsChoices = {1, 3, l, l + 1, 7, 64};
    Generator gen = new Generator(21);
    for (long seed = 0; seed < 250; seed++) {
      ElementwiseProgram p = program(seed);
      Random r = new Random(seed);
      int cols = colsChoices[r.nextInt(colsChoices.length)];
      int rows = Math.max(1, sizes[r.nextInt(sizes.length)] / cols);
      if (r.nextInt(4) == 0) rows = 1;
      Tensor[] in = inputs(p, gen, rows, cols);
      int[] shape = {rows, cols};
      String what = "seed " + seed + " " + p + " at " + Arrays.toString(shape);
      Tensor eager = FusedOps.elementwiseEager(p, in);
      assertBitwise(eager, run(new FusedInterpreter(VK, p), p, in, shape), what + " interpreted");
      assertBitwise(eager, run(FusedCodegen.kernel(p), p, in, shape), what + " generated");
    }
  }

  @Test
  void resultsDoNotDependOnTheThreadCount() {
    int before = Parallel.threads();
    Generator gen = new Generator(22);
    try {
      for (long seed = 500; seed < 506; seed++) {
        ElementwiseProgram p = program(seed);
        Tensor[] in = inputs(p, gen, 301, 517); // 155617 elements: several chunks, a tail
        int[] shape = {301, 517};
        Parallel.setThreads(1);
        Tensor one = run(FusedCodegen.kernel(p), p, in, shape);
        Parallel.setThreads(2);
        Tensor two = run(FusedCodegen.kernel(p), p, in, shape);
        assertBitwise(one, two, "seed " + seed + " " + p);
        assertBitwise(FusedOps.elementwiseEager(p, in), two, "seed " + seed + " " + p + " against eager");
      }
    } finally {
      Parallel.setThreads(before);
    }
  }

  @Test
  void longChainsAreCutIntoStagesAndStayBitwise() {
    // 150 steps: register runs longer than MAX_STAGE split into several methods, with exp and tanh calls between
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    int x = b.full();
    int y = b.full();
    int c = b.constant(0.25);
    int h = x;
    for (int s = 0; s < 150; s++) {
      h = switch (s % 10) {
        case 3 -> s % 50 == 3 ? b.unary(UnaryOp.TANH, h) : b.binary(BinaryOp.SUB, h, y);
        case 7 -> b.binary(BinaryOp.MUL, h, c);
        case 9 -> s % 40 == 9 ? b.unary(UnaryOp.EXP, b.unary(UnaryOp.NEG, b.unary(UnaryOp.ABS, h))) : b.unary(UnaryOp.RELU, h);
        default -> b.binary(s % 2 == 0 ? BinaryOp.ADD : BinaryOp.MAXIMUM, h, y);
      };
    }
    ElementwiseProgram p = b.build();
    var stages = FusedCodegen.stages(p);
    boolean split = false; // a run of register steps cut into consecutive loops
    for (int k = 1; k < stages.size(); k++) split |= stages.get(k - 1).loop() && stages.get(k).loop();
    assertTrue(split, stages.toString());
    Tensor[] in = inputs(p, new Generator(24), 3, 1001);
    assertBitwise(FusedOps.elementwiseEager(p, in), run(FusedCodegen.kernel(p), p, in, new int[] {3, 1001}), "long");
  }

  @Test
  void programsThatDifferOnlyInConstantsShareAClass() {
    ElementwiseProgram.Builder a = ElementwiseProgram.builder();
    a.binary(BinaryOp.MUL, a.full(), a.constant(0.5));
    ElementwiseProgram.Builder b = ElementwiseProgram.builder();
    b.binary(BinaryOp.MUL, b.full(), b.constant(3));
    assertSame(FusedCodegen.kernel(a.build()), FusedCodegen.kernel(b.build()));
    Tensor x = Tensor.randn(new Generator(23), 5, 19);
    assertBitwise(x.mul(3), FusedOps.elementwise(b.build(), x), "x * 3");
    assertBitwise(x.mul(0.5), FusedOps.elementwise(a.build(), x), "x * 0.5");
  }
}
