package dev.ember.nn;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.testing.Fixtures;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.DoubleFunction;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Modules against PyTorch 1.13 (modules/make_module_fixtures.py): each case loads PyTorch's state
 * dict strictly (its keys in PyTorch's order), then compares outputs, updated buffers and the
 * gradients of inputs and parameters for a fixed upstream gradient, in float32.
 */
class ModuleFixtureTest {
  private static final Map<String, Tensor> FIX = Fixtures.read(ModuleFixtureTest.class, "modules/module_fixtures.txt");
  private static final double RTOL = 1e-5;
  private static final double ATOL = 2e-6;

  private static Tensor f32(Tensor t) {
    return t.to(DType.F32);
  }

  private static Tensor fix(String name) {
    Tensor t = FIX.get(name);
    assertNotNull(t, "fixture " + name);
    return t;
  }

  private static Tensor input(String name) {
    return f32(fix(name)).requiresGrad(true);
  }

  static void assertClose(String what, Tensor want, Tensor got) {
    assertNotNull(got, what + " is null");
    assertArrayEquals(want.shape(), got.shape(), what + " shape");
    double[] w = want.toDoubleArray();
    double[] g = got.toDoubleArray();
    int bad = 0;
    int worst = -1;
    double worstExcess = 0;
    for (int i = 0; i < w.length; i++) {
      double d = Math.abs(w[i] - g[i]);
      double allowed = ATOL + RTOL * Math.abs(w[i]);
      if (!(d <= allowed) && !(Double.isInfinite(w[i]) && w[i] == g[i])) {
        bad++;
        if (worst < 0 || d - allowed > worstExcess) {
          worst = i;
          worstExcess = d - allowed;
        }
      }
    }
    if (bad > 0) {
      throw new AssertionError(what + ": mismatched " + bad + "/" + w.length + "; worst at " + worst + ": want "
          + w[worst] + ", got " + g[worst]);
    }
  }

  /** Loads '<c>.sd.*' strictly, after checking that the module's keys are PyTorch's, in its order. */
  private static void load(Module m, String c) {
    LinkedHashMap<String, Tensor> sd = Fixtures.under(FIX, c + ".sd");
    assertEquals(List.copyOf(sd.keySet()), List.copyOf(m.stateDict().keySet()), c + " state dict keys");
    m.loadStateDict(sd);
  }

  /** Compares every '<c>.<prefix>.<name>' with the gradient of input {@code name} or of parameter {@code name}. */
  private static void checkGrads(String c, String prefix, Module m, Map<String, Tensor> inputs) {
    LinkedHashMap<String, Tensor> want = Fixtures.under(FIX, c + "." + prefix);
    LinkedHashMap<String, Tensor> params = m.namedParameters();
    for (String p : params.keySet()) assertTrue(want.containsKey(p), c + ": no reference gradient for " + p);
    for (var e : want.entrySet()) {
      Tensor x = inputs.containsKey(e.getKey()) ? inputs.get(e.getKey()) : params.get(e.getKey());
      assertNotNull(x, c + ": " + e.getKey() + " is neither an input nor a parameter");
      assertClose(c + " " + prefix + "." + e.getKey(), e.getValue(), x.grad());
    }
  }

  // ------------------------------------------------------------------------------- batch norm

  private static void batchNorm(String c, BatchNormBase bn) {
    load(bn, c);
    bn.train();
    assertClose(c + " out1", fix(c + ".out1"), bn.forward(f32(fix(c + ".x1"))));
    Tensor x2 = input(c + ".x2");
    Tensor y2 = bn.forward(x2);
    assertClose(c + " out2", fix(c + ".out2"), y2);
    y2.backward(f32(fix(c + ".g")));
    checkGrads(c, "grad", bn, Map.of("x2", x2));
    LinkedHashMap<String, Tensor> after = Fixtures.under(FIX, c + ".after");
    LinkedHashMap<String, Tensor> sd = bn.stateDict();
    assertEquals(List.copyOf(after.keySet()), List.copyOf(bn.namedBuffers().keySet()), c + " buffers");
    for (var e : after.entrySet()) assertClose(c + " " + e.getKey() + " after 2 steps", e.getValue(), sd.get(e.getKey()));
    if (bn.trackRunningStats()) {
      assertEquals(DType.I64, bn.buffer("num_batches_tracked").dtype());
      assertEquals(2, bn.numBatchesTracked());
    }
    bn.eval();
    bn.zeroGrad();
    Tensor x3 = input(c + ".x3");
    Tensor y3 = bn.forward(x3);
    assertClose(c + " out3 (eval)", fix(c + ".out3"), y3);
    y3.backward(f32(fix(c + ".g3")));
    checkGrads(c, "grad3", bn, Map.of("x3", x3));
    if (bn.trackRunningStats()) assertEquals(2, bn.numBatchesTracked(), "eval does not count batches");
  }

  @Test
  void batchNormTrainTwoStepsThenEval() {
    batchNorm("bn1d_2d", new BatchNorm1d(4));
    batchNorm("bn1d_3d", new BatchNorm1d(3));
    batchNorm("bn2d", new BatchNorm2d(3));
    batchNorm("bn2d_cma", new BatchNorm2d(3, 1e-5, null, true, true));
    batchNorm("bn2d_noaffine", new BatchNorm2d(3, 1e-3, 0.3, false, true));
    batchNorm("bn1d_notrack", new BatchNorm1d(4, 1e-5, 0.1, true, false));
  }

  // ------------------------------------------------------------------------------- other norms

  private static void simple(String c, Module m) {
    load(m, c);
    Tensor x = input(c + ".x");
    Tensor y = m.forward(x);
    assertClose(c + " out", fix(c + ".out"), y);
    y.backward(f32(fix(c + ".g")));
    checkGrads(c, "grad", m, Map.of("x", x));
  }

  @Test
  void layerGroupAndRmsNorm() {
    simple("ln", new LayerNorm(new int[] {3, 4}));
    simple("ln_nobias", new LayerNorm(new int[] {6}, 1e-6, true, false));
    simple("ln_noaffine", new LayerNorm(new int[] {6}, 1e-5, false, true));
    simple("gn", new GroupNorm(2, 6));
    simple("gn_noaffine", new GroupNorm(3, 6, 1e-4, false));
    simple("rms", new RMSNorm(new int[] {8}, 1e-6, true));
    simple("rms_epsnone", new RMSNorm(new int[] {4, 8}, null, true));
    simple("rms_noaffine", new RMSNorm(new int[] {8}, 1e-5, false));
  }

  // ------------------------------------------------------------------------------- embedding

  private static Embedding embedding(String c, Embedding m) {
    load(m, c);
    Tensor idx = fix(c + ".idx").to(DType.I64);
    Tensor y = m.forward(idx);
    assertClose(c + " out", fix(c + ".out"), y);
    assertClose(c + " weight after the lookup", fix(c + ".after.weight"), m.weight());
    y.backward(f32(fix(c + ".g")));
    checkGrads(c, "grad", m, Map.of());
    return m;
  }

  @Test
  void embeddingPaddingAndMaxNorm() {
    Embedding pad = embedding("emb_pad", new Embedding(10, 3, 0));
    assertArrayEquals(new double[3], pad.weight().grad().select(0, 0).toDoubleArray(), "padding row gets no gradient");
    Embedding neg = embedding("emb_padneg", new Embedding(10, 3, -1));
    assertEquals(9, neg.paddingIdx());
    assertArrayEquals(new double[3], neg.weight().grad().select(0, 9).toDoubleArray());
    Embedding mn = embedding("emb_maxnorm", new Embedding(10, 3, null, 1.0, 2.0, new Generator(1)));
    // the looked-up rows were renormalized in place, the others kept
    assertTrue(Math.sqrt(mn.weight().select(0, 3).square().sum().item()) <= 1 + 1e-6);
    embedding("emb_maxnorm1", new Embedding(10, 3, null, 0.5, 1.0, new Generator(1)));
  }

  // ------------------------------------------------------------------------------- transformer

  private static Tensor mask(String c, String name) {
    if (FIX.containsKey(c + "." + name + "_bool")) return fix(c + "." + name + "_bool").ne(0);
    return FIX.containsKey(c + "." + name) ? f32(fix(c + "." + name)) : null;
  }

  /**
   * The eval output of the module built with dropout 0.1, then output and gradients in training
   * mode of the module built with dropout 0.
   */
  private static void layer(String c, DoubleFunction<Module> make, List<String> inputNames,
      Function<Map<String, Tensor>, Function<Module, Tensor>> call) {
    Module m = make.apply(0.1);
    load(m, c);
    m.eval();
    LinkedHashMap<String, Tensor> in = new LinkedHashMap<>();
    for (String n : inputNames) in.put(n, input(c + "." + n));
    assertClose(c + " eval output", fix(c + ".out_eval"), call.apply(in).apply(m));
    Module m0 = make.apply(0.0);
    load(m0, c);
    m0.train();
    Tensor y = call.apply(in).apply(m0);
    assertClose(c + " train output (dropout 0)", fix(c + ".out"), y);
    y.backward(f32(fix(c + ".g")));
    checkGrads(c, "grad", m0, in);
  }

  private static Function<Map<String, Tensor>, Function<Module, Tensor>> encCall(String c) {
    return in -> m -> {
      Tensor src = in.get("src");
      Tensor mask = mask(c, "src_mask");
      Tensor kpm = mask(c, "src_key_padding_mask");
      return m instanceof TransformerEncoder e ? e.forward(src, mask, kpm, false)
          : ((TransformerEncoderLayer) m).forward(src, mask, kpm, false);
    };
  }

  private static Function<Map<String, Tensor>, Function<Module, Tensor>> decCall(String c) {
    return in -> m -> {
      Tensor tgt = in.get("tgt");
      Tensor mem = in.get("memory");
      Tensor tm = mask(c, "tgt_mask");
      Tensor mm = mask(c, "memory_mask");
      Tensor tk = mask(c, "tgt_key_padding_mask");
      Tensor mk = mask(c, "memory_key_padding_mask");
      return m instanceof TransformerDecoder d ? d.forward(tgt, mem, tm, mm, tk, mk, false, false)
          : ((TransformerDecoderLayer) m).forward(tgt, mem, tm, mm, tk, mk, false, false);
    };
  }

  @Test
  void transformerEncoderLayers() {
    record Cfg(String name, String act, boolean normFirst, boolean batchFirst) {}
    for (Cfg cfg : List.of(new Cfg("enc_post_relu", "relu", false, false), new Cfg("enc_pre_relu", "relu", true, false),
        new Cfg("enc_post_gelu_bf", "gelu", false, true), new Cfg("enc_pre_gelu_bf", "gelu", true, true))) {
      layer(cfg.name(), p -> new TransformerEncoderLayer(8, 2, 16, p, cfg.act(), 1e-5, cfg.batchFirst(), cfg.normFirst(),
          true, new Generator(1)), List.of("src"), encCall(cfg.name()));
    }
  }

  @Test
  void transformerDecoderLayers() {
    record Cfg(String name, String act, boolean normFirst, boolean batchFirst) {}
    for (Cfg cfg : List.of(new Cfg("dec_post_relu", "relu", false, false), new Cfg("dec_pre_relu", "relu", true, false),
        new Cfg("dec_post_gelu_bf", "gelu", false, true), new Cfg("dec_pre_gelu_bf", "gelu", true, true))) {
      layer(cfg.name(), p -> new TransformerDecoderLayer(8, 2, 16, p, cfg.act(), 1e-5, cfg.batchFirst(), cfg.normFirst(),
          true, new Generator(1)), List.of("tgt", "memory"), decCall(cfg.name()));
    }
  }

  @Test
  void stacksAndTransformer() {
    Generator g = new Generator(2);
    layer("encoder_stack", p -> new TransformerEncoder(new TransformerEncoderLayer(8, 2, 16, p, "relu", 1e-5, false, false,
        true, g), 2, new LayerNorm(8)), List.of("src"), encCall("encoder_stack"));
    layer("decoder_stack", p -> new TransformerDecoder(new TransformerDecoderLayer(8, 2, 16, p, "gelu", 1e-5, false, true,
        true, g), 2), List.of("tgt", "memory"), decCall("decoder_stack"));
    String c = "transformer";
    layer(c, p -> new Transformer(8, 2, 2, 1, 16, p, "relu", 1e-5, true, false, true, g), List.of("src", "tgt"),
        in -> m -> ((Transformer) m).forward(in.get("src"), in.get("tgt"), null, mask(c, "tgt_mask"), null,
            mask(c, "src_key_padding_mask"), null, mask(c, "src_key_padding_mask"), false, false, false));
  }

  @Test
  void tgtIsCausalEqualsTheExplicitCausalMask() {
    String c = "dec_post_relu";
    TransformerDecoderLayer m = new TransformerDecoderLayer(8, 2, 16, 0.0, "relu", 1e-5, false, false, true,
        new Generator(1));
    load(m, c);
    m.eval();
    Tensor tgt = f32(fix(c + ".tgt"));
    Tensor mem = f32(fix(c + ".memory"));
    Tensor viaFlag = m.forward(tgt, mem, null, null, mask(c, "tgt_key_padding_mask"), mask(c, "memory_key_padding_mask"),
        true, false);
    assertClose(c + " with tgt_is_causal and no tgt_mask", fix(c + ".out_eval"), viaFlag);
  }
}
