package dev.ember.nn.functional;

import static dev.ember.testing.Assertions.assertClose;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Checkpointing;
import dev.ember.autograd.Grad;
import dev.ember.backend.cpu.Parallel;
import dev.ember.nn.functional.Attention.Kernel;
import dev.ember.tensor.DType;
import dev.ember.tensor.Device;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Attention beyond the op table (NnOpTable holds the float64 gradchecks of both paths with masks,
 * causal, sliding window, dropout and the float-mask gradient): agreement between the paths (also on a long sequence and with dropout), the window
 * against an explicit band mask, and exact error messages. Values against PyTorch are in
 * AttentionFixtureTest.
 */
class AttentionTest {
  private static final Kernel TINY = Kernel.tiled(2, 3);
  private static final Kernel[] BOTH = {Kernel.plain(), TINY};

  private static Tensor randn(Generator g, int... shape) {
    return Tensor.randn(g, DType.F64, shape).requiresGrad(true);
  }

  private static Tensor sdpa(List<Tensor> in, Tensor mask, double p, boolean causal, int window, Kernel kernel) {
    return Attention.scaledDotProductAttention(in.get(0), in.get(1), in.get(2), mask, p, causal, null, window,
        new Generator(77), kernel);
  }

  private static List<Tensor> qkv(int seed, int[] batch, int l, int s, int e, int ev) {
    Generator g = new Generator(seed);
    int r = batch.length;
    int[] qs = java.util.Arrays.copyOf(batch, r + 2);
    int[] ks = qs.clone();
    int[] vs = qs.clone();
    qs[r] = l;
    qs[r + 1] = e;
    ks[r] = s;
    ks[r + 1] = e;
    vs[r] = s;
    vs[r + 1] = ev;
    return List.of(randn(g, qs), randn(g, ks), randn(g, vs));
  }

  @Test
  void pathsAgreeOnALongSequenceInFloat32() {
    Generator g = new Generator(12);
    Tensor q = Tensor.randn(g, 2, 300, 16);
    Tensor k = Tensor.randn(g, 2, 260, 16);
    Tensor v = Tensor.randn(g, 2, 260, 8);
    for (boolean causal : new boolean[] {false, true}) {
      for (int window : new int[] {-1, 17}) {
        Tensor plain = Attention.scaledDotProductAttention(q, k, v, null, 0, causal, null, window, null, Kernel.plain());
        Tensor tiled = Attention.scaledDotProductAttention(q, k, v, null, 0, causal, null, window, null,
            Kernel.tiled(32, 48));
        assertClose(plain, tiled, 1e-5, 1e-4, "causal " + causal + " window " + window);
      }
    }
  }

  @Test
  void autoTakesTheTiledPathAboveTheThresholdWithTheSameResult() {
    List<Tensor> in = qkv(13, new int[] {3}, 6, 9, 4, 5);
    Tensor plain = sdpa(in, null, 0, false, -1, Kernel.plain());
    Tensor auto = sdpa(in, null, 0, false, -1, new Kernel(Attention.Path.AUTO, 4, 4, 10));
    assertClose(plain, auto, 1e-12, 1e-12, "auto (tiled) vs plain");
  }

  /**
   * Between {@link Kernel#FUSED_ABOVE} and the size threshold, AUTO takes the tiled path for a float32 forward the
   * backend fuses (no gradient to follow, no mask), the plain one otherwise: the same bits as the path it took.
   */
  @Test
  void autoTakesAFusedForwardFromFewerScores() {
    Generator g = new Generator(23);
    Tensor q = Tensor.randn(g, 2, 600, 16);
    Tensor k = Tensor.randn(g, 2, 600, 16);
    Tensor v = Tensor.randn(g, 2, 600, 32);
    assertTrue(600L * 600 > Kernel.FUSED_ABOVE && 600L * 600 <= Kernel.AUTO.tiledAbove());
    boolean fused = Device.CPU.backend().attention().fusedForward(new dev.ember.backend.AttentionKernels.Problem(2,
        600, 600, 16, 32, 0.25, false, -1, 64, 128, null, 0, 0), DType.F32);
    assertEquals(Device.CPU.backend().name().equals("cpu-vector"), fused, "the Vector API kernels fuse it");
    Tensor plain = Attention.scaledDotProductAttention(q, k, v, null, 0, false, null, -1, null, Kernel.plain());
    Tensor tiled = Attention.scaledDotProductAttention(q, k, v, null, 0, false, null, -1, null,
        Kernel.tiled(Kernel.AUTO.blockQ(), Kernel.AUTO.blockK()));
    Tensor auto;
    try (Grad off = Grad.off()) {
      auto = Attention.scaledDotProductAttention(q, k, v);
    }
    assertClose(fused ? tiled : plain, auto, 0, 0, "no gradient: " + (fused ? "tiled" : "plain"));
    assertClose(plain, tiled, 1e-5, 1e-4, "paths agree");
    Tensor withGrad = Attention.scaledDotProductAttention(q.detach().requiresGrad(true), k, v);
    assertClose(plain, withGrad.detach(), 0, 0, "a gradient to follow: plain");
    assertClose(plain, Attention.scaledDotProductAttention(q, k, v), 0, 0, "recording on: plain");
  }

  /**
   * With no gradient to follow the plain path runs per batch element on the backend ({@code plainForward}): the
   * bits of the composed ops it replaces (which run when a gradient follows), with and without the causal and window
   * band (rows past the window see no key: NaN on both), for a key given as a strided view, on one and two threads.
   */
  @Test
  void plainForwardWithNothingToFollowHasTheBitsOfTheComposedOps() {
    Generator g = new Generator(31);
    Tensor q = Tensor.randn(g, 2, 3, 90, 16);
    Tensor k = Tensor.randn(g, 2, 3, 16, 70).transpose(-1, -2);
    Tensor v = Tensor.randn(g, 2, 3, 70, 24);
    assertTrue(Device.CPU.backend().attention().runsPlainForward(new dev.ember.backend.AttentionKernels.Problem(6,
        90, 70, 16, 24, 0.25, false, -1, 64, 64, null, 0, 0), DType.F32), "the CPU kernels run it");
    int before = Parallel.threads();
    try {
      for (int t = 1; t <= 2; t++) {
        Parallel.setThreads(t);
        for (boolean causal : new boolean[] {false, true}) {
          for (int window : new int[] {-1, 5}) {
            Tensor composed = Attention.scaledDotProductAttention(q.detach().requiresGrad(true), k, v, null, 0,
                causal, null, window, null, Kernel.plain()).detach();
            Tensor perElement;
            try (Grad off = Grad.off()) {
              perElement = Attention.scaledDotProductAttention(q, k, v, null, 0, causal, null, window, null,
                  Kernel.plain());
            }
            String what = t + " threads, causal " + causal + ", window " + window;
            org.junit.jupiter.api.Assertions.assertArrayEquals(composed.toFloatArray(), perElement.toFloatArray(),
                what);
            assertEquals(window >= 0, Float.isNaN(perElement.toFloatArray()[(2 * 3 * 90 - 1) * 24]),
                what + ": the last query sees no key");
          }
        }
      }
    } finally {
      Parallel.setThreads(before);
    }
  }

  /**
   * A checkpoint's first run records nothing, but backward repeats it with recording on: both must take the same
   * path (the plain one here, where a forward with nothing to follow would be fused), so checkpointing keeps its
   * promise of the same bits as without it.
   */
  @Test
  void checkpointedAttentionHasTheBitsOfTheUncheckpointedOne() {
    Generator g = new Generator(29);
    Tensor x = Tensor.randn(g, 2, 400, 16);
    Tensor w = Tensor.randn(g, 16, 16).requiresGrad(true);
    java.util.function.UnaryOperator<Tensor> block = t -> {
      Tensor h = t.matmul(w);
      return Attention.scaledDotProductAttention(h, h, h);
    };
    Tensor plainOut = block.apply(x);
    plainOut.square().sum().backward();
    Tensor plainGrad = w.grad().clone();
    w.setGrad(null);
    Tensor ckOut = Checkpointing.apply(block, x);
    ckOut.square().sum().backward();
    assertClose(plainOut.detach(), ckOut.detach(), 0, 0, "output");
    assertClose(plainGrad, w.grad(), 0, 0, "weight gradient");
  }

  @Test
  void slidingWindowEqualsAnExplicitBandMask() {
    List<Tensor> in = qkv(14, new int[] {2}, 8, 8, 3, 3);
    int w = 2;
    boolean[] band = new boolean[64];
    boolean[] causalBand = new boolean[64];
    for (int i = 0; i < 8; i++) {
      for (int j = 0; j < 8; j++) {
        band[i * 8 + j] = Math.abs(i - j) <= w;
        causalBand[i * 8 + j] = j <= i && j >= i - w;
      }
    }
    Tensor ref = sdpa(in, Tensor.of(band, 8, 8), 0, false, -1, Kernel.plain());
    Tensor refCausal = sdpa(in, Tensor.of(causalBand, 8, 8), 0, false, -1, Kernel.plain());
    for (Kernel kernel : new Kernel[] {Kernel.plain(), TINY, Kernel.tiled(3, 2)}) {
      assertClose(ref, sdpa(in, null, 0, false, w, kernel), 1e-12, 1e-12, "window " + kernel);
      assertClose(refCausal, sdpa(in, null, 0, true, w, kernel), 1e-12, 1e-12, "causal window " + kernel);
    }
  }

  @Test
  void slidingWindowRunsOnASequenceWhoseScoreMatrixCouldNotExist() {
    // L * S = 3.6e9 scores: more than any Java array holds, so this only runs if the tiled path
    // never materializes them, and only runs fast if it skips the key blocks outside the window
    int n = 60_000;
    int w = 5;
    Generator g = new Generator(17);
    Tensor q = Tensor.randn(g, DType.F64, 1, n, 4).requiresGrad(true);
    Tensor k = Tensor.randn(g, DType.F64, 1, n, 4);
    Tensor v = Tensor.randn(g, DType.F64, 1, n, 3);
    Tensor out = Attention.scaledDotProductAttention(q, k, v, null, 0, true, null, w, null, Kernel.AUTO);
    for (int i : new int[] {0, 3, 31_337, n - 1}) { // double oracle: softmax over keys max(0, i - w)..i
      double[] s = new double[w + 1];
      double max = Double.NEGATIVE_INFINITY;
      for (int j = Math.max(0, i - w); j <= i; j++) {
        double d = 0;
        for (int c = 0; c < 4; c++) d += q.getDouble(0, i, c) * k.getDouble(0, j, c);
        s[i - j] = d / 2; // scale 1 / sqrt(4)
        max = Math.max(max, s[i - j]);
      }
      double z = 0;
      double[] o = new double[3];
      for (int j = Math.max(0, i - w); j <= i; j++) {
        double e = Math.exp(s[i - j] - max);
        z += e;
        for (int c = 0; c < 3; c++) o[c] += e * v.getDouble(0, j, c);
      }
      for (int c = 0; c < 3; c++) assertEquals(o[c] / z, out.getDouble(0, i, c), 1e-12, "row " + i);
    }
    out.sum().backward();
    assertEquals(n * 4L, q.grad().numel());
  }

  /** The tiled backward's float32 loops (no dropout, no mask gradient) against the plain path's autograd. */
  @Test
  void pathsAgreeOnGradientsInFloat32() {
    for (boolean causal : new boolean[] {false, true}) {
      Tensor[] plain = sdpaGrads(causal, Kernel.plain());
      Tensor[] tiled = sdpaGrads(causal, Kernel.tiled(32, 48));
      String[] names = {"out", "dq", "dk", "dv"};
      for (int i = 0; i < 4; i++) assertClose(plain[i], tiled[i], 1e-5, 1e-4, names[i] + " causal " + causal);
    }
  }

  private static Tensor[] sdpaGrads(boolean causal, Kernel kernel) {
    Generator g = new Generator(21);
    Tensor q = Tensor.randn(g, 2, 150, 16).requiresGrad(true);
    Tensor k = Tensor.randn(g, 2, 130, 16).requiresGrad(true);
    Tensor v = Tensor.randn(g, 2, 130, 8).requiresGrad(true);
    Tensor out = Attention.scaledDotProductAttention(q, k, v, null, 0, causal, null, Attention.NO_WINDOW, null, kernel);
    out.backward(Tensor.randn(new Generator(22), 2, 150, 8));
    return new Tensor[] {out.detach(), q.grad(), k.grad(), v.grad()};
  }

  @Test
  void tiledPathIsBitwiseTheSameOnOneAndTwoThreads() {
    int before = Parallel.threads();
    float[][] results = new float[2][];
    try {
      for (int t = 1; t <= 2; t++) {
        Parallel.setThreads(t);
        Generator g = new Generator(18);
        Tensor q = Tensor.randn(g, 3, 130, 8).requiresGrad(true);
        Tensor k = Tensor.randn(g, 3, 150, 8).requiresGrad(true);
        Tensor v = Tensor.randn(g, 3, 150, 5).requiresGrad(true);
        Tensor out = Attention.scaledDotProductAttention(q, k, v, null, 0.1, true, null, Attention.NO_WINDOW,
            new Generator(4), Kernel.tiled(16, 32));
        out.backward(Tensor.randn(new Generator(5), 3, 130, 5));
        float[] o = out.toFloatArray();
        float[] gq = q.grad().toFloatArray();
        float[] gk = k.grad().toFloatArray();
        float[] all = java.util.Arrays.copyOf(o, o.length + gq.length + gk.length);
        System.arraycopy(gq, 0, all, o.length, gq.length);
        System.arraycopy(gk, 0, all, o.length + gq.length, gk.length);
        results[t - 1] = all;
      }
    } finally {
      Parallel.setThreads(before);
    }
    org.junit.jupiter.api.Assertions.assertArrayEquals(results[0], results[1]);
  }

  @Test
  void dropoutIsTheSameOnBothPathsAndDeterministic() {
    List<Tensor> in = qkv(15, new int[] {2, 2}, 6, 7, 4, 3);
    Tensor a = sdpa(in, null, 0.4, false, -1, Kernel.plain());
    Tensor b = sdpa(in, null, 0.4, false, -1, TINY);
    Tensor none = sdpa(in, null, 0, false, -1, Kernel.plain());
    assertClose(a, b, 1e-12, 1e-12, "dropout plain vs tiled");
    assertClose(a, sdpa(in, null, 0.4, false, -1, Kernel.plain()), 0, 0, "same generator, same result");
    assertTrue(a.sub(none).abs().max().item() > 1e-3, "dropout changed the output");
    Tensor all = sdpa(in, null, 1.0, false, -1, TINY);
    assertEquals(0, all.abs().max().item(), 0, "p = 1 drops every weight");
  }

  @Test
  void aQueryThatSeesNoKeyGivesNaNOnBothPaths() {
    List<Tensor> in = qkv(16, new int[] {1}, 3, 4, 2, 2);
    Tensor mask = Tensor.of(new boolean[] {true, false, false, false, false, false, false, false, true, true, true,
        true}, 3, 4);
    for (Kernel kernel : BOTH) {
      Tensor out = sdpa(in, mask, 0, false, -1, kernel);
      assertTrue(Double.isNaN(out.getDouble(0, 1, 0)), "row 1 is fully masked " + kernel);
      assertTrue(!Double.isNaN(out.getDouble(0, 0, 0)) && !Double.isNaN(out.getDouble(0, 2, 1)));
    }
  }

  private static void assertError(String expected, Supplier<Tensor> call) {
    TensorArgumentException e = assertThrows(TensorArgumentException.class, call::get);
    assertEquals(expected, e.getMessage());
    assertEquals("scaled_dot_product_attention", e.op());
  }

  @Test
  void badInputsNameTheProblemAndShapes() {
    Tensor q = Tensor.zeros(2, 3, 4);
    Tensor k = Tensor.zeros(2, 6, 4);
    Tensor v = Tensor.zeros(2, 6, 5);
    assertError("scaled_dot_product_attention: query and key embedding dims differ (4 vs 3): query=[2, 3, 4],"
        + " key=[2, 6, 3], value=[2, 6, 5]", () -> Attention.scaledDotProductAttention(q, Tensor.zeros(2, 6, 3), v));
    assertError("scaled_dot_product_attention: key and value sequence lengths differ (6 vs 7): query=[2, 3, 4],"
        + " key=[2, 6, 4], value=[2, 7, 5]", () -> Attention.scaledDotProductAttention(q, k, Tensor.zeros(2, 7, 5)));
    assertError("scaled_dot_product_attention: query, key and value must have the same leading (batch) dims:"
        + " query=[2, 3, 4], key=[1, 6, 4], value=[2, 6, 5]",
        () -> Attention.scaledDotProductAttention(q, Tensor.zeros(1, 6, 4), v));
    assertError("scaled_dot_product_attention: attn_mask does not broadcast to [..., L, S] = [2, 3, 6]:"
        + " attn_mask=[3, 5], query=[2, 3, 4]",
        () -> Attention.scaledDotProductAttention(q, k, v, Tensor.zeros(3, 5), 0, false, null, null));
    assertError("scaled_dot_product_attention: dropout_p must be in [0, 1] (got 1.2): query=[2, 3, 4]",
        () -> Attention.scaledDotProductAttention(q, k, v, null, 1.2, false, null, null));
    assertError("scaled_dot_product_attention: attn_mask must be bool or the query's dtype float32, got int64:"
        + " attn_mask=[3, 6], query=[2, 3, 4]",
        () -> Attention.scaledDotProductAttention(q, k, v, Tensor.zeros(DType.I64, 3, 6), 0, false, null, null));
  }
}
