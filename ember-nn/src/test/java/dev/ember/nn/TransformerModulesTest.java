package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.autograd.Grad;
import dev.ember.nn.functional.Attention;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.testing.GradCheck;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/**
 * Transformer layers and MultiheadAttention's scaled_dot_product_attention routing: reprs, state
 * dict layout, the tiled path against the explicit one, errors and float64 gradchecks. (Values
 * against PyTorch are in {@link ModuleFixtureTest}.)
 */
class TransformerModulesTest {
  private static final String MHA_REPR = "MultiheadAttention(\n"
      + "    (out_proj): NonDynamicallyQuantizableLinear(in_features=8, out_features=8, bias=True)\n"
      + "  )";

  private static Tensor randn(Generator g, int... shape) {
    return Tensor.randn(g, DType.F64, shape);
  }

  private static <M extends Module> M f64Perturbed(M m, Generator g) {
    m.to(DType.F64);
    try (Grad ignored = Grad.off()) {
      for (Tensor p : m.parameters()) p.add_(randn(g, p.shape()).mul(0.3));
    }
    return m;
  }

  private static void assertClose(String what, Tensor want, Tensor got, double tol) {
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    double[] w = want.toDoubleArray();
    double[] o = got.toDoubleArray();
    for (int i = 0; i < w.length; i++) assertEquals(w[i], o[i], tol * (1 + Math.abs(w[i])), what + "[" + i + "]");
  }

  @Test
  void reprsMatchPyTorch() {
    // print(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True, norm_first=True)) in PyTorch 1.13
    assertEquals("TransformerEncoderLayer(\n"
        + "  (self_attn): " + MHA_REPR + "\n"
        + "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        + "  (dropout): Dropout(p=0.1, inplace=False)\n"
        + "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        + "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        + "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        + "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        + "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        + ")", new TransformerEncoderLayer(8, 2, 16, 0.1, "gelu", 1e-5, true, true, true, new Generator(1)).toString());
    assertEquals("TransformerDecoderLayer(\n"
        + "  (self_attn): " + MHA_REPR + "\n"
        + "  (multihead_attn): " + MHA_REPR + "\n"
        + "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
        + "  (dropout): Dropout(p=0.1, inplace=False)\n"
        + "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
        + "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        + "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        + "  (norm3): LayerNorm((8,), eps=1e-05, elementwise_affine=True)\n"
        + "  (dropout1): Dropout(p=0.1, inplace=False)\n"
        + "  (dropout2): Dropout(p=0.1, inplace=False)\n"
        + "  (dropout3): Dropout(p=0.1, inplace=False)\n"
        + ")", new TransformerDecoderLayer(8, 2, 16, 0.1, "relu", 1e-5, false, false, true, new Generator(1)).toString());
  }

  @Test
  void stateDictKeysInPyTorchsOrder() {
    // list(m.state_dict().keys()) in PyTorch 1.13
    assertEquals(List.of("self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight",
        "norm1.bias", "norm2.weight", "norm2.bias"), List.copyOf(new TransformerEncoderLayer(8, 2).stateDict().keySet()));
    assertEquals(List.of("self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
        "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
        "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight", "linear1.bias",
        "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "norm3.weight",
        "norm3.bias"), List.copyOf(new TransformerDecoderLayer(8, 2).stateDict().keySet()));
    List<String> stack = List.copyOf(new TransformerEncoder(new TransformerEncoderLayer(8, 2, 16, 0.1, "relu", 1e-5,
        false, false, true, new Generator(1)), 2, new LayerNorm(8)).stateDict().keySet());
    assertEquals(26, stack.size());
    assertEquals(List.of("layers.0.self_attn.in_proj_weight", "layers.0.self_attn.in_proj_bias"), stack.subList(0, 2));
    assertEquals(List.of("layers.1.norm2.weight", "layers.1.norm2.bias", "norm.weight", "norm.bias"),
        stack.subList(22, 26));
    // bias=False (PyTorch 2.1+): no biases anywhere, LayerNorms included
    assertEquals(List.of("self_attn.in_proj_weight", "self_attn.out_proj.weight", "linear1.weight", "linear2.weight",
        "norm1.weight", "norm2.weight"), List.copyOf(new TransformerEncoderLayer(8, 2, 16, 0.1, "relu", 1e-5, false,
            false, false, new Generator(1)).stateDict().keySet()));
  }

  @Test
  void stackCopiesStartEqualAndAreIndependent() {
    TransformerEncoderLayer proto = new TransformerEncoderLayer(8, 2, 16, 0.0, "relu", 1e-5, false, false, true,
        new Generator(3));
    TransformerEncoder enc = new TransformerEncoder(proto, 2);
    Tensor w0 = enc.layer(0).selfAttn().param("in_proj_weight");
    Tensor w1 = enc.layer(1).selfAttn().param("in_proj_weight");
    assertArrayEquals(proto.selfAttn().param("in_proj_weight").toDoubleArray(), w1.toDoubleArray());
    assertNotSame(w0.storage(), w1.storage());
    try (Grad ignored = Grad.off()) {
      w0.add_(1);
    }
    assertArrayEquals(proto.selfAttn().param("in_proj_weight").toDoubleArray(), w1.toDoubleArray());
    assertEquals(2, enc.numLayers());
  }

  @Test
  void causalMaskHelper() {
    Tensor m = Transformer.generateSquareSubsequentMask(3);
    assertEquals(DType.F32, m.dtype());
    double ninf = Double.NEGATIVE_INFINITY;
    assertArrayEquals(new double[] {0, ninf, ninf, 0, 0, ninf, 0, 0, 0}, m.toDoubleArray());
    assertEquals(DType.F64, Transformer.generateSquareSubsequentMask(2, DType.F64).dtype());
    // the mask and is_causal give the same layer output
    Generator g = new Generator(4);
    TransformerEncoderLayer l = f64Perturbed(new TransformerEncoderLayer(8, 2, 16, 0.0, "gelu", 1e-5, false, true, true,
        g), g);
    Tensor x = randn(g, 5, 2, 8);
    assertClose("causal", l.forward(x, Transformer.generateSquareSubsequentMask(5, DType.F64), null, false),
        l.forward(x, null, null, true), 1e-12);
  }

  @Test
  void unbatchedInputsMatchABatchOfOne() {
    Generator g = new Generator(5);
    TransformerDecoderLayer l = f64Perturbed(new TransformerDecoderLayer(8, 2, 16, 0.0, "relu", 1e-5, true, false, true,
        g), g);
    Tensor tgt = randn(g, 4, 8);
    Tensor mem = randn(g, 6, 8);
    Tensor kpm = Tensor.of(new boolean[] {false, false, true, false, false, true}, 6);
    Tensor un = l.forward(tgt, mem, null, null, null, kpm, true, false);
    Tensor batched = l.forward(tgt.unsqueeze(0), mem.unsqueeze(0), null, null, null, kpm.unsqueeze(0), true, false);
    assertClose("unbatched", batched.squeeze(0), un, 1e-12);
  }

  @Test
  void errors() {
    assertEquals("TransformerEncoderLayer: activation should be relu/gelu, not tanh",
        assertThrows(IllegalArgumentException.class, () -> new TransformerEncoderLayer(8, 2, 16, 0.1, "tanh", 1e-5, false,
            false, true, new Generator(1))).getMessage());
    TransformerEncoderLayer l = new TransformerEncoderLayer(8, 2, 16, 0.1, "relu", 1e-5, false, false, true,
        new Generator(1));
    assertEquals("TransformerEncoderLayer: src must be [S, N, E] or unbatched [S, E] with E = d_model (8): src=[5, 3, 7]",
        assertThrows(IllegalArgumentException.class, () -> l.forward(Tensor.zeros(5, 3, 7))).getMessage());
    TransformerDecoderLayer d = new TransformerDecoderLayer(8, 2, 16, 0.1, "relu", 1e-5, true, false, true,
        new Generator(1));
    assertEquals("TransformerDecoderLayer: memory must be [N, S, E] or unbatched [S, E] with E = d_model (8): "
        + "memory=[2, 5, 6]", assertThrows(IllegalArgumentException.class,
            () -> d.forward(Tensor.zeros(2, 4, 8), Tensor.zeros(2, 5, 6))).getMessage());
    Transformer t = new Transformer(8, 2, 1, 1, 16, 0.1, "relu", 1e-5, false, false, true, new Generator(1));
    assertEquals("Transformer: the batch number of src and tgt must be equal (3 vs 2): src=[5, 3, 8], tgt=[4, 2, 8]",
        assertThrows(IllegalArgumentException.class, () -> t.forward(Tensor.zeros(5, 3, 8), Tensor.zeros(4, 2, 8)))
            .getMessage());
    assertEquals("MultiheadAttention: key_padding_mask must be [N, S] = [3, 5] (or [S] unbatched): key_padding_mask=[3, 4]",
        assertThrows(IllegalArgumentException.class,
            () -> l.forward(Tensor.zeros(5, 3, 8), null, Tensor.zeros(DType.BOOL, 3, 4), false)).getMessage());
  }

  // ---------------------------------------------------------------- MultiheadAttention routing

  /** Output and input/parameter gradients of one MHA call, for a fixed upstream gradient. */
  private static List<Tensor> run(MultiheadAttention m, Tensor q, Tensor kv, Tensor kpm, Tensor am, boolean weights,
      boolean causal, Tensor up) {
    m.zeroGrad();
    Tensor qq = q.detach().requiresGrad(true);
    Tensor kk = kv.detach().requiresGrad(true);
    Tensor y = m.forward(qq, kk, kk, kpm, am, weights, causal).output();
    y.backward(up);
    List<Tensor> r = new ArrayList<>(List.of(y.detach(), qq.grad(), kk.grad()));
    for (Tensor p : m.parameters()) r.add(p.grad());
    return r;
  }

  @Test
  void attentionWithoutWeightsTakesSdpaAndAgreesWithTheExplicitPath() {
    Generator g = new Generator(6);
    MultiheadAttention m = f64Perturbed(new MultiheadAttention(8, 2, 0, true, false, g), g);
    int l = 37;
    int s = 29;
    int n = 2;
    Tensor q = randn(g, l, n, 8);
    Tensor kv = randn(g, s, n, 8);
    boolean[] pad = new boolean[n * s];
    for (int j = 20; j < s; j++) pad[j] = true; // batch 0: the last keys are padding
    pad[s + 7] = true;
    Tensor kpm = Tensor.of(pad, n, s);
    boolean[] banned = new boolean[l * s];
    for (int i = 0; i < l; i++) banned[i * s + (i * 7 + 3) % s] = i % 3 != 0;
    Tensor boolMask = Tensor.of(banned, l, s);
    Tensor floatMask = randn(g, l, s);
    Tensor up = randn(g, l, n, 8);
    record Case(String name, Tensor am, boolean causal) {}
    for (Case c : List.of(new Case("bool mask + padding", boolMask, false), new Case("float mask + causal", floatMask, true),
        new Case("padding + causal", null, true))) {
      List<Tensor> explicit = run(m, q, kv, kpm, c.am(), true, c.causal(), up);
      for (Attention.Kernel k : List.of(Attention.Kernel.plain(), Attention.Kernel.tiled(8, 8), Attention.Kernel.tiled(5, 16))) {
        m.attentionKernel(k);
        List<Tensor> sdpa = run(m, q, kv, kpm, c.am(), false, c.causal(), up);
        for (int i = 0; i < explicit.size(); i++) {
          assertClose(c.name() + " " + k.path() + " " + k.blockQ() + " #" + i, explicit.get(i), sdpa.get(i), 1e-10);
        }
        if (k.path() == Attention.Path.TILED) {
          // equal to rounding, not bitwise: the online softmax of the tiled kernel really ran
          assertFalse(Arrays.equals(explicit.get(0).toDoubleArray(), sdpa.get(0).toDoubleArray()), c.name());
        }
      }
      m.attentionKernel(Attention.Kernel.AUTO);
    }
  }

  @Test
  void gradcheckThroughTheTiledPath() {
    Generator g = new Generator(7);
    MultiheadAttention m = f64Perturbed(new MultiheadAttention(4, 2, 0, true, true, g), g);
    m.attentionKernel(Attention.Kernel.tiled(2, 2));
    Tensor q = randn(g, 2, 5, 4).requiresGrad(true);
    Tensor kv = randn(g, 2, 5, 4).requiresGrad(true);
    Tensor kpm = Tensor.of(new boolean[] {false, false, false, true, false, false, false, false, false, true}, 2, 5);
    Tensor am = randn(g, 5, 5);
    List<Tensor> inputs = new ArrayList<>(List.of(q, kv));
    inputs.addAll(m.parameters());
    GradCheck.check("MultiheadAttention tiled", in -> m.forward(in.get(0), in.get(1), in.get(1), kpm, am, false, true)
        .output(), inputs);
  }

  private static void gradcheckLayer(String name, Module layer, Supplier<List<Tensor>> inputs,
      java.util.function.Function<List<Tensor>, Tensor> f) {
    List<Tensor> in = new ArrayList<>(inputs.get());
    in.addAll(layer.parameters());
    GradCheck.check(name, f, in);
  }

  @Test
  void encoderAndDecoderLayersGradcheck() {
    Generator g = new Generator(8);
    Tensor kpm = Tensor.of(new boolean[] {false, false, true, false, false, false, false, true}, 2, 4);
    for (boolean normFirst : new boolean[] {false, true}) {
      TransformerEncoderLayer enc = f64Perturbed(new TransformerEncoderLayer(4, 2, 6, 0.0, normFirst ? "gelu" : "relu",
          1e-5, false, normFirst, true, g), g);
      Tensor src = randn(g, 4, 2, 4).requiresGrad(true);
      gradcheckLayer("TransformerEncoderLayer norm_first=" + normFirst, enc, () -> List.of(src),
          in -> enc.forward(in.get(0), null, kpm, true));
    }
    TransformerDecoderLayer dec = f64Perturbed(new TransformerDecoderLayer(4, 2, 6, 0.0, "gelu", 1e-5, true, false, true,
        g), g);
    Tensor tgt = randn(g, 2, 3, 4).requiresGrad(true);
    Tensor mem = randn(g, 2, 4, 4).requiresGrad(true);
    gradcheckLayer("TransformerDecoderLayer", dec, () -> List.of(tgt, mem),
        in -> dec.forward(in.get(0), in.get(1), null, null, null, kpm, true, false));
  }
}
