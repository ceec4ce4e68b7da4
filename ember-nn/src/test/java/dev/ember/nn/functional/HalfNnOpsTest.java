package dev.ember.nn.functional;

import static dev.ember.testing.HalfBits.bits;
import static dev.ember.testing.HalfBits.rounded;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.HalfFloats;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/**
 * Every nn op family on BF16 and F16 inputs computes in F32 and rounds once, as PyTorch's CPU kernels: each result
 * is compared bit for bit with the same op on the inputs widened to F32, rounded with {@link HalfFloats}, and each
 * input's gradient comes back in its half dtype, equal to the F32 gradient rounded once.
 */
class HalfNnOpsTest {
  static final DType[] HALVES = {DType.BF16, DType.F16};

  private static Tensor randn(long seed, int... shape) {
    return Tensor.randn(new Generator(seed), shape);
  }

  private static Tensor labels(long seed, int classes, int... shape) {
    return Tensor.randint(new Generator(seed), 0, classes, shape);
  }



  /** {@code f} rounded to the half dtype, as a float. */
  static float inHalf(DType dtype, float f) {
    return dtype == DType.BF16 ? HalfFloats.bf16ToFloat(HalfFloats.bf16(f)) : HalfFloats.f16ToFloat(HalfFloats.f16(f));
  }

  static void assertHalfOf(DType dtype, Tensor f32Reference, Tensor got, String what) {
    assertEquals(dtype, got.dtype(), what + ": result dtype on " + dtype);
    assertArrayEquals(f32Reference.shape(), got.shape(), what + ": shape");
    assertArrayEquals(rounded(dtype, f32Reference), bits(got), what + " on " + dtype);
  }

  /**
   * {@code op} on half copies of the F32 inputs (integer ones and nulls as they are) against {@code op} on those
   * half values widened to F32: the result rounded once, and (when {@code grad}) every floating input's gradient
   * for a weighted sum of the result in the half dtype, equal to the F32 gradient rounded once.
   */
  static void check(String what, boolean grad, Function<List<Tensor>, Tensor> op, Tensor... f32) {
    for (DType dt : HALVES) {
      List<Tensor> half = new ArrayList<>();
      List<Tensor> wide = new ArrayList<>();
      for (Tensor t : f32) {
        boolean floating = t != null && t.dtype() == DType.F32;
        Tensor h = floating ? t.to(dt).requiresGrad(grad) : t;
        half.add(h);
        wide.add(floating ? h.detach().to(DType.F32).requiresGrad(grad) : t);
      }
      Tensor got = op.apply(half);
      Tensor ref = op.apply(wide);
      assertHalfOf(dt, ref, got, what);
      if (!grad) continue;
      Tensor w = Tensor.rand(new Generator(7), got.shapeRef()).to(dt).to(DType.F32); // exact in the half dtype
      got.to(DType.F32).mul(w).sum().backward();
      ref.mul(w).sum().backward();
      for (int i = 0; i < f32.length; i++) {
        Tensor h = half.get(i);
        if (h == null || !h.dtype().isHalf()) continue;
        Tensor g = wide.get(i).grad();
        if (g == null) {
          assertNull(h.grad(), what + ": input " + i + " has no F32 gradient");
          continue;
        }
        assertEquals(dt, h.grad().dtype(), what + ": gradient of input " + i + " has the input's dtype");
        assertArrayEquals(rounded(dt, g), bits(h.grad()), what + ": gradient of input " + i + " on " + dt);
      }
    }
  }

  @Test
  void convolutions() {
    Tensor x = randn(1, 2, 4, 9, 8);
    check("conv2d", true, t -> Convolution.conv2d(t.get(0), t.get(1), t.get(2), new int[] {2, 1}, new int[] {1},
        new int[] {1}, 2), x, randn(2, 6, 2, 3, 3), randn(3, 6));
    check("conv2d reflect", true, t -> Convolution.conv2d(t.get(0), t.get(1), null, new int[] {1}, new int[] {1},
        new int[] {1}, 1, "reflect"), x, randn(4, 3, 4, 3, 3));
    check("conv2d same", true, t -> Convolution.conv2d(t.get(0), t.get(1), null, new int[] {1}, "same",
        new int[] {2}, 1), x, randn(5, 3, 4, 2, 2));
    check("conv1d", true, t -> Convolution.conv1d(t.get(0), t.get(1), t.get(2), 2, 1, 1, 1), randn(6, 2, 3, 11),
        randn(7, 5, 3, 3), randn(8, 5));
    check("conv1d unbatched", true, t -> Convolution.conv1d(t.get(0), t.get(1), null), randn(9, 3, 7),
        randn(10, 2, 3, 2));
    check("conv_transpose2d", true, t -> Convolution.convTranspose2d(t.get(0), t.get(1), t.get(2), new int[] {2},
        new int[] {1}, new int[] {1}, 1, new int[] {1}), x, randn(11, 4, 3, 3, 3), randn(12, 3));
  }

  @Test
  void convolutionRefusesMixedDtypesAsTorch() {
    Tensor x = randn(1, 1, 2, 5, 5).to(DType.BF16);
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> Convolution.conv2d(x, randn(2, 3, 2, 3, 3), null));
    assertTrue(e.getMessage().startsWith("conv2d: weight has dtype float32, input has bfloat16"), e.getMessage());
  }

  @Test
  void pooling() {
    Tensor x = randn(1, 2, 3, 9, 10);
    check("max_pool2d", true, t -> Pooling.maxPool2d(t.get(0), new int[] {3}, new int[] {2}, new int[] {1},
        new int[] {1}, true), x);
    check("max_pool1d", true, t -> Pooling.maxPool1d(t.get(0), 3, 2, 1, 2, false), randn(2, 2, 3, 12));
    check("avg_pool2d", true, t -> Pooling.avgPool2d(t.get(0), new int[] {3, 2}, null, new int[] {1}, false, false,
        null), x);
    check("avg_pool1d", true, t -> Pooling.avgPool1d(t.get(0), 3, 1, 1, true, true), randn(3, 2, 4, 9));
    check("adaptive_avg_pool2d", true, t -> Pooling.adaptiveAvgPool2d(t.get(0), 4, 3), x);
    check("adaptive_avg_pool2d global", true, t -> Pooling.adaptiveAvgPool2d(t.get(0), 1), x);
    check("adaptive_max_pool2d", true, t -> Pooling.adaptiveMaxPool2d(t.get(0), 4, 3), x);
    for (DType dt : HALVES) {
      Pooling.WithIndices h = Pooling.maxPool2dWithIndices(x.to(dt), new int[] {2}, null, new int[] {0},
          new int[] {1}, false);
      Pooling.WithIndices f = Pooling.maxPool2dWithIndices(x.to(dt).to(DType.F32), new int[] {2}, null,
          new int[] {0}, new int[] {1}, false);
      assertEquals(DType.I64, h.indices().dtype());
      assertArrayEquals(f.indices().toLongArray(), h.indices().toLongArray(), "max_pool2d indices on " + dt);
      assertHalfOf(dt, f.values(), h.values(), "max_pool2d values with indices");
    }
  }

  @Test
  void normalization() {
    Tensor x = randn(1, 4, 6, 3, 5);
    Tensor c = randn(2, 6);
    check("batch_norm train", true, t -> Normalization.batchNorm(t.get(0), null, null, t.get(1), t.get(2), true), x,
        c, randn(3, 6));
    check("batch_norm eval", true, t -> Normalization.batchNorm(t.get(0), t.get(1), t.get(2), t.get(3), null, false),
        x, randn(4, 6), Tensor.rand(new Generator(5), 6).add(0.5), c);
    check("layer_norm", true, t -> Normalization.layerNorm(t.get(0), new int[] {3, 5}, t.get(1), t.get(2)), x,
        randn(6, 3, 5), randn(7, 3, 5));
    check("group_norm", true, t -> Normalization.groupNorm(t.get(0), 3, t.get(1), t.get(2)), x, c, randn(8, 6));
    check("rms_norm", true, t -> Normalization.rmsNorm(t.get(0), new int[] {5}, t.get(1), 1e-6), x, randn(9, 5));
  }

  @Test
  void rmsNormDefaultEpsIsTheHalfDtypesMachineEpsilon() {
    Tensor x = randn(1, 3, 4).mul(0.01); // small values, so eps shows in the result
    for (DType dt : HALVES) {
      double eps = dt == DType.BF16 ? 0.0078125 : 0.0009765625; // torch.finfo(dtype).eps
      Tensor h = x.to(dt);
      assertHalfOf(dt, Normalization.rmsNorm(h.to(DType.F32), new int[] {4}, null, eps),
          Normalization.rmsNorm(h, new int[] {4}, null, null), "rms_norm default eps");
    }
  }

  @Test
  void batchNormUpdatesHalfRunningStatisticsAndTakesF32ParametersAsTorch() {
    Tensor x = randn(1, 5, 3, 4);
    for (DType dt : HALVES) {
      Tensor h = x.to(dt);
      Tensor rm = randn(2, 3).to(dt);
      Tensor rv = Tensor.rand(new Generator(3), 3).add(0.5).to(dt);
      Tensor rm32 = rm.to(DType.F32);
      Tensor rv32 = rv.to(DType.F32);
      int version = rm.version();
      Tensor y = Normalization.batchNorm(h, rm, rv, null, null, true, 0.1, 1e-5);
      Tensor ref = Normalization.batchNorm(h.to(DType.F32), rm32, rv32, null, null, true, 0.1, 1e-5);
      assertHalfOf(dt, ref, y, "batch_norm with running statistics");
      assertHalfOf(dt, rm32, rm, "running_mean updated in place");
      assertHalfOf(dt, rv32, rv, "running_var updated in place");
      assertTrue(rm.version() > version, "the update bumps the running statistics' version");
      // F32 weight, bias and statistics with a half input (what nn.BatchNorm holds when its input is half)
      Tensor w = randn(4, 3);
      Tensor b = randn(5, 3);
      Tensor mixed = Normalization.batchNorm(h, null, null, w, b, true);
      assertHalfOf(dt, Normalization.batchNorm(h.to(DType.F32), null, null, w, b, true), mixed, "mixed batch_norm");
    }
  }

  @Test
  void attention() {
    Tensor q = randn(1, 2, 5, 8);
    Tensor k = randn(2, 2, 7, 8);
    Tensor v = randn(3, 2, 7, 6);
    check("sdpa", true, t -> Attention.scaledDotProductAttention(t.get(0), t.get(1), t.get(2)), q, k, v);
    check("sdpa causal", true, t -> Attention.scaledDotProductAttention(t.get(0), t.get(1), t.get(2), null, 0, true,
        null, null), q, k, v);
    Tensor mask = Tensor.rand(new Generator(4), 5, 7).gt(0.3);
    check("sdpa bool mask", true, t -> Attention.scaledDotProductAttention(t.get(0), t.get(1), t.get(2), t.get(3), 0,
        false, 0.5, null), q, k, v, mask);
    check("sdpa float mask", true, t -> Attention.scaledDotProductAttention(t.get(0), t.get(1), t.get(2), t.get(3), 0,
        false, null, null), q, k, v, randn(5, 5, 7));
    check("sdpa tiled", true, t -> Attention.scaledDotProductAttention(t.get(0), t.get(1), t.get(2), null, 0, true,
        null, Attention.NO_WINDOW, null, Attention.Kernel.tiled(2, 3)), q, k, v);
  }

  @Test
  void recurrentCell() {
    check("lstm_cell", true, t -> Recurrent.lstmCell(t.get(0), t.get(1)), randn(1, 3, 16), randn(2, 3, 4));
    check("lstm_cell unbatched", true, t -> Recurrent.lstmCell(t.get(0), t.get(1)), randn(3, 8), randn(4, 2));
    check("gru_cell", true, t -> Recurrent.gruCell(t.get(0), t.get(1), t.get(2), t.get(3), t.get(4), t.get(5)),
        randn(5, 3, 4), randn(6, 3, 2), randn(7, 6, 4), randn(8, 6, 2), randn(9, 6), randn(10, 6));
    check("rnn_cell", true, t -> Recurrent.rnnCell(t.get(0), t.get(1), t.get(2), t.get(3), null, t.get(4), "tanh"),
        randn(11, 4), randn(12, 3), randn(13, 3, 4), randn(14, 3, 3), randn(15, 3));
    check("bilinear", true, t -> F.bilinear(t.get(0), t.get(1), t.get(2), t.get(3)), randn(16, 2, 3, 4),
        randn(17, 2, 3, 5), randn(18, 6, 4, 5), randn(19, 6));
  }

  @Test
  void embedding() {
    Tensor idx = Tensor.of(new long[] {1, 4, 1, 0, 3, 1}, 2, 3);
    check("embedding", true, t -> Embeddings.embedding(t.get(0), t.get(1)), idx, randn(1, 5, 4));
    check("embedding padding_idx", true, t -> Embeddings.embedding(t.get(0), t.get(1), 1, null, 2), idx,
        randn(2, 5, 4));
    for (DType dt : HALVES) { // max_norm renormalizes the caller's half weight in place, as torch.embedding_renorm_
      Tensor w = randn(3, 5, 4).mul(3).to(dt);
      Tensor w32 = w.to(DType.F32);
      Tensor y = Embeddings.embedding(idx, w, null, 1.0, 2);
      Tensor ref = Embeddings.embedding(idx, w32, null, 1.0, 2);
      assertHalfOf(dt, ref, y, "embedding max_norm");
      assertHalfOf(dt, w32, w, "renormalized weight");
    }
  }

  @Test
  void dropoutMatchesTorchsHalfDropoutBitForBit() {
    Tensor x = randn(1, 40, 30);
    for (DType dt : HALVES) {
      Tensor h = x.to(dt);
      for (double p : new double[] {0.1, 0.3, 0.5}) {
        Tensor y = Dropouts.dropout(h, p, true, new Generator(9));
        Tensor kept = Dropouts.dropout(Tensor.ones(40, 30), p, true, new Generator(9)).ne(0);
        // torch: bernoulli_(1 - p) on a half tensor, div_(1 - p) rounds the scale to the half dtype, then one product
        float scale = inHalf(dt, (float) (1 / (1 - p)));
        Tensor ref = h.to(DType.F32).mul(scale).mul(kept.to(DType.F32));
        assertHalfOf(dt, ref, y, "dropout p=" + p);
      }
      Tensor y2 = Dropouts.dropout2d(h.reshape(2, 4, 5, 30), 0.3, true, new Generator(5));
      Tensor kept2 = Dropouts.dropout2d(Tensor.ones(2, 4, 5, 30), 0.3, true, new Generator(5)).ne(0);
      float scale2 = inHalf(dt, (float) (1 / 0.7));
      assertHalfOf(dt, h.reshape(2, 4, 5, 30).to(DType.F32).mul(scale2).mul(kept2.to(DType.F32)), y2, "dropout2d");
    }
    check("alpha_dropout", true, t -> Dropouts.alphaDropout(t.get(0), 0.2, true, new Generator(3)), x);
    check("dropout eval", false, t -> Dropouts.dropout(t.get(0), 0.2, false, new Generator(3)), x);
  }

  @Test
  void upsamplingAndPadding() {
    Tensor x = randn(1, 2, 3, 5, 4);
    check("nearest", true, t -> Upsampling.interpolate(t.get(0), 1.7, "nearest"), x);
    check("nearest 1d", true, t -> Upsampling.interpolate(t.get(0), new int[] {9}, "nearest"), randn(2, 2, 3, 4));
    check("bilinear", true, t -> Upsampling.interpolate(t.get(0), null, new double[] {2.3, 1.5}, "bilinear", false,
        null), x);
    check("bilinear align_corners", true, t -> Upsampling.interpolate(t.get(0), new int[] {7, 6}, null, "bilinear",
        true, null), x);
    for (String mode : new String[] {"constant", "reflect", "replicate", "circular"}) {
      check("pad " + mode, true, t -> Padding.pad(t.get(0), new int[] {2, 1, 1, 3}, mode, 0.3), x);
    }
  }

  @Test
  void regressionAndBinaryLosses() {
    Tensor a = randn(1, 4, 6);
    Tensor b = randn(2, 4, 6);
    for (Reduction r : new Reduction[] {Reduction.NONE, Reduction.MEAN, Reduction.SUM}) {
      check("mse " + r, true, t -> Losses.mseLoss(t.get(0), t.get(1), r), a, b);
      check("l1 " + r, true, t -> Losses.l1Loss(t.get(0), t.get(1), r), a, b);
    }
    check("smooth_l1", true, t -> Losses.smoothL1Loss(t.get(0), t.get(1), Reduction.SUM, 0.5), a, b);
    check("huber", true, t -> Losses.huberLoss(t.get(0), t.get(1), Reduction.MEAN, 0.7), a, b);
    Tensor p = randn(3, 4, 6).sigmoid();
    Tensor target = Tensor.rand(new Generator(4), 4, 6);
    check("bce", true, t -> Losses.bceLoss(t.get(0), t.get(1), t.get(2), Reduction.MEAN), p, target,
        Tensor.rand(new Generator(5), 6));
    check("bce_with_logits", true, t -> Losses.bceWithLogits(t.get(0), t.get(1), t.get(2), Reduction.SUM, t.get(3)),
        a, target, Tensor.rand(new Generator(6), 4, 6), Tensor.rand(new Generator(7), 6).add(0.5));
    check("kl_div", true, t -> Losses.klDiv(t.get(0), t.get(1), Reduction.BATCHMEAN, false), a.logSoftmax(1),
        b.softmax(1));
    check("sigmoid_focal", true, t -> Losses.sigmoidFocalLoss(t.get(0), t.get(1), 0.25, 2, Reduction.MEAN), a, target);
    check("dice", true, t -> Losses.diceLoss(t.get(0), t.get(1), 1e-5, Reduction.MEAN), p, target);
  }

  @Test
  void classificationLosses() {
    Tensor logits = randn(1, 6, 5);
    Tensor y = labels(2, 5, 6);
    Tensor yIgnored = Tensor.of(new long[] {0, 3, -100, 4, 1, -100}, 6);
    check("cross_entropy", true, t -> Losses.crossEntropy(t.get(0), t.get(1)), logits, y);
    check("cross_entropy weighted smoothed", true, t -> Losses.crossEntropy(t.get(0), t.get(1), t.get(2), -100,
        Reduction.MEAN, 0.1), logits, yIgnored, Tensor.rand(new Generator(3), 5).add(0.5));
    check("cross_entropy probabilities", true, t -> Losses.crossEntropy(t.get(0), t.get(1), null, -100,
        Reduction.SUM, 0), logits, randn(4, 6, 5).softmax(1));
    check("cross_entropy 4-d", true, t -> Losses.crossEntropy(t.get(0), t.get(1), Reduction.NONE), randn(5, 2, 5, 3,
        2), labels(6, 5, 2, 3, 2));
    check("nll", true, t -> Losses.nllLoss(t.get(0), t.get(1), null, -100, Reduction.MEAN), logits.logSoftmax(1),
        yIgnored);
    check("focal", true, t -> Losses.focalLoss(t.get(0), t.get(1), t.get(2), 2, -100, Reduction.MEAN), logits, y,
        Tensor.rand(new Generator(7), 5));
    check("poly", true, t -> Losses.polyLoss(t.get(0), t.get(1), 1.0, 0.1, -100, Reduction.MEAN), logits, yIgnored);
  }

  @Test
  void embeddingAndRankingLosses() {
    Tensor a = randn(1, 5, 4);
    Tensor b = randn(2, 5, 4);
    Tensor sign = Tensor.of(new float[] {1, -1, -1, 1, 1}, 5);
    check("cosine_embedding", true, t -> Losses.cosineEmbeddingLoss(t.get(0), t.get(1), t.get(2), 0.2,
        Reduction.MEAN), a, b, sign);
    check("margin_ranking", true, t -> Losses.marginRankingLoss(t.get(0), t.get(1), t.get(2), 0.1, Reduction.SUM),
        a.select(1, 0), b.select(1, 0), sign);
    check("hinge_embedding", true, t -> Losses.hingeEmbeddingLoss(t.get(0), t.get(1), 1.0, Reduction.MEAN), a,
        Tensor.of(new float[] {1, -1, 1, -1}, 4).expand(5, 4).contiguous());
    check("triplet_margin", true, t -> Losses.tripletMarginLoss(t.get(0), t.get(1), t.get(2), 1.0, 2, 1e-6, true,
        Reduction.MEAN), a, b, randn(3, 5, 4));
  }

  @Test
  void aLossOfAHalfAndAnF32OperandIsF32AsTorchsPromotion() {
    Tensor a = randn(1, 4, 6);
    Tensor b = randn(2, 4, 6);
    Tensor got = Losses.mseLoss(a.to(DType.BF16), b);
    assertEquals(DType.F32, got.dtype());
    assertEquals(Losses.mseLoss(a.to(DType.BF16).to(DType.F32), b).item(), got.item());
    assertEquals(DType.F32, Losses.crossEntropy(randn(3, 4, 3).to(DType.F16), labels(4, 3, 4), Tensor.ones(3),
        -100, Reduction.MEAN, 0).dtype());
  }
}
