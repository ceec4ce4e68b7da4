package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** MultiheadAttention against torch.nn.MultiheadAttention (mha/make_mha_fixtures.py) and gradchecks. */
class MultiheadAttentionTest {
  private static final Map<String, Tensor> FIX = Fixtures.read(MultiheadAttentionTest.class, "mha/mha_fixtures.txt");

  private static void assertClose(String what, Tensor want, Tensor got) {
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    double[] w = want.toDoubleArray(), g = got.toDoubleArray();
    for (int i = 0; i < w.length; i++) assertEquals(w[i], g[i], 1e-12 + 1e-10 * Math.abs(w[i]), what + "[" + i + "]");
  }

  private static void check(String name, MultiheadAttention m) {
    LinkedHashMap<String, Tensor> all = Fixtures.under(FIX, name);
    LinkedHashMap<String, Tensor> sd = new LinkedHashMap<>();
    for (String k : List.of("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias")) sd.put(k, all.get(k));
    m.to(DType.F64);
    m.loadStateDict(sd);
    Tensor kpm = all.containsKey("key_padding_mask_bool") ? all.get("key_padding_mask_bool").ne(0) : null;
    Tensor am = all.containsKey("attn_mask_bool") ? all.get("attn_mask_bool").ne(0) : all.get("attn_mask");
    MultiheadAttention.Output o = m.forward(all.get("query"), all.get("key"), all.get("value"), kpm, am, true, false);
    assertClose(name + " output", all.get("output"), o.output());
    assertClose(name + " weights", all.get("weights"), o.weights());
  }

  @Test
  void matchesPyTorch() {
    Generator g = new Generator(1);
    check("self", new MultiheadAttention(8, 2));
    check("cross_masks", new MultiheadAttention(8, 2));
    check("batch_first_float_mask", new MultiheadAttention(8, 4, 0, true, true, g));
    check("unbatched", new MultiheadAttention(8, 2));
  }

  /** A batch-first float64 attention (E = 4, 2 heads) whose parameters, zero biases included, are random. */
  private static MultiheadAttention perturbedF64(Generator g) {
    MultiheadAttention m = new MultiheadAttention(4, 2, 0, true, true, g);
    m.to(DType.F64);
    // biases start at zero: perturb them so their gradients are checked at a generic point
    for (Tensor p : m.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.5, g);
    return m;
  }

  @Test
  void batchFirstRunsInItsOwnLayout() {
    Generator g = new Generator(5);
    MultiheadAttention m = perturbedF64(g);
    Tensor x = Tensor.randn(g, DType.F64, 2, 3, 4).requiresGrad(true);
    Tensor kv = Tensor.randn(g, DType.F64, 2, 5, 4).requiresGrad(true);
    List<Tensor> inputs = new java.util.ArrayList<>(List.of(x, kv));
    inputs.addAll(m.parameters());
    GradCheck.check("MultiheadAttention batch first", in -> {
      Tensor self = m.forward(in.get(0), in.get(0), in.get(0), null, null, false, true).output();
      Tensor cross = m.forward(in.get(0), in.get(1), in.get(1), null, null, true, false).output();
      return self.sum().add(cross.mul(cross).sum());
    }, inputs);
    // the same values as the [L, N, E] path (checked against PyTorch) on the transposed input
    MultiheadAttention seqFirst = new MultiheadAttention(4, 2, 0, true, false, g);
    seqFirst.to(DType.F64);
    seqFirst.loadStateDict(m.stateDict());
    Tensor kpm = Tensor.of(new boolean[] {false, true, false, false, false, false, false, false, true, false}, 2, 5);
    for (boolean weights : new boolean[] {true, false}) {
      MultiheadAttention.Output a = m.forward(x, kv, kv, kpm, null, weights, false);
      MultiheadAttention.Output b = seqFirst.forward(x.transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), kpm, null,
          weights, false);
      assertArrayEquals(new int[] {2, 3, 4}, a.output().shape());
      assertClose("batch first vs [L, N, E], weights " + weights, b.output().transpose(0, 1), a.output());
      if (weights) assertClose("attention weights", b.weights(), a.weights());
    }
  }

  @Test
  void gradcheckWithMasksAndCausal() {
    Generator g = new Generator(3);
    MultiheadAttention m = perturbedF64(g);
    Tensor q = Tensor.randn(g, DType.F64, 2, 3, 4).requiresGrad(true);
    Tensor kv = Tensor.randn(g, DType.F64, 2, 3, 4).requiresGrad(true);
    Tensor kpm = Tensor.of(new boolean[] {false, false, true, false, false, false}, 2, 3);
    List<Tensor> inputs = new java.util.ArrayList<>(List.of(q, kv));
    inputs.addAll(m.parameters());
    GradCheck.check("MultiheadAttention", in -> m.forward(in.get(0), in.get(1), in.get(1), kpm, null, false, true).output(), inputs);
  }

  @Test
  void namesShapesErrors() {
    MultiheadAttention m = new MultiheadAttention(8, 2);
    assertEquals(List.of("in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"), List.copyOf(m.stateDict().keySet()));
    assertEquals(0.0, m.param("in_proj_bias").abs().sum().item());
    Tensor x = Tensor.randn(new Generator(1), 5, 2, 8);
    assertArrayEquals(new int[] {5, 2, 8}, m.forward(x).shape());
    MultiheadAttention.Output o = m.forward(x, x, x, null, null, false, false);
    assertNull(o.weights());
    // causal: the first query attends to the first key only
    Tensor w = m.forward(x, x, x, null, null, true, true).weights();
    assertEquals(1.0, w.getDouble(0, 0, 0), 1e-6);
    assertEquals(0.0, w.getDouble(0, 0, 1));
    assertTrue(w.getDouble(1, 4, 4) > 0);
    assertEquals("MultiheadAttention: embed_dim (10) must be a positive multiple of num_heads (4)",
        assertThrows(IllegalArgumentException.class, () -> new MultiheadAttention(10, 4)).getMessage());
    assertEquals("MultiheadAttention: attn_mask must be [L, S] = [5, 5] or [N*num_heads, L, S] = [4, 5, 5]: attn_mask=[5, 4]",
        assertThrows(IllegalArgumentException.class,
            () -> m.forward(x, x, x, null, Tensor.zeros(DType.BOOL, 5, 4), false, false)).getMessage());
    assertEquals("MultiheadAttention: query, key and value must be [L, N, E], [S, N, E], [S, N, E] with E = embed_dim (8): "
        + "query=[5, 2, 8], key=[5, 2, 7], value=[5, 2, 8]",
        assertThrows(IllegalArgumentException.class,
            () -> m.forward(x, Tensor.zeros(5, 2, 7), x, null, null, false, false)).getMessage());
  }

  /** Output, input gradient and every parameter's gradient of a self-attention call and backward. */
  private static List<Tensor> selfAttentionResults(MultiheadAttention m, Tensor x0, Tensor mask, Tensor kpm, boolean causal) {
    for (Tensor p : m.parameters()) p.setGrad(null);
    Tensor x = x0.detach().requiresGrad(true);
    Tensor out = m.forward(x, x, x, kpm, mask, false, causal).output();
    out.mul(out).sum().backward();
    List<Tensor> r = new java.util.ArrayList<>(List.of(out.detach(), x.grad()));
    for (Tensor p : m.parameters()) r.add(p.grad());
    return r;
  }

  @Test
  void attentionCoreMatchesThePlainPathBitwise() {
    Generator g = new Generator(11);
    double inf = Double.NEGATIVE_INFINITY;
    Tensor floatMask = Tensor.of(new double[] {0, inf, inf, 0.5, 0, inf, -1, 0.25, 0}, 3, 3);
    Tensor kpm = Tensor.of(new boolean[] {false, false, true, false, false, false}, 2, 3);
    for (boolean batchFirst : new boolean[] {true, false}) {
      MultiheadAttention packed = new MultiheadAttention(8, 2, 0, true, batchFirst, g);
      packed.to(DType.F64);
      for (Tensor p : packed.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.5, g);
      MultiheadAttention plain = new MultiheadAttention(8, 2, 0, true, batchFirst, g);
      plain.to(DType.F64);
      plain.loadStateDict(packed.stateDict());
      plain.attentionKernel(dev.ember.nn.functional.Attention.Kernel.plain());
      Tensor x = Tensor.randn(g, DType.F64, 2, 3, 8);
      Tensor w = packed.param("in_proj_weight");
      assertTrue(packed.coreApplies(x, w, floatMask, kpm, false, 3, 3));
      assertTrue(!plain.coreApplies(x, w, floatMask, kpm, false, 3, 3), "plain kernel asked for");
      assertTrue(!packed.coreApplies(x, w, null, null, true, 3, 3), "weights wanted");
      try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
        assertTrue(!packed.coreApplies(x, w, null, null, false, 3, 3), "no gradient recorded");
      }
      Object[][] cases = {{null, null, false}, {floatMask, kpm, false}, {null, kpm, true}, {floatMask, null, true}};
      for (Object[] c : cases) {
        Tensor mask = (Tensor) c[0];
        Tensor pad = (Tensor) c[1];
        boolean causal = (Boolean) c[2];
        Tensor in = batchFirst ? x : x.transpose(0, 1).contiguous();
        List<Tensor> a = selfAttentionResults(packed, in, mask, pad, causal);
        List<Tensor> b = selfAttentionResults(plain, in, mask, pad, causal);
        for (int i = 0; i < a.size(); i++) {
          assertArrayEquals(b.get(i).toDoubleArray(), a.get(i).toDoubleArray(), "batchFirst " + batchFirst + " mask "
              + (mask != null) + " kpm " + (pad != null) + " causal " + causal + " result " + i);
        }
      }
      // unbatched [L, E]
      Tensor u = Tensor.randn(g, DType.F64, 3, 8);
      List<Tensor> a = selfAttentionResults(packed, u, floatMask, null, false);
      List<Tensor> b = selfAttentionResults(plain, u, floatMask, null, false);
      for (int i = 0; i < a.size(); i++) {
        assertArrayEquals(b.get(i).toDoubleArray(), a.get(i).toDoubleArray(), "unbatched result " + i);
      }
    }
  }

  /**
   * The attention core in float32 at sizes where GEMM takes its vector kernels (its packed paths, edge tiles): the
   * output and every gradient have the plain path's bits, with a causal [L, S] mask, a per-head [N*H, L, S] mask
   * and a key padding mask, batch first and sequence first.
   */
  @Test
  void attentionCoreMatchesThePlainPathBitwiseInFloat32() {
    Generator g = new Generator(19);
    int n = 3, h = 4, l = 37, e = 64;
    Tensor causal = dev.ember.nn.Transformer.generateSquareSubsequentMask(l);
    Tensor perHead = Tensor.randn(g, n * h, l, l);
    boolean[] pad = new boolean[n * l];
    for (int i = 0; i < pad.length; i++) pad[i] = i % l >= l - 3 - i / l;
    Tensor kpm = Tensor.of(pad, n, l);
    for (boolean batchFirst : new boolean[] {true, false}) {
      MultiheadAttention core = new MultiheadAttention(e, h, 0, true, batchFirst, g);
      for (Tensor p : core.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.3, g);
      MultiheadAttention plain = new MultiheadAttention(e, h, 0, true, batchFirst, g);
      plain.loadStateDict(core.stateDict());
      plain.attentionKernel(dev.ember.nn.functional.Attention.Kernel.plain());
      Tensor x = Tensor.randn(g, batchFirst ? new int[] {n, l, e} : new int[] {l, n, e});
      for (Tensor[] masks : new Tensor[][] {{causal, null}, {perHead, kpm}}) {
        List<Tensor> a = selfAttentionResults(core, x, masks[0], masks[1], false);
        List<Tensor> b = selfAttentionResults(plain, x, masks[0], masks[1], false);
        for (int i = 0; i < a.size(); i++) {
          assertArrayEquals(b.get(i).toFloatArray(), a.get(i).toFloatArray(), "batchFirst " + batchFirst + " per-head "
              + (masks[1] != null) + " result " + i);
        }
      }
    }
  }

  @Test
  void gradcheckAttentionCoreSeqFirstCrossWithMasks() {
    Generator g = new Generator(13);
    MultiheadAttention m = new MultiheadAttention(4, 2, 0, true, false, g);
    m.to(DType.F64);
    for (Tensor p : m.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.5, g);
    Tensor x = Tensor.randn(g, DType.F64, 3, 2, 4).requiresGrad(true); // query [L, N, E]
    Tensor kv = Tensor.randn(g, DType.F64, 5, 2, 4).requiresGrad(true); // key and value [S, N, E]
    Tensor mask = Tensor.randn(g, DType.F64, 3, 5);
    Tensor kpm = Tensor.of(new boolean[] {false, true, false, false, false, false, false, false, true, false}, 2, 5);
    assertTrue(m.coreApplies(x, m.param("in_proj_weight"), mask, kpm, false, 3, 5));
    List<Tensor> inputs = new java.util.ArrayList<>(List.of(x, kv));
    inputs.addAll(m.parameters());
    GradCheck.check("MultiheadAttention attention core", in -> {
      Tensor self = m.forward(in.get(0), in.get(0), in.get(0), null, mask.narrow(1, 0, 3), false, true).output();
      Tensor out = m.forward(in.get(0), in.get(1), in.get(1), kpm, mask, false, false).output();
      return out.mul(out).sum().add(self.sum());
    }, inputs);
  }

  @Test
  void attentionCoreIsBitwiseTheSameOnOneAndTwoThreads() {
    int before = dev.ember.backend.cpu.Parallel.threads();
    float[][] results = new float[2][];
    try {
      for (int t = 1; t <= 2; t++) {
        dev.ember.backend.cpu.Parallel.setThreads(t);
        Generator g = new Generator(17);
        MultiheadAttention m = new MultiheadAttention(64, 4, 0, true, true, g);
        Tensor x = Tensor.randn(g, 4, 96, 64);
        Tensor mask = dev.ember.nn.Transformer.generateSquareSubsequentMask(96);
        List<Tensor> r = selfAttentionResults(m, x, mask, null, false);
        int total = 0;
        for (Tensor z : r) total += (int) z.numel();
        float[] all = new float[total];
        int off = 0;
        for (Tensor z : r) {
          float[] f = z.toFloatArray();
          System.arraycopy(f, 0, all, off, f.length);
          off += f.length;
        }
        results[t - 1] = all;
      }
    } finally {
      dev.ember.backend.cpu.Parallel.setThreads(before);
    }
    assertArrayEquals(results[0], results[1]);
  }

  /**
   * Self-attention's packed in-projection (one product with the [3E, E] weight) against the three products of its
   * slices: the same forward bits (each element the same sum over E), with and without a gradient recorded, on the
   * attention core's path and on the plain path; gradients equal to rounding (the input's is one K = 3E sum).
   */
  @Test
  void packedInProjectionKeepsTheForwardBits() {
    Generator g = new Generator(19);
    // {E, heads, N, L, batchFirst}: 3 rows reach the GEMM's few-rows path, the others its packed path
    int[][] shapes = {{64, 4, 4, 24, 1}, {16, 2, 3, 5, 0}, {32, 4, 1, 3, 1}};
    for (int[] sh : shapes) {
      boolean batchFirst = sh[4] == 1;
      MultiheadAttention packed = new MultiheadAttention(sh[0], sh[1], 0, true, batchFirst, g);
      for (Tensor p : packed.parameters()) dev.ember.nn.init.Init.normal_(p, 0, 0.5, g);
      MultiheadAttention three = new MultiheadAttention(sh[0], sh[1], 0, true, batchFirst, g).packedInProjection(false);
      three.loadStateDict(packed.stateDict());
      assertTrue(packed.packedInProjection() && !three.packedInProjection());
      Tensor x = batchFirst ? Tensor.randn(g, sh[2], sh[3], sh[0]) : Tensor.randn(g, sh[3], sh[2], sh[0]);
      Tensor w = packed.param("in_proj_weight");
      assertTrue(packed.packedApplies(x, x, x, w, null, null, false));
      assertTrue(!three.packedApplies(x, x, x, w, null, null, false), "switched off");
      assertTrue(!packed.packedApplies(x, x.clone(), x, w, null, null, false), "cross-attention");
      assertTrue(!packed.packedApplies(x, x, x, w, null, null, true), "weights wanted with a gradient");
      Tensor mask = dev.ember.nn.Transformer.generateSquareSubsequentMask(sh[3]);
      for (dev.ember.nn.functional.Attention.Kernel k : List.of(dev.ember.nn.functional.Attention.Kernel.AUTO,
          dev.ember.nn.functional.Attention.Kernel.plain())) {
        packed.attentionKernel(k);
        three.attentionKernel(k);
        List<Tensor> a = selfAttentionResults(packed, x, mask, null, false);
        List<Tensor> b = selfAttentionResults(three, x, mask, null, false);
        String what = java.util.Arrays.toString(sh) + " " + k.path();
        assertArrayEquals(b.get(0).toFloatArray(), a.get(0).toFloatArray(), what + " output");
        for (int i = 1; i < a.size(); i++) {
          float[] fa = a.get(i).toFloatArray();
          float[] fb = b.get(i).toFloatArray();
          double scale = 0; // float32 sums that cancel: a tolerance relative to the gradient's largest element
          for (float f : fb) scale = Math.max(scale, Math.abs(f));
          for (int j = 0; j < fa.length; j++) {
            assertEquals(fb[j], fa[j], 1e-5 * (1 + scale), what + " gradient " + i + "[" + j + "]");
          }
        }
        try (dev.ember.autograd.Grad off = dev.ember.autograd.Grad.off()) {
          assertTrue(packed.packedApplies(x, x, x, w, null, null, true), "no gradient: packed whatever is asked");
          MultiheadAttention.Output oa = packed.forward(x, x, x, null, mask, true, false);
          MultiheadAttention.Output ob = three.forward(x, x, x, null, mask, true, false);
          assertArrayEquals(ob.output().toFloatArray(), oa.output().toFloatArray(), what + " output without grad");
          assertArrayEquals(ob.weights().toFloatArray(), oa.weights().toFloatArray(), what + " weights without grad");
        }
      }
    }
  }
}
