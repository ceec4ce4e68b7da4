package dev.ember.nn;

import static dev.ember.testing.HalfBits.bits;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.amp.Autocast;
import dev.ember.nn.functional.Attention;
import dev.ember.nn.functional.F;
import dev.ember.nn.functional.Reduction;
import dev.ember.ops.OpDef;
import dev.ember.ops.Ops;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The nn ops under {@link Autocast}: the matmul class (convolutions, attention, bilinear, the recurrent cells) takes
 * low-precision operands and returns the scope's dtype, norms and losses run in F32, the rest keep their inputs'
 * dtype; whole models train under BF16 autocast with F32 parameters, gradients and loss close to the F32 run; and a
 * closed or disabled scope leaves the F32 computation bit for bit as it was.
 */
class AutocastNnTest {
  static final DType[] HALVES = {DType.BF16, DType.F16};

  private static Tensor randn(long seed, int... shape) {
    return Tensor.randn(new Generator(seed), shape);
  }


  /** The F32 inputs of each LOWER_PRECISION nn op, and the op. */
  private static Map<String, Function<List<Tensor>, Tensor>> lowerOps() {
    Map<String, Function<List<Tensor>, Tensor>> m = new LinkedHashMap<>();
    m.put("conv2d", t -> F.conv2d(t.get(0), t.get(1), t.get(2), new int[] {1}, new int[] {1}, new int[] {1}, 1));
    m.put("conv1d", t -> F.conv1d(t.get(3), t.get(4), null));
    m.put("conv_transpose2d", t -> F.convTranspose2d(t.get(0), t.get(5), null));
    m.put("scaled_dot_product_attention", t -> F.scaledDotProductAttention(t.get(6), t.get(7), t.get(7)));
    m.put("bilinear", t -> F.bilinear(t.get(8), t.get(9), t.get(10), null));
    m.put("lstm_cell", t -> F.lstmCell(t.get(11), t.get(12)));
    m.put("gru_cell", t -> F.gruCell(t.get(8), t.get(12), t.get(13), t.get(14), null, t.get(15)));
    m.put("rnn_cell", t -> F.rnnCell(t.get(8), t.get(16), t.get(17), t.get(18), null, null, "tanh"));
    return m;
  }

  private static List<Tensor> lowerInputs() {
    return List.of(randn(0, 2, 3, 6, 6), randn(1, 4, 3, 3, 3), randn(2, 4), randn(3, 2, 3, 9), randn(4, 5, 3, 2),
        randn(5, 3, 2, 2, 2), randn(6, 2, 5, 4), randn(7, 2, 6, 4), randn(8, 3, 4), randn(9, 3, 5),
        randn(10, 2, 4, 5), randn(11, 3, 8), randn(12, 3, 2), randn(13, 6, 4), randn(14, 6, 2), randn(15, 6),
        randn(16, 3, 3), randn(17, 3, 4), randn(18, 3, 3));
  }

  @Test
  void matmulClassNnOpsRunOnLowPrecisionOperandsAndReturnTheScopesDtype() {
    List<Tensor> in = lowerInputs();
    for (DType dt : HALVES) {
      List<Tensor> cast = in.stream().map(t -> t.to(dt)).toList();
      for (Map.Entry<String, Function<List<Tensor>, Tensor>> e : lowerOps().entrySet()) {
        assertEquals(Autocast.Policy.LOWER, Autocast.policy(e.getKey()), e.getKey() + " is in LOWER_PRECISION");
        Tensor got;
        try (Autocast ac = Autocast.enable(dt)) {
          got = e.getValue().apply(in);
        }
        assertEquals(dt, got.dtype(), e.getKey() + " under " + dt + " autocast");
        // exactly the op on the inputs cast to dt (computed in F32 from those values, rounded once)
        assertArrayEquals(bits(e.getValue().apply(cast)), bits(got), e.getKey() + " under " + dt);
        assertEquals(DType.F32, e.getValue().apply(in).dtype(), e.getKey() + " outside the scope");
      }
    }
  }

  /**
   * FLOAT32 op {@code name} on half copies of {@code f32} inputs (integer ones as they are) under autocast: an F32
   * result equal to the op on the inputs widened to F32, and the half dtype outside the scope.
   */
  private static void runsInF32(String name, DType dt, Function<List<Tensor>, Tensor> op, Tensor... f32) {
    assertEquals(Autocast.Policy.FLOAT32, Autocast.policy(name), name + " is in FLOAT32");
    List<Tensor> half = new ArrayList<>();
    List<Tensor> wide = new ArrayList<>();
    for (Tensor t : f32) {
      boolean floating = t.dtype() == DType.F32;
      half.add(floating ? t.to(dt) : t);
      wide.add(floating ? t.to(dt).to(DType.F32) : t);
    }
    Tensor got;
    try (Autocast ac = Autocast.enable(dt)) {
      got = op.apply(half);
    }
    assertEquals(DType.F32, got.dtype(), name + " on " + dt + " under autocast");
    assertArrayEquals(op.apply(wide).toFloatArray(), got.toFloatArray(), name + " under " + dt);
    assertEquals(dt, op.apply(half).dtype(), name + " outside the scope keeps " + dt);
  }

  @Test
  void normsAndLossesRunInF32() {
    Tensor x = randn(1, 4, 6, 3, 3);
    Tensor logits = randn(2, 5, 7);
    Tensor labels = Tensor.randint(new Generator(3), 0, 7, 5);
    Tensor target = randn(4, 5, 7);
    Tensor prob = randn(5, 5, 7).sigmoid();
    Tensor soft = target.sigmoid();
    for (DType dt : HALVES) {
      runsInF32("batch_norm", dt, t -> F.batchNorm(t.get(0), null, null, t.get(1), null, true), x, randn(6, 6));
      runsInF32("layer_norm", dt, t -> F.layerNorm(t.get(0), new int[] {3, 3}, null, null), x);
      runsInF32("group_norm", dt, t -> F.groupNorm(t.get(0), 2, null, null), x);
      runsInF32("rms_norm", dt, t -> F.rmsNorm(t.get(0), new int[] {3}, null, 1e-6), x);
      runsInF32("cross_entropy", dt, t -> F.crossEntropy(t.get(0), t.get(1)), logits, labels);
      runsInF32("nll_loss", dt, t -> F.nllLoss(t.get(0), t.get(1)), logits, labels);
      runsInF32("mse_loss", dt, t -> F.mseLoss(t.get(0), t.get(1)), logits, target);
      runsInF32("l1_loss", dt, t -> F.l1Loss(t.get(0), t.get(1), Reduction.SUM), logits, target);
      runsInF32("smooth_l1_loss", dt, t -> F.smoothL1Loss(t.get(0), t.get(1)), logits, target);
      runsInF32("huber_loss", dt, t -> F.huberLoss(t.get(0), t.get(1)), logits, target);
      runsInF32("binary_cross_entropy", dt, t -> F.bceLoss(t.get(0), t.get(1)), prob, soft);
      runsInF32("binary_cross_entropy_with_logits", dt, t -> F.bceWithLogits(t.get(0), t.get(1)), logits, soft);
      runsInF32("kl_div", dt, t -> F.klDiv(t.get(0), t.get(1)), logits, soft);
      runsInF32("focal_loss", dt, t -> F.focalLoss(t.get(0), t.get(1)), logits, labels);
      runsInF32("poly_loss", dt, t -> F.polyLoss(t.get(0), t.get(1)), logits, labels);
      runsInF32("sigmoid_focal_loss", dt, t -> F.sigmoidFocalLoss(t.get(0), t.get(1)), logits, soft);
      runsInF32("dice_loss", dt, t -> F.diceLoss(t.get(0), t.get(1)), prob, soft);
      runsInF32("hinge_embedding_loss", dt, t -> F.hingeEmbeddingLoss(t.get(0), t.get(1)), logits, target.sign());
    }
  }

  @Test
  void aNormWithF32ParametersTakesTheLowPrecisionOutputOfTheLayerBeforeIt() {
    // Sequential(Linear, LayerNorm) under bf16 autocast: the linear's output is bfloat16, the norm's weight float32,
    // and the norm runs in F32; this threw "weight has dtype float32, input has bfloat16"
    Generator g = new Generator(11);
    Module ln = new Sequential(new Linear(6, 8, true, g), new LayerNorm(new int[] {8}));
    Module gn = new Sequential(new Linear(6, 8, true, g), new Unflatten(1, new int[] {4, 2}), new GroupNorm(2, 4));
    Tensor x = Tensor.randn(g, 3, 6);
    for (DType dt : HALVES) {
      for (Module m : List.of(ln, gn)) {
        Tensor expected;
        Tensor lowered;
        try (Autocast on = Autocast.enable(dt)) {
          lowered = ((Sequential) m).get(0).call(x);
          expected = m.call(x);
        }
        assertEquals(dt, lowered.dtype());
        assertEquals(DType.F32, expected.dtype());
        Sequential rest = new Sequential();
        for (int i = 1; i < ((Sequential) m).size(); i++) rest.add(((Sequential) m).get(i));
        assertArrayEquals(rest.call(lowered.to(DType.F32)).toFloatArray(), expected.toFloatArray());
      }
    }
  }

  @Test
  void otherNnOpsKeepTheirInputsDtype() {
    Tensor x = randn(1, 2, 3, 8, 8);
    Map<String, Function<Tensor, Tensor>> ops = new LinkedHashMap<>();
    ops.put("max_pool2d", h -> F.maxPool2d(h, 2));
    ops.put("avg_pool2d", h -> F.avgPool2d(h, 2));
    ops.put("adaptive_avg_pool2d", h -> F.adaptiveAvgPool2d(h, 1));
    ops.put("adaptive_max_pool2d", h -> F.adaptiveMaxPool2d(h, 3));
    ops.put("pad", h -> F.pad(h, new int[] {1, 2}, "reflect"));
    ops.put("interpolate", h -> F.interpolate(h, 2.0, "bilinear"));
    ops.put("dropout", h -> F.dropout(h, 0.3, true, new Generator(5)));
    ops.put("relu", F::relu);
    for (DType dt : HALVES) {
      for (Map.Entry<String, Function<Tensor, Tensor>> e : ops.entrySet()) {
        assertEquals(Autocast.Policy.UNCHANGED, Autocast.policy(e.getKey()), e.getKey());
        for (DType in : new DType[] {DType.F32, dt}) {
          Tensor got;
          try (Autocast ac = Autocast.enable(dt)) {
            got = e.getValue().apply(x.to(in));
          }
          assertEquals(in, got.dtype(), e.getKey() + " on " + in + " under " + dt + " autocast");
          Tensor ref = e.getValue().apply(x.to(in));
          assertArrayEquals(ref.toFloatArray(), got.toFloatArray(), e.getKey() + " on " + in);
        }
      }
      Tensor w = randn(2, 5, 3).to(dt);
      Tensor emb;
      try (Autocast ac = Autocast.enable(dt)) {
        emb = F.embedding(Tensor.of(new long[] {4, 0}, 2), randn(2, 5, 3));
        assertEquals(dt, F.embedding(Tensor.of(new long[] {1}, 1), w).dtype(), "embedding of a " + dt + " weight");
      }
      assertEquals(DType.F32, emb.dtype(), "embedding of an F32 weight stays F32");
      // max_norm renormalizes the caller's F32 weight in place under autocast as outside it, once
      Tensor big = randn(3, 5, 3).mul(4);
      Tensor big2 = big.clone();
      Tensor idx = Tensor.of(new long[] {1, 3, 1}, 3);
      int version = big.version();
      Tensor inScope;
      try (Autocast ac = Autocast.enable(dt)) {
        inScope = F.embedding(idx, big, null, 1.0, 2);
      }
      Tensor outside = F.embedding(idx, big2, null, 1.0, 2);
      assertArrayEquals(outside.toFloatArray(), inScope.toFloatArray(), "max_norm embedding under autocast");
      assertArrayEquals(big2.toFloatArray(), big.toFloatArray(), "the renormalized weight");
      assertEquals(version + 1, big.version(), "one in-place renormalization");
    }
  }

  @Test
  void everyOpNameInTheAutocastListsIsARegisteredOp() {
    Set<String> registered = Ops.definitions().stream().map(OpDef::name).collect(Collectors.toSet());
    Set<String> nn = new dev.ember.nn.functional.NnOps().definitions().stream().map(OpDef::name)
        .collect(Collectors.toSet());
    Set<String> listed = new TreeSet<>(Autocast.LOWER_PRECISION);
    listed.addAll(Autocast.FLOAT32);
    List<String> missing = new ArrayList<>();
    for (String name : listed) if (!registered.contains(name)) missing.add(name);
    assertEquals(List.of(), missing, "names in Autocast's lists that no op definition has");
    for (String name : List.of("conv1d", "conv2d", "conv_transpose2d", "scaled_dot_product_attention", "bilinear",
        "lstm_cell", "gru_cell", "rnn_cell", "layer_norm", "batch_norm", "group_norm", "rms_norm", "cross_entropy")) {
      assertTrue(nn.contains(name), name + " is an nn definition");
    }
  }

  /** A model's loss and parameter gradients, run once. */
  private record Step(Tensor loss, List<Tensor> grads) {}

  private static Step step(Module model, Function<Module, Tensor> loss) {
    model.zeroGrad(true);
    Tensor l = loss.apply(model);
    l.backward();
    List<Tensor> g = new ArrayList<>();
    for (Tensor p : model.parameters()) g.add(p.grad() == null ? null : p.grad().clone());
    return new Step(l, g);
  }

  /** ||a - b|| / ||b|| over all the gradients. */
  private static double relativeError(List<Tensor> a, List<Tensor> b) {
    double num = 0;
    double den = 0;
    for (int i = 0; i < a.size(); i++) {
      double[] x = a.get(i).toDoubleArray();
      double[] y = b.get(i).toDoubleArray();
      for (int j = 0; j < x.length; j++) {
        num += (x[j] - y[j]) * (x[j] - y[j]);
        den += y[j] * y[j];
      }
    }
    return Math.sqrt(num / den);
  }

  private static void trainsUnderBf16Autocast(String what, Module model, Function<Module, Tensor> loss,
      double tolerance) {
    Step f32 = step(model, loss);
    Step plain = step(model, loss); // once more: the F32 step is deterministic
    Step bf;
    try (Autocast ac = Autocast.enable(DType.BF16)) {
      bf = step(model, m -> {
        Tensor l = loss.apply(m);
        assertEquals(DType.F32, l.dtype(), what + ": the loss is F32 under autocast");
        return l;
      });
    }
    for (Tensor p : model.parameters()) assertEquals(DType.F32, p.dtype(), what + ": parameters stay F32");
    for (int i = 0; i < bf.grads().size(); i++) {
      assertNotNull(bf.grads().get(i), what + ": every parameter gets a gradient");
      assertEquals(DType.F32, bf.grads().get(i).dtype(), what + ": gradients are F32");
    }
    double err = relativeError(bf.grads(), f32.grads());
    System.out.printf("%s: BF16 autocast loss %.6f vs F32 %.6f, gradient relative error %.2e%n", what,
        bf.loss().item(), f32.loss().item(), err);
    assertTrue(err < tolerance, what + ": gradient relative error " + err + " >= " + tolerance);
    assertTrue(err > 0, what + ": autocast changed nothing, so it did not run in BF16");
    assertEquals(f32.loss().item(), bf.loss().item(), Math.abs(f32.loss().item()) * 2e-2, what + ": loss");
    // and after the scope, the F32 step is bit for bit the one before it
    Step after = step(model, loss);
    assertEquals(Float.floatToIntBits((float) plain.loss().item()), Float.floatToIntBits((float) after.loss().item()));
    for (int i = 0; i < after.grads().size(); i++) {
      assertArrayEquals(plain.grads().get(i).toFloatArray(), after.grads().get(i).toFloatArray(), what + " grad " + i);
    }
    try (Autocast ac = Autocast.enable(DType.BF16); Autocast off = Autocast.disable()) {
      Step disabled = step(model, loss);
      for (int i = 0; i < disabled.grads().size(); i++) {
        assertArrayEquals(plain.grads().get(i).toFloatArray(), disabled.grads().get(i).toFloatArray(),
            what + " grad " + i + " in a disabled scope");
      }
    }
  }

  /** Parameters drawn from {@code seed} (uniform, +-1/sqrt(fan-in) for weights), independent of the global generator. */
  private static void reinit(Module m, long seed) {
    Generator g = new Generator(seed);
    try (var ignored = dev.ember.autograd.Grad.off()) {
      for (Tensor p : m.parameters()) {
        double bound = p.dim() > 1 ? 1 / Math.sqrt(p.numel() / (double) p.size(0)) : 0.1;
        p.copy_(Tensor.rand(g, p.shape()).mul(2 * bound).sub(bound));
      }
    }
  }

  @Test
  void aLeNetTrainsUnderBf16AutocastWithF32GradientsCloseToTheF32Run() {
    Module lenet = Models.lenet5(10);
    reinit(lenet, 11);
    Tensor x = randn(1, 8, 1, 28, 28);
    Tensor y = Tensor.randint(new Generator(2), 0, 10, 8);
    // torch 1.13's BF16 CPU autocast gives the same LeNet at init 4% to 10% relative gradient error (three seeds):
    // near-uniform logits make the gradients small differences, and ReLU gates flip with the rounding
    trainsUnderBf16Autocast("LeNet-5", lenet, m -> F.crossEntropy(m.forward(x), y), 0.15);
  }

  @Test
  void aTransformerEncoderTrainsUnderBf16AutocastWithF32GradientsCloseToTheF32Run() {
    Generator g = new Generator(4);
    TransformerEncoderLayer layer = new TransformerEncoderLayer(16, 4, 32, 0.0, "gelu", 1e-5, true, true, true, g);
    Sequential model = new Sequential(new TransformerEncoder(layer, 2), new Linear(16, 5, true, g));
    reinit(model, 12);
    Tensor x = randn(5, 3, 7, 16);
    Tensor y = Tensor.randint(new Generator(6), 0, 5, 3, 7);
    trainsUnderBf16Autocast("TransformerEncoder", model,
        m -> F.crossEntropy(m.forward(x).reshape(21, 5), y.reshape(21)), 5e-2);
  }

  @Test
  void attentionUnderAutocastCastsAFloatMaskWithItsOperands() {
    Tensor q = randn(1, 2, 3, 4);
    Tensor mask = randn(2, 3, 3);
    Tensor got;
    try (Autocast ac = Autocast.enable(DType.BF16)) {
      got = Attention.scaledDotProductAttention(q, q, q, mask, 0, false, null, null);
    }
    Tensor h = q.to(DType.BF16);
    assertArrayEquals(bits(Attention.scaledDotProductAttention(h, h, h, mask.to(DType.BF16), 0, false, null, null)),
        bits(got));
  }
}
