package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Behaviour of the curve and ranking metrics beyond the sklearn fixtures. */
class RankingMetricsTest {
  private static Tensor scores(double... v) {
    return Tensor.of(v, v.length);
  }

  private static Tensor labels(long... v) {
    return Tensor.of(v, v.length);
  }

  @Test
  void rocCurveOfASmallExampleByHand() {
    // sklearn: roc_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8]) -> fpr [0, 0, .5, .5, 1], tpr [0, .5, .5, 1, 1],
    // thresholds [1.8, 0.8, 0.4, 0.35, 0.1]
    RocCurve roc = new RocCurve();
    roc.update(scores(0.1, 0.4, 0.35, 0.8), labels(0, 0, 1, 1));
    RocCurve.Result r = roc.compute();
    assertArrayEquals(new double[] {0, 0, 0.5, 0.5, 1}, r.fpr());
    assertArrayEquals(new double[] {0, 0.5, 0.5, 1, 1}, r.tpr());
    assertArrayEquals(new double[] {1.8, 0.8, 0.4, 0.35, 0.1}, r.thresholds());
    RocAuc auc = new RocAuc();
    auc.update(scores(0.1, 0.4, 0.35, 0.8), labels(0, 0, 1, 1));
    assertEquals(0.75, auc.compute());
  }

  @Test
  void negativeZeroTiesWithZero() {
    RocCurve a = new RocCurve();
    a.update(scores(-0.0, 0.0, 1.0), labels(1, 0, 1));
    RocCurve b = new RocCurve();
    b.update(scores(0.0, 0.0, 1.0), labels(1, 0, 1));
    assertArrayEquals(b.compute().thresholds(), a.compute().thresholds());
    assertEquals(3, a.compute().thresholds().length);  // 2, 1, 0: the two zeros are one threshold
  }

  @Test
  void precisionRecallCurveOfASmallExampleByHand() {
    // sklearn: precision_recall_curve([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    PrecisionRecallCurve pr = new PrecisionRecallCurve();
    pr.update(scores(0.1, 0.4, 0.35, 0.8), labels(0, 0, 1, 1));
    PrecisionRecallCurve.Result r = pr.compute();
    assertArrayEquals(new double[] {0.5, 2.0 / 3, 0.5, 1, 1}, r.precision(), 1e-15);
    assertArrayEquals(new double[] {1, 1, 0.5, 0.5, 0}, r.recall());
    assertArrayEquals(new double[] {0.1, 0.35, 0.4, 0.8}, r.thresholds());
    AveragePrecision ap = new AveragePrecision();
    ap.update(scores(0.1, 0.4, 0.35, 0.8), labels(0, 0, 1, 1));
    assertEquals(0.8333333333333333, ap.compute(), 1e-15);  // sklearn average_precision_score
  }

  @Test
  void rocWithoutNegativesHasNaNFalsePositiveRate() {
    RocCurve roc = new RocCurve();
    roc.update(scores(0.3, 0.6), labels(1, 1));
    RocCurve.Result r = roc.compute();
    for (double f : r.fpr()) assertTrue(Double.isNaN(f));
    assertArrayEquals(new double[] {0, 0.5, 1}, r.tpr());
  }

  @Test
  void rocAucIsUndefinedForOneClass() {
    RocAuc auc = new RocAuc();
    auc.update(scores(0.3, 0.6), labels(0, 0));
    var e = assertThrows(IllegalStateException.class, auc::compute);
    assertEquals("RocAuc.compute: only one class present in the targets (0); ROC AUC is undefined", e.getMessage());
    RocAuc ovr = new RocAuc(3, Average.MACRO);
    ovr.update(Tensor.of(new double[][] {{0.5, 0.3, 0.2}, {0.1, 0.8, 0.1}}), labels(0, 1));
    var m = assertThrows(IllegalStateException.class, ovr::compute);
    assertEquals("RocAuc.compute: class 2 never occurs in the targets (2 samples); its one-vs-rest ROC AUC is undefined",
        m.getMessage());
  }

  @Test
  void rejectsNonFiniteScores() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new RocAuc().update(scores(0.1, Double.NaN), labels(0, 1)));
    assertEquals("RocAuc.update: scores must be finite (got NaN at flat index 1): output=[2], target=[2]", e.getMessage());
  }

  @Test
  void binaryRankingNeedsOneScorePerSample() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new AveragePrecision().update(Tensor.zeros(2, 2), labels(0, 1)));
    assertEquals("AveragePrecision.update: output must be [B] or [B, 1] floating scores of the positive class "
        + "(got [2, 2] float32): output=[2, 2], target=[2]; hint: for [B, 2] probabilities pass output.select(1, 1)",
        e.getMessage());
    var t = assertThrows(TensorArgumentException.class,
        () -> new RocCurve().update(scores(0.1, 0.2), labels(0, 2)));
    assertEquals("RocCurve.update: binary targets must be 0 or 1 (got 2 at index 1): output=[2], target=[2]",
        t.getMessage());
    var m = assertThrows(TensorArgumentException.class,
        () -> new MeanAveragePrecision(3).update(Tensor.zeros(2, 4), labels(0, 1)));
    assertEquals("MeanAveragePrecision.update: output must be [B, 3] floating scores (got [2, 4] float32): "
        + "output=[2, 4], target=[2]", m.getMessage());
  }

  @Test
  void columnScoresAreAccepted() {
    RocAuc a = new RocAuc();
    a.update(Tensor.of(new double[] {0.1, 0.4, 0.35, 0.8}, 4, 1), labels(0, 0, 1, 1));
    assertEquals(0.75, a.compute());
  }

  @Test
  void oneVsRestConfigurationIsChecked() {
    assertThrows(IllegalArgumentException.class, () -> new RocAuc(3, Average.MICRO));
    assertThrows(IllegalArgumentException.class, () -> new RocAuc(1, Average.MACRO));
    assertThrows(IllegalArgumentException.class, () -> new MeanAveragePrecision(1));
    assertEquals("roc_auc_weighted", new RocAuc(3, Average.WEIGHTED).name());
    var e = assertThrows(IllegalArgumentException.class,
        () -> new RocAuc(3, Average.MACRO).merge(new RocAuc(3, Average.WEIGHTED)));
    assertEquals("RocAuc.merge: configurations differ (roc_auc_macro vs roc_auc_weighted)", e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new RocAuc(3, Average.MACRO).merge(new RocAuc()));
  }

  @Test
  void rocAucEqualsThePairwiseOrderingProbability() {
    // AUC = P(score of a random positive > score of a random negative) + 0.5 P(tie)
    Random rnd = new Random(5);
    int n = 400;
    double[] s = new double[n];
    long[] y = new long[n];
    for (int i = 0; i < n; i++) {
      y[i] = rnd.nextInt(2);
      s[i] = Math.round((rnd.nextGaussian() + y[i]) * 4) / 4.0;  // coarse: many ties
    }
    double wins = 0;
    long pairs = 0;
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < n; j++) {
        if (y[i] == 1 && y[j] == 0) {
          pairs++;
          wins += s[i] > s[j] ? 1 : s[i] == s[j] ? 0.5 : 0;
        }
      }
    }
    RocAuc auc = new RocAuc();
    auc.update(scores(s), labels(y));
    assertEquals(wins / pairs, auc.compute(), 1e-12);
  }

  @Test
  void mergeAppendsScoresAndResetForgets() {
    AveragePrecision a = new AveragePrecision();
    AveragePrecision b = a.emptyCopy();
    a.update(scores(0.1, 0.4), labels(0, 0));
    b.update(scores(0.35, 0.8), labels(1, 1));
    a.merge(b);
    assertEquals(4, a.count());
    assertEquals(0.8333333333333333, a.compute(), 1e-15);  // as the four scores in one batch
    a.reset();
    assertEquals(0, a.count());
    var e = assertThrows(IllegalStateException.class, a::compute);
    assertEquals("AveragePrecision.compute: no samples seen since the last reset", e.getMessage());
  }

  @Test
  void meanAveragePrecisionGivesAbsentClassesZero() {
    MeanAveragePrecision map = new MeanAveragePrecision(3);
    map.update(Tensor.of(new double[][] {{0.7, 0.2, 0.1}, {0.2, 0.7, 0.1}, {0.6, 0.3, 0.1}}), labels(0, 1, 0));
    assertArrayEquals(new double[] {1, 1, 0}, map.perClass());
    assertEquals(2.0 / 3, map.compute(), 1e-15);
  }

  @Test
  void growsPastManyBatches() {
    RocAuc auc = new RocAuc();
    Random rnd = new Random(9);
    for (int b = 0; b < 50; b++) {
      double[] s = new double[37];
      long[] y = new long[37];
      for (int i = 0; i < 37; i++) {
        y[i] = (b + i) % 2;
        s[i] = rnd.nextDouble() + 0.3 * y[i];
      }
      auc.update(scores(s), labels(y));
    }
    assertEquals(50 * 37, auc.count());
    double v = auc.compute();
    assertTrue(v > 0.6 && v < 0.9, "auc " + v);
  }
}
