package dev.ember.backend.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.ember.backend.Backend;
import dev.ember.backend.cpu.vector.VectorGemm;
import dev.ember.ops.LinalgOps;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.Views;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * GEMM reading BF16/F16 operands: every product has the bits of the float32 GEMM on the operands widened first, on
 * every path of the vector GEMM (the shapes of {@code GemmTest}), through the backend's strided batched matmul, and
 * through the ops and their gradients.
 */
class HalfGemmTest {
  private static final int[][] SHAPES = {
      {0, 5, 3}, {5, 0, 3}, {4, 6, 0}, {1, 1, 1}, {3, 3, 3}, {7, 7, 7}, {15, 15, 15}, {16, 16, 16},
      {17, 17, 17}, {33, 33, 33}, {100, 100, 100}, {13, 37, 19}, {1, 1000, 3}, {130, 70, 300},
      {12, 32, 256}, {25, 65, 513}, {121, 33, 257}, {64, 160, 40}, {3, 7, 1}, {200, 9, 100},
      {32, 1024, 256}, {5, 200, 300}, {8, 512, 300}, {20, 1000, 300}, {33, 2050, 600},
      {1, 128, 784}, {4, 300, 1000}, {2, 70, 33}, {3, 129, 17}, {1, 10, 128}, {4, 65, 16},
      {260, 130, 1100}, {28, 20, 1100}, {23, 20, 700}, {20, 20, 4200}, {32, 300, 4200},
      {20, 1000, 1100}, {32, 512, 512}, {44, 520, 600}};

  /** Which operands are half, and which half dtype each is (null: float32). */
  private static final DType[][] KINDS = {
      {DType.BF16, null}, {null, DType.BF16}, {DType.BF16, DType.BF16}, {DType.F16, DType.F16},
      {DType.F16, DType.BF16}, {null, DType.F16}};

  private interface HalfSgemm {
    void run(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, HalfOperand ah, int aOff,
        int lda, float[] b, HalfOperand bh, int bOff, int ldb, float beta, float[] c, int cOff, int ldc);
  }

  private interface Sgemm {
    void run(boolean transA, boolean transB, int m, int n, int k, float alpha, float[] a, int aOff, int lda,
        float[] b, int bOff, int ldb, float beta, float[] c, int cOff, int ldc);
  }

  /** n random values in [-2, 2) as bits of {@code dtype}. */
  private static short[] bits(DType dtype, int n, SplittableRandom rnd) {
    short[] s = new short[n];
    for (int i = 0; i < n; i++) {
      float f = (float) (rnd.nextDouble() * 4 - 2);
      s[i] = dtype == DType.BF16 ? HalfFloats.bf16(f) : HalfFloats.f16(f);
    }
    return s;
  }

  private static float[] widen(DType dtype, short[] s) {
    float[] f = new float[s.length];
    for (int i = 0; i < s.length; i++) f[i] = dtype == DType.BF16 ? HalfFloats.bf16ToFloat(s[i]) : HalfFloats.f16ToFloat(s[i]);
    return f;
  }

  private static float[] floats(int n, SplittableRandom rnd) {
    float[] f = new float[n];
    for (int i = 0; i < n; i++) f[i] = (float) (rnd.nextDouble() * 4 - 2);
    return f;
  }

  /** Every shape of at most {@code maxWork} multiply-adds, each way transposed, for every kind of operands. */
  private static void checkKernels(HalfSgemm half, Sgemm ref, String name, long maxWork) {
    int cases = 0;
    int shapes = 0;
    for (int[] sh : SHAPES) {
      int m = sh[0];
      int n = sh[1];
      int k = sh[2];
      if ((long) m * n * k > maxWork) continue;
      shapes++;
      for (int t = 0; t < 4; t++) {
        boolean transA = (t & 1) != 0;
        boolean transB = (t & 2) != 0;
        for (DType[] kind : KINDS) {
          SplittableRandom rnd = new SplittableRandom(31L * m + 7L * n + k + t);
          int lda = (transA ? m : k) + 3;
          int ldb = (transB ? k : n) + 5;
          int ldc = n + 2;
          int aOff = 7;
          int bOff = 11;
          int cOff = 4;
          int aLen = aOff + (transA ? k : m) * lda + 3;
          int bLen = bOff + (transB ? n : k) * ldb + 3;
          short[] ah = kind[0] == null ? null : bits(kind[0], aLen, rnd);
          short[] bh = kind[1] == null ? null : bits(kind[1], bLen, rnd);
          float[] a = ah == null ? floats(aLen, rnd) : widen(kind[0], ah);
          float[] b = bh == null ? floats(bLen, rnd) : widen(kind[1], bh);
          float[] c0 = floats(cOff + m * ldc + 2, rnd);
          for (float[] ab : new float[][] {{1f, 0f}, {1.5f, 0.5f}}) {
            float[] expected = c0.clone();
            ref.run(transA, transB, m, n, k, ab[0], a, aOff, lda, b, bOff, ldb, ab[1], expected, cOff, ldc);
            float[] got = c0.clone();
            half.run(transA, transB, m, n, k, ab[0], ah == null ? a : null,
                ah == null ? null : new HalfOperand(ah, kind[0] == DType.BF16), aOff, lda,
                bh == null ? b : null, bh == null ? null : new HalfOperand(bh, kind[1] == DType.BF16), bOff, ldb,
                ab[1], got, cOff, ldc);
            for (int i = 0; i < expected.length; i++) {
              if (Float.floatToRawIntBits(expected[i]) != Float.floatToRawIntBits(got[i])) {
                fail(name + " " + m + "x" + n + "x" + k + " transA=" + transA + " transB=" + transB + " A=" + kind[0]
                    + " B=" + kind[1] + " alpha/beta=" + ab[0] + "/" + ab[1] + ": element " + i + " is " + got[i]
                    + ", the float32 GEMM on the widened operands gives " + expected[i]);
              }
            }
            cases++;
          }
        }
      }
    }
    assertEquals(shapes * 4 * KINDS.length * 2, cases);
  }

  @Test
  void vectorGemmOnHalfOperandsHasTheBitsOfTheF32GemmOnThemWidened() {
    checkKernels(VectorGemm::sgemmHalf, VectorGemm::sgemm, "VectorGemm.sgemmHalf", Long.MAX_VALUE);
  }

  @Test
  void defaultSgemmHalfWidensForTheScalarKernels() {
    FloatKernels scalar = HalfGemmTest.scalarKernels();
    // the default only widens and calls sgemm: the small shapes show it (ScalarGemm on the large ones is slow)
    checkKernels(scalar::sgemmHalf, ScalarGemm::sgemm, "FloatKernels.sgemmHalf (scalar)", 1L << 20);
  }

  private static FloatKernels scalarKernels() {
    return new ScalarFloatKernels();
  }

  /** The float32 tensor of the same values and the same layout (shape, strides, offset) as half view {@code h}. */
  private static Tensor widenedView(Tensor h) {
    Tensor base = Views.of(h, new int[] {h.storage().size()}, new int[] {1}, 0).to(DType.F32);
    return Views.of(base, h.shape(), h.strides(), h.offset());
  }

  private static void assertBitsEqual(Tensor expected, Tensor actual, String what) {
    assertArrayEquals(expected.shape(), actual.shape(), what);
    float[] e = expected.toFloatArray();
    float[] g = actual.toFloatArray();
    for (int i = 0; i < e.length; i++) {
      assertEquals(Float.floatToRawIntBits(e[i]), Float.floatToRawIntBits(g[i]), what + ": element " + i);
    }
  }

  /** backend.matmul on views of half storage against the same views of the widened storage. */
  private static void checkBackend(Tensor a, Tensor b, String what) {
    Backend cpu = Device.CPU.backend();
    assertTrue(cpu.matmulReadsHalf());
    int[] outShape = {a.shape()[0], a.shape()[1], b.shape()[2]};
    Tensor got = Tensor.zeros(outShape);
    cpu.matmul(a, b, got, 0f);
    Tensor expected = Tensor.zeros(outShape);
    cpu.matmul(a.dtype().isHalf() ? widenedView(a) : a, b.dtype().isHalf() ? widenedView(b) : b, expected, 0f);
    assertBitsEqual(expected, got, what);
    // beta 1 over a starting C (a bias)
    Tensor c0 = Tensor.rand(new Generator(9), outShape);
    Tensor got1 = c0.clone();
    cpu.matmul(a, b, got1, 1f);
    Tensor exp1 = c0.clone();
    cpu.matmul(a.dtype().isHalf() ? widenedView(a) : a, b.dtype().isHalf() ? widenedView(b) : b, exp1, 1f);
    assertBitsEqual(exp1, got1, what + " (beta 1)");
  }

  @Test
  void backendMatmulReadsHalfViewsTransposedStridedAndBatched() {
    Generator gen = new Generator(11);
    for (DType dt : new DType[] {DType.BF16, DType.F16}) {
      // odd shapes, batched, row-major
      checkBackend(Tensor.randn(gen, 3, 7, 13).to(dt), Tensor.randn(gen, 3, 13, 9).to(dt), dt + " batched");
      // transposed operands (GEMM reads them as such)
      checkBackend(Tensor.randn(gen, 2, 13, 37).to(dt).transpose(1, 2), Tensor.randn(gen, 2, 29, 13).to(dt)
          .transpose(1, 2), dt + " A^T B^T");
      // strided: every other column, a layout GEMM cannot read (copied first) and an offset slice
      Tensor wide = Tensor.randn(gen, 2, 40, 66).to(dt);
      checkBackend(wide.slice(2, 1, 65, 2), Tensor.randn(gen, 2, 32, 17).to(dt), dt + " column-strided A");
      checkBackend(Tensor.randn(gen, 2, 5, 40).to(dt), wide.slice(2, 3, 60, 1), dt + " offset slice B");
      // a weight as linear reads it: x [m, in] times W^T, W [out, in]; the batch-32 and batch-128 paths
      for (int m : new int[] {1, 4, 32, 128}) {
        checkBackend(Tensor.randn(gen, 1, m, 300).to(dt), Tensor.randn(gen, 1, 520, 300).to(dt).transpose(1, 2),
            dt + " linear m=" + m);
      }
      // mixed: a half operand against a float32 one, both ways
      checkBackend(Tensor.randn(gen, 2, 33, 70).to(dt), Tensor.randn(gen, 2, 70, 41), dt + " x F32");
      checkBackend(Tensor.randn(gen, 2, 33, 70), Tensor.randn(gen, 2, 41, 70).to(dt).transpose(1, 2), "F32 x " + dt);
    }
    checkBackend(Tensor.randn(gen, 1, 17, 50).to(DType.BF16), Tensor.randn(gen, 1, 50, 19).to(DType.F16),
        "BF16 x F16");
  }

  @Test
  void halfLinearAndMatmulGradientsHaveTheBitsOfTheWidenedPath() {
    Generator gen = new Generator(12);
    for (DType dt : new DType[] {DType.BF16, DType.F16}) {
      Tensor x0 = Tensor.randn(gen, 37, 50).to(dt);
      Tensor w0 = Tensor.randn(gen, 23, 50).mul(0.3).to(dt);
      Tensor b0 = Tensor.randn(gen, 23).to(dt);
      Tensor weights = Tensor.randn(gen, 37, 23);
      Tensor[] direct = linearGrads(x0, w0, b0, weights, false);
      Tensor[] widened = linearGrads(x0, w0, b0, weights, true);
      for (int i = 0; i < direct.length; i++) {
        assertEquals(i == 0 ? DType.F32 : dt, direct[i].dtype(), "linear output " + i);
        assertBitsEqual(widened[i].to(DType.F32), direct[i].to(DType.F32), dt + " linear, value/gradient " + i);
      }
      Tensor a0 = Tensor.randn(gen, 3, 9, 21).to(dt);
      Tensor c0 = Tensor.randn(gen, 21, 14).to(dt);
      Tensor a = a0.clone().requiresGrad(true);
      Tensor c = c0.clone().requiresGrad(true);
      Tensor y = a.matmul(c);
      assertEquals(dt, y.dtype());
      y.to(DType.F32).square().sum().backward();
      Tensor a2 = a0.clone().requiresGrad(true);
      Tensor c2 = c0.clone().requiresGrad(true);
      Tensor y2 = a2.to(DType.F32).matmul(c2.to(DType.F32)).to(dt);
      y2.to(DType.F32).square().sum().backward();
      assertBitsEqual(y2.to(DType.F32), y.to(DType.F32), dt + " matmul");
      assertBitsEqual(a2.grad().to(DType.F32), a.grad().to(DType.F32), dt + " matmul dA");
      assertBitsEqual(c2.grad().to(DType.F32), c.grad().to(DType.F32), dt + " matmul dB");
      assertEquals(dt, a.grad().dtype());
    }
  }

  /** linear(x, W, b) weighted and summed, then its value and the gradients of x, W and b; widened: via F32 first. */
  private static Tensor[] linearGrads(Tensor x0, Tensor w0, Tensor b0, Tensor weights, boolean widened) {
    Tensor x = x0.clone().requiresGrad(true);
    Tensor w = w0.clone().requiresGrad(true);
    Tensor b = b0.clone().requiresGrad(true);
    DType dt = x0.dtype();
    Tensor y = widened
        ? LinalgOps.linear(x.to(DType.F32), w.to(DType.F32), b.to(DType.F32)).to(dt)
        : LinalgOps.linear(x, w, b);
    assertEquals(dt, y.dtype());
    y.to(DType.F32).mul(weights).sum().backward();
    return new Tensor[] {y.to(DType.F32), x.grad(), w.grad(), b.grad()};
  }
}
