package dev.ember.amp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.autograd.Grad;
import dev.ember.ops.ElementwiseOps;
import dev.ember.ops.LinalgOps;
import dev.ember.ops.Ops;
import dev.ember.ops.ReduceOps;
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
import org.junit.jupiter.api.Test;

/**
 * Which dtype each core op of {@link Autocast}'s lists runs in under a scope: LOWER_PRECISION ops take F32 inputs in
 * the scope's dtype and return it, FLOAT32 ops take half inputs in F32 and return F32, every other op and every F64
 * input is left alone. Then what that means for training: F32 gradients close to the F32 run's.
 */
class AutocastOpsTest {
  /**
   * The names of the two lists that ember-nn registers (its {@code NnOps} provider) or that name nn layers without an
   * op of their own yet (bilinear, gru_cell, rnn_cell): the nn ops apply autocast themselves and are tested there.
   */
  private static final Set<String> NN_OPS = Set.of(
      "bilinear", "conv1d", "conv2d", "conv_transpose2d", "scaled_dot_product_attention", "lstm_cell", "gru_cell",
      "rnn_cell", "layer_norm", "batch_norm", "group_norm", "rms_norm", "cross_entropy", "nll_loss", "mse_loss",
      "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy", "binary_cross_entropy_with_logits",
      "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "focal_loss",
      "sigmoid_focal_loss", "dice_loss", "poly_loss");

  /** A core op of the lists: the shapes of its inputs and how to call it. */
  private record Case(String op, int[][] shapes, Function<Tensor[], Tensor> call) {}

  private static Case c(String op, Function<Tensor[], Tensor> call, int[]... shapes) {
    return new Case(op, shapes, call);
  }

  /** Every core op of both lists, by name. */
  private static final Map<String, Case> CASES = cases();

  private static Map<String, Case> cases() {
    List<Case> list = List.of(
        c("matmul", t -> t[0].matmul(t[1]), new int[] {3, 5}, new int[] {5, 4}),
        c("bmm", t -> LinalgOps.bmm(t[0], t[1]), new int[] {2, 3, 5}, new int[] {2, 5, 4}),
        c("addmm", t -> LinalgOps.addmm(t[0], t[1], t[2]), new int[] {4}, new int[] {3, 5}, new int[] {5, 4}),
        c("dot", t -> LinalgOps.dot(t[0], t[1]), new int[] {5}, new int[] {5}),
        c("outer", t -> LinalgOps.outer(t[0], t[1]), new int[] {3}, new int[] {4}),
        c("linear", t -> LinalgOps.linear(t[0], t[1], t[2]), new int[] {3, 5}, new int[] {4, 5}, new int[] {4}),
        c("softmax", t -> t[0].softmax(1), new int[] {3, 4}),
        c("log_softmax", t -> t[0].logSoftmax(1), new int[] {3, 4}),
        c("logsumexp", t -> ReduceOps.logsumexp(t[0], new int[] {1}, false), new int[] {3, 4}),
        c("exp", t -> t[0].exp(), new int[] {3, 4}),
        c("expm1", t -> t[0].expm1(), new int[] {3, 4}),
        c("log", t -> t[0].log(), new int[] {3, 4}),
        c("log1p", t -> t[0].log1p(), new int[] {3, 4}),
        c("pow", t -> t[0].pow(t[1]), new int[] {3, 4}, new int[] {3, 4}),
        c("pow_scalar", t -> t[0].pow(2.5), new int[] {3, 4}),
        c("reciprocal", t -> t[0].reciprocal(), new int[] {3, 4}),
        c("rsqrt", t -> t[0].rsqrt(), new int[] {3, 4}),
        c("softplus", t -> ElementwiseOps.softplus(t[0], 1.5), new int[] {3, 4}),
        c("sum", t -> t[0].sum(1, false), new int[] {3, 4}),
        c("mean", t -> t[0].mean(), new int[] {3, 4}),
        c("var", t -> ReduceOps.var(t[0], new int[] {0}, true, false), new int[] {3, 4}),
        c("std", t -> ReduceOps.std(t[0], null, true, true), new int[] {3, 4}),
        c("prod", t -> ReduceOps.prod(t[0], new int[] {1}, false), new int[] {3, 4}),
        c("norm", t -> ReduceOps.norm(t[0], 2, new int[] {1}, false), new int[] {3, 4}),
        c("cumsum", t -> ReduceOps.cumsum(t[0], 1), new int[] {3, 4}));
    Map<String, Case> m = new LinkedHashMap<>();
    for (Case k : list) m.put(k.op(), k);
    return m;
  }

  /** Positive inputs (log, rsqrt, pow with a tensor exponent), in {@code dtype}. */
  private static Tensor[] inputs(Case k, DType dtype, long seed) {
    Generator gen = new Generator(seed);
    Tensor[] t = new Tensor[k.shapes().length];
    for (int i = 0; i < t.length; i++) t[i] = Tensor.rand(gen, k.shapes()[i]).add(0.5).to(dtype);
    return t;
  }

  private static Tensor[] cast(Tensor[] t, DType dtype) {
    Tensor[] out = new Tensor[t.length];
    for (int i = 0; i < t.length; i++) out[i] = t[i].to(dtype);
    return out;
  }

  private static void assertSameBits(Tensor expected, Tensor actual, String what) {
    assertEquals(expected.dtype(), actual.dtype(), what);
    assertArrayEquals(expected.shape(), actual.shape(), what);
    assertArrayEquals(expected.to(DType.F64).toDoubleArray(), actual.to(DType.F64).toDoubleArray(), 0, what);
  }

  @Test
  void everyListedNameIsACoreOpWithACaseOrAnNnOp() {
    Set<String> listed = new TreeSet<>(Autocast.LOWER_PRECISION);
    listed.addAll(Autocast.FLOAT32);
    List<String> wrong = new ArrayList<>();
    for (String op : listed) {
      boolean core = Ops.find(op).isPresent(); // ember-core's test class path: core's definitions only
      if (core && !CASES.containsKey(op)) wrong.add(op + " (a core op without an autocast case here)");
      if (!core && !NN_OPS.contains(op)) wrong.add(op + " (neither a core op nor one of nn's)");
      if (core && NN_OPS.contains(op)) wrong.add(op + " (a core op listed as nn's)");
    }
    for (String op : CASES.keySet()) {
      if (!listed.contains(op)) wrong.add(op + " (a case for an op in neither list)");
    }
    assertTrue(wrong.isEmpty(), "autocast op lists: " + wrong);
  }

  @Test
  void lowerPrecisionOpsRunInTheScopesDtype() {
    for (DType low : new DType[] {DType.BF16, DType.F16}) {
      for (String op : Autocast.LOWER_PRECISION) {
        Case k = CASES.get(op);
        if (k == null) continue; // nn's
        Tensor[] f32 = inputs(k, DType.F32, 1);
        Tensor expected = k.call().apply(cast(f32, low)); // the op on low-precision operands, autocast off
        assertEquals(low, expected.dtype(), op);
        Tensor off = k.call().apply(f32);
        assertEquals(DType.F32, off.dtype(), op + " without a scope");
        try (var ac = Autocast.enable(low)) {
          assertSameBits(expected, k.call().apply(f32), op + " under " + low);
          Tensor[] f64 = cast(f32, DType.F64);
          assertEquals(DType.F64, k.call().apply(f64).dtype(), op + ": F64 is never cast");
          assertEquals(low, k.call().apply(cast(f32, low)).dtype(), op + " on " + low + " inputs");
        }
      }
    }
  }

  @Test
  void float32OpsRunInF32() {
    for (DType low : new DType[] {DType.BF16, DType.F16}) {
      for (String op : Autocast.FLOAT32) {
        Case k = CASES.get(op);
        if (k == null) continue; // nn's
        Tensor[] half = inputs(k, low, 2);
        assertEquals(low, k.call().apply(half).dtype(), op + " on " + low + " without a scope");
        Tensor expected = k.call().apply(cast(half, DType.F32));
        try (var ac = Autocast.enable(low)) {
          assertSameBits(expected, k.call().apply(half), op + " under " + low);
          assertSameBits(expected, k.call().apply(cast(half, DType.F32)), op + " on F32 under " + low);
          assertEquals(DType.F64, k.call().apply(cast(half, DType.F64)).dtype(), op + ": F64 is never cast");
        }
      }
    }
  }

  @Test
  void otherOpsAreUntouched() {
    Tensor x = Tensor.rand(new Generator(3), 3, 4).sub(0.5);
    Tensor y = Tensor.rand(new Generator(4), 3, 4);
    for (DType low : new DType[] {DType.BF16, DType.F16}) {
      try (var ac = Autocast.enable(low)) {
        for (Tensor in : new Tensor[] {x, x.to(low)}) {
          DType d = in.dtype();
          assertEquals(d, in.relu().dtype(), "relu");
          assertEquals(d, in.tanh().dtype(), "tanh");
          assertEquals(d, in.add(y.to(d)).dtype(), "add");
          assertEquals(d, in.mul(2).dtype(), "mul");
          assertEquals(d, in.max().dtype(), "amax");
          assertEquals(d, in.sqrt().dtype(), "sqrt");
        }
      }
    }
  }

  @Test
  void gradientsOfF32ParametersThroughLinearAreF32AndClose() {
    Generator gen = new Generator(5);
    Tensor x = Tensor.randn(gen, 16, 24);
    Tensor w0 = Tensor.randn(gen, 12, 24).mul(0.2);
    Tensor b0 = Tensor.randn(gen, 12);
    Tensor weights = Tensor.randn(gen, 16, 12); // a non-uniform upstream gradient
    Tensor[] ref = linearGrads(x, w0, b0, weights, null);
    for (DType low : new DType[] {DType.BF16, DType.F16}) {
      Tensor[] got = linearGrads(x, w0, b0, weights, low);
      double eps = low == DType.BF16 ? 0x1p-8 : 0x1p-11; // the unit roundoff of the operands' dtype
      for (int i = 0; i < 2; i++) {
        assertEquals(DType.F32, got[i].dtype(), "gradient " + i + " under " + low);
        assertArrayEquals(ref[i].shape(), got[i].shape());
        float[] r = ref[i].toFloatArray();
        float[] g = got[i].toFloatArray();
        double scale = 0;
        for (float v : r) scale = Math.max(scale, Math.abs(v));
        for (int j = 0; j < r.length; j++) {
          // x, W and the upstream gradient rounded once each, and the result: a few roundoffs of the largest term
          assertEquals(r[j], g[j], 8 * eps * scale * Math.sqrt(x.shape()[0]), "gradient " + i + "[" + j + "] " + low);
        }
      }
    }
  }

  /** dW and db of sum(linear(x, W, b) * weights), under autocast to {@code low} (null: off). */
  private static Tensor[] linearGrads(Tensor x, Tensor w0, Tensor b0, Tensor weights, DType low) {
    Tensor w = w0.clone().requiresGrad(true);
    Tensor b = b0.clone().requiresGrad(true);
    Tensor loss;
    try (var ac = low == null ? Autocast.disable() : Autocast.enable(low)) {
      Tensor y = LinalgOps.linear(x, w, b);
      assertEquals(low == null ? DType.F32 : low, y.dtype());
      loss = y.mul(weights).sum(); // BF16 * F32 promotes to F32; sum runs in F32
      assertEquals(DType.F32, loss.dtype());
    }
    loss.backward();
    return new Tensor[] {w.grad(), b.grad()};
  }

  @Test
  void mlpTrainedUnderBf16AutocastReachesTheF32Loss() {
    float f32 = trainMlp(null);
    float bf16 = trainMlp(DType.BF16);
    float f16 = trainMlp(DType.F16);
    float start = trainMlpSteps(null, 0);
    assertTrue(f32 < 0.5 * start, "F32 run learns: " + start + " -> " + f32);
    assertEquals(f32, bf16, 0.03 + 0.05 * f32, "BF16 autocast loss vs F32");
    assertEquals(f32, f16, 0.01 + 0.02 * f32, "F16 autocast loss vs F32");
  }

  private static float trainMlp(DType low) {
    return trainMlpSteps(low, 50);
  }

  /**
   * Linear(20, 32)-ReLU-Linear(32, 4) with cross-entropy written with core ops, trained {@code steps} steps of SGD on a
   * fixed batch labelled by a random teacher; returns the loss at the end (autocast to {@code low}, or off).
   */
  private static float trainMlpSteps(DType low, int steps) {
    Generator gen = new Generator(7);
    Tensor x = Tensor.randn(gen, 64, 20);
    Tensor teacher = Tensor.randn(gen, 20, 4);
    Tensor labels = x.matmul(teacher).argmax(1, true);
    Tensor w1 = Tensor.randn(gen, 32, 20).mul(0.2).requiresGrad(true);
    Tensor b1 = Tensor.zeros(32).requiresGrad(true);
    Tensor w2 = Tensor.randn(gen, 4, 32).mul(0.2).requiresGrad(true);
    Tensor b2 = Tensor.zeros(4).requiresGrad(true);
    Tensor[] params = {w1, b1, w2, b2};
    float loss = 0;
    for (int step = 0; step <= steps; step++) {
      Tensor l;
      try (var ac = low == null ? Autocast.disable() : Autocast.enable(low)) {
        Tensor h = LinalgOps.linear(x, w1, b1).relu();
        Tensor logits = LinalgOps.linear(h, w2, b2);
        assertEquals(low == null ? DType.F32 : low, logits.dtype());
        Tensor logp = logits.logSoftmax(1);
        assertEquals(DType.F32, logp.dtype(), "log_softmax runs in F32");
        l = logp.gather(1, labels).mean().neg();
      }
      loss = (float) l.item();
      if (step == steps) break;
      l.backward();
      for (int i = 0; i < params.length; i++) {
        Tensor p = params[i];
        assertEquals(DType.F32, p.grad().dtype(), "master weights get F32 gradients");
        try (var off = Grad.off()) {
          params[i] = p.sub(p.grad().mul(0.5)).detach().requiresGrad(true);
        }
      }
      w1 = params[0];
      b1 = params[1];
      w2 = params[2];
      b2 = params[3];
    }
    return loss;
  }
}
