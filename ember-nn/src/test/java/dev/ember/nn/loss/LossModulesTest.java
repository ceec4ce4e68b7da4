package dev.ember.nn.loss;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.nn.functional.Losses;
import dev.ember.nn.functional.Reduction;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The loss modules hand their settings to the functions (which are checked against PyTorch in
 * LossesFixtureTest): each module must give exactly the function's value for the same settings.
 */
class LossModulesTest {
  private final Generator g = new Generator(5);
  private final Tensor logits = Tensor.randn(g, 6, 4);
  private final Tensor labels = Tensor.of(new long[] {0, 3, 1, -100, 2, 2}, 6);
  private final Tensor x = Tensor.randn(g, 6, 4);
  private final Tensor y = Tensor.randn(g, 6, 4);
  private final Tensor p = Tensor.rand(g, 6, 4);
  private final Tensor t01 = Tensor.rand(g, 6, 4).gt(0.5).to(DType.F32);
  private final Tensor w = Tensor.rand(g, 4).add(0.5);

  private static void same(Tensor want, Tensor got) {
    assertArrayEquals(want.shape(), got.shape());
    assertArrayEquals(want.toFloatArray(), got.toFloatArray());
  }

  @Test
  void modulesEqualTheirFunctions() {
    same(Losses.mseLoss(x, y), new MSELoss().forward(x, y));
    same(Losses.mseLoss(x, y, Reduction.NONE), new MSELoss(Reduction.NONE).forward(x, y));
    same(Losses.l1Loss(x, y, Reduction.SUM), new L1Loss(Reduction.SUM).forward(x, y));
    same(Losses.smoothL1Loss(x, y, Reduction.MEAN, 0.5), new SmoothL1Loss(0.5, Reduction.MEAN).forward(x, y));
    same(Losses.huberLoss(x, y, Reduction.MEAN, 2), new HuberLoss(2, Reduction.MEAN).forward(x, y));
    same(Losses.bceLoss(p, t01, w, Reduction.MEAN), new BCELoss(w, Reduction.MEAN).forward(p, t01));
    same(Losses.bceWithLogits(x, t01, null, Reduction.SUM, w), new BCEWithLogitsLoss(null, w, Reduction.SUM).forward(x, t01));
    same(Losses.crossEntropy(logits, labels), new CrossEntropyLoss().forward(logits, labels));
    same(Losses.crossEntropy(logits, labels, w, -100, Reduction.MEAN, 0.1),
        new CrossEntropyLoss(w, -100, 0.1, Reduction.MEAN).forward(logits, labels));
    Tensor logp = logits.logSoftmax(1);
    same(Losses.nllLoss(logp, labels, w, -100, Reduction.SUM), new NLLLoss(w, -100, Reduction.SUM).forward(logp, labels));
    same(Losses.klDiv(logp, p.softmax(1), Reduction.BATCHMEAN, false),
        new KLDivLoss(false, Reduction.BATCHMEAN).forward(logp, p.softmax(1)));
    Tensor pm = t01.mul(2).sub(1);
    same(Losses.hingeEmbeddingLoss(x, pm, 0.5, Reduction.MEAN), new HingeEmbeddingLoss(0.5, Reduction.MEAN).forward(x, pm));
    same(Losses.sigmoidFocalLoss(x, t01, 0.25, 2, Reduction.MEAN), new SigmoidFocalLoss().forward(x, t01));
    same(Losses.focalLoss(logits, labels, w, 1.5, -100, Reduction.MEAN), new FocalLoss(w, 1.5, -100, Reduction.MEAN).forward(logits, labels));
    Tensor lab = Tensor.of(new long[] {0, 3, 1, 1, 2, 2}, 6);
    same(Losses.diceLoss(logits, lab, 1e-5, Reduction.MEAN), new DiceLoss().forward(logits, lab));
    same(Losses.polyLoss(logits, labels, 1, 0, -100, Reduction.MEAN), new PolyLoss().forward(logits, labels));
    Tensor pm1 = Tensor.of(new float[] {1, -1, 1, 1, -1, -1}, 6);
    same(Losses.cosineEmbeddingLoss(x, y, pm1, 0.1, Reduction.MEAN), new CosineEmbeddingLoss(0.1, Reduction.MEAN).forward(x, y, pm1));
    Tensor a = x.select(1, 0), b = y.select(1, 0);
    same(Losses.marginRankingLoss(a, b, pm1, 0.2, Reduction.SUM), new MarginRankingLoss(0.2, Reduction.SUM).forward(a, b, pm1));
    same(Losses.tripletMarginLoss(x, y, p, 1, 2, 1e-6, true, Reduction.MEAN),
        new TripletMarginLoss(1, 2, 1e-6, true, Reduction.MEAN).forward(x, y, p));
  }

  @Test
  void weightsAreBuffersThatFollowTheModule() {
    BCEWithLogitsLoss l = new BCEWithLogitsLoss(w, w, Reduction.MEAN);
    assertEquals(List.of("weight", "pos_weight"), List.copyOf(l.stateDict().keySet()));
    l.to(DType.F64);
    assertEquals(DType.F64, l.buffer("pos_weight").dtype());
    assertEquals(List.of(), List.copyOf(new CrossEntropyLoss().stateDict().keySet()));
    assertEquals("CrossEntropyLoss()", new CrossEntropyLoss().toString());
    assertEquals("TripletMarginLoss()", new TripletMarginLoss().toString()); // as PyTorch prints it
    assertEquals("CrossEntropyLoss: reduction must not be null",
        assertThrows(IllegalArgumentException.class, () -> new CrossEntropyLoss(null, -100, 0, null)).getMessage());
  }
}
