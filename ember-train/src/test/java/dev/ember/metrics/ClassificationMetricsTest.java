package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

/** Behaviour of Accuracy, ConfusionMatrix and the precision/recall/F family beyond the sklearn fixtures. */
class ClassificationMetricsTest {
  private static Tensor labels(long... v) {
    return Tensor.of(v, v.length);
  }

  @Test
  void rejectsAnOutputOfRankThreeNamingItsShape() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Accuracy().update(Tensor.zeros(3, 4, 5), labels(0, 1, 2)));
    assertEquals("Accuracy.update: output must be [B, C] or [B] (got [3, 4, 5]): target=[3]", e.getMessage());
    assertEquals("Accuracy.update", e.op());
  }

  @Test
  void rejectsDifferentBatchSizes() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Accuracy().update(Tensor.zeros(4, 10), labels(0, 1, 2)));
    assertEquals("Accuracy.update: batch sizes differ (4 vs 3): output=[4, 10], target=[3]", e.getMessage());
  }

  @Test
  void rejectsTargetsOutsideTheClassRange() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Accuracy().update(Tensor.zeros(2, 3), labels(0, 3)));
    assertEquals("Accuracy.update: target label 3 at index 1 is outside [0, 3): output=[2, 3], target=[2]",
        e.getMessage());
    assertThrows(TensorArgumentException.class, () -> new F1Score(3, Average.MACRO).update(Tensor.zeros(2, 3), labels(-1, 0)));
  }

  @Test
  void rejectsFractionalFloatLabelsButAcceptsWholeOnes() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Accuracy().update(Tensor.zeros(2, 3), Tensor.of(new double[] {0, 1.5}, 2)));
    assertEquals("Accuracy.update: target labels must be whole numbers (got 1.5 at index 1): output=[2, 3], target=[2]",
        e.getMessage());
    Accuracy a = new Accuracy();
    a.update(Tensor.of(new double[][] {{0, 1}, {1, 0}}), Tensor.of(new double[] {1, 1}, 2));
    assertEquals(0.5, a.compute());
  }

  @Test
  void rejectsTargetsThatAreNotOneDimensional() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Accuracy().update(Tensor.zeros(2, 3), Tensor.zeros(DType.I64, 2, 1)));
    assertEquals("Accuracy.update: target must be [B] class labels (got [2, 1]): output=[2, 3], target=[2, 1]",
        e.getMessage());
  }

  @Test
  void topKRanksTiesByClassIndex() {
    // all three scores tie: the ranking is 0, 1, 2
    Tensor out = Tensor.of(new double[][] {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}});
    Accuracy top2 = Accuracy.topK(2);
    top2.update(out, labels(0, 1, 2));
    assertEquals(2.0 / 3, top2.compute());
    assertEquals("top2_accuracy", top2.name());
    Accuracy top1 = new Accuracy();
    top1.update(out, labels(0, 1, 2));
    assertEquals(1.0 / 3, top1.compute());
  }

  @Test
  void topKCountsTargetsAmongTheHighestScores() {
    Tensor out = Tensor.of(new double[][] {{0.1, 0.5, 0.4}, {0.7, 0.2, 0.1}, {0.3, 0.3, 0.4}});
    Accuracy top2 = Accuracy.topK(2);
    top2.update(out, labels(2, 2, 1));  // 2 is second in row 0, last in row 1; row 2: 1 ties 0 but ranks after it
    assertEquals(1.0 / 3, top2.compute());
    Accuracy top3 = Accuracy.topK(3);
    top3.update(out, labels(2, 2, 1));
    assertEquals(1.0, top3.compute());
  }

  @Test
  void nanScoresRankFirstAsInNumpy() {
    Tensor out = Tensor.of(new double[][] {{0.1, Double.NaN, 0.5}, {Double.NaN, 0.9, 0.2}});
    Accuracy top1 = new Accuracy();
    top1.update(out, labels(1, 1));  // argmax: 1, 0
    assertEquals(0.5, top1.compute());
    ConfusionMatrix cm = new ConfusionMatrix(3);
    cm.update(out, labels(1, 1));
    assertArrayEquals(new long[][] {{0, 0, 0}, {1, 1, 0}, {0, 0, 0}}, cm.compute());
    Accuracy top2 = Accuracy.topK(2);
    top2.update(out, labels(2, 1));  // row 0: NaN, 0.5 | row 1: NaN, 0.9
    assertEquals(1.0, top2.compute());
  }

  @Test
  void topKNeedsScores() {
    var e = assertThrows(TensorArgumentException.class, () -> Accuracy.topK(2).update(labels(0, 1), labels(0, 1)));
    assertEquals("Accuracy.update: top-2 accuracy needs [B, C] scores: output=[2], target=[2]", e.getMessage());
  }

  @Test
  void binaryScoresAreThresholdedAndColumnVectorsAccepted() {
    Tensor scores = Tensor.of(new double[] {0.2, 0.5, 0.7, 0.49}, 4);
    Accuracy a = new Accuracy();
    a.update(scores, labels(0, 1, 1, 1));
    assertEquals(0.75, a.compute());
    Accuracy logits = new Accuracy(1, 0.0);
    logits.update(Tensor.of(new double[] {-1, 2, 0}, 3, 1), labels(0, 1, 1));
    assertEquals(1.0, logits.compute());
    var e = assertThrows(TensorArgumentException.class, () -> new Accuracy().update(scores, labels(0, 1, 2, 1)));
    assertEquals("Accuracy.update: binary scores need targets 0 or 1 (got 2 at index 2): output=[4], target=[4]",
        e.getMessage());
  }

  @Test
  void predictedLabelsCompareDirectly() {
    Accuracy a = new Accuracy();
    a.update(Tensor.of(new int[] {3, 1, 4, 1}, 4), labels(3, 1, 4, 2));
    assertEquals(0.75, a.compute());
  }

  @Test
  void outputTapeIsNotNeeded() {
    Tensor out = Tensor.of(new double[][] {{0.1, 0.9}, {0.8, 0.2}}).requiresGrad(true);
    Precision p = new Precision(2, Average.BINARY);
    p.update(out.mul(2.0), labels(1, 1));
    assertEquals(1.0, p.compute());
  }

  @Test
  void nonContiguousAndFloat32ViewsReadAsTheirValues() {
    // [C, B] transposed to a non-contiguous [B, C] view; and a float32 slice with an offset
    Tensor cb = Tensor.of(new double[][] {{0.9, 0.1, 0.2}, {0.1, 0.8, 0.3}});
    Accuracy a = new Accuracy();
    a.update(cb.t(), Tensor.of(new int[] {0, 1, 0}, 3));
    assertEquals(2.0 / 3, a.compute(), 1e-15);
    Tensor f32 = Tensor.of(new float[] {5f, 0.25f, 0.75f, 0.5f}, 4).narrow(0, 1, 3);
    Accuracy b = new Accuracy();
    b.update(f32, Tensor.of(new boolean[] {false, true, true}, 3));
    assertEquals(1.0, b.compute());
  }

  @Test
  void computeBeforeAnyUpdateIsALifecycleError() {
    var e = assertThrows(IllegalStateException.class, () -> new Accuracy().compute());
    assertEquals("accuracy.compute: no samples seen since the last reset", e.getMessage());
    assertThrows(IllegalStateException.class, () -> new F1Score(3, Average.MACRO).compute());
  }

  @Test
  void resetForgetsAndEmptyCopyKeepsConfiguration() {
    FBetaScore f = new FBetaScore(0.5, 3, Average.WEIGHTED, 0.3);
    f.update(Tensor.of(new double[][] {{1, 0, 0}, {0, 1, 0}}), labels(0, 2));
    f.reset();
    assertThrows(IllegalStateException.class, f::compute);
    FBetaScore copy = f.emptyCopy();
    assertEquals("f0.5_weighted", copy.name());
    assertEquals(0.5, copy.beta());
    assertEquals(3, copy.numClasses());
    assertEquals(Average.WEIGHTED, copy.average());
    assertThrows(IllegalStateException.class, copy::compute);
  }

  @Test
  void namesFollowTheAverage() {
    assertEquals("precision", new Precision(2, Average.BINARY).name());
    assertEquals("recall_micro", new Recall(4, Average.MICRO).name());
    assertEquals("f1_macro", new F1Score(4, Average.MACRO).name());
    assertEquals("f2_macro", new FBetaScore(2, 4, Average.MACRO).name());
    assertEquals("accuracy", new Accuracy().name());
    assertEquals("confusion_matrix", new ConfusionMatrix(3).name());
  }

  @Test
  void binaryAverageNeedsTwoClasses() {
    var e = assertThrows(IllegalArgumentException.class, () -> new Precision(3, Average.BINARY));
    assertEquals("Precision: average BINARY needs numClasses 2, got 3; hint: use MICRO, MACRO or WEIGHTED for more classes",
        e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new Recall(1, Average.MACRO));
    assertThrows(IllegalArgumentException.class, () -> new FBetaScore(-1, 2, Average.MACRO));
    assertThrows(IllegalArgumentException.class, () -> new Accuracy(0, 0.5));
  }

  @Test
  void scoreVectorsNeedABinaryMetric() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new Recall(3, Average.MACRO).update(Tensor.of(new double[] {0.2, 0.9}, 2), labels(0, 1)));
    assertEquals("Recall.update: one score per sample needs a binary metric (numClasses 2, got 3): output=[2], "
        + "target=[2]; hint: pass [B, C] scores or predicted labels as an integer tensor", e.getMessage());
  }

  @Test
  void classCountMustMatchTheOutput() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new F1Score(3, Average.MACRO).update(Tensor.zeros(2, 4), labels(0, 1)));
    assertEquals("F1Score.update: output has 4 classes, the metric 3: output=[2, 4], target=[2]", e.getMessage());
  }

  @Test
  void undefinedRatiosCountAsZero() {
    // class 2 is neither predicted nor present: precision, recall and F are 0 for it and it still counts in MACRO
    Tensor pred = labels(0, 1, 1, 0);
    Tensor y = labels(0, 1, 0, 0);
    Precision p = new Precision(3, Average.MACRO);
    p.update(pred, y);
    assertEquals((1.0 + 0.5 + 0.0) / 3, p.compute(), 1e-15);
    Recall r = new Recall(3, Average.WEIGHTED);
    r.update(pred, y);
    assertEquals((2.0 / 3 * 3 + 1.0 * 1) / 4, r.compute(), 1e-15);
    F1Score f = new F1Score(3, Average.MICRO);
    f.update(pred, y);
    assertEquals(0.75, f.compute(), 1e-15);
  }

  @Test
  void confusionMatrixCountsAndNormalizes() {
    ConfusionMatrix cm = new ConfusionMatrix(3);
    cm.update(labels(0, 1, 1, 2, 0), labels(0, 1, 2, 2, 1));
    assertArrayEquals(new long[][] {{1, 0, 0}, {1, 1, 0}, {0, 1, 1}}, cm.compute());
    assertEquals(5, cm.total());
    double[][] byTrue = cm.normalized(ConfusionMatrix.Normalize.TRUE);
    assertArrayEquals(new double[] {0.5, 0.5, 0}, byTrue[1]);
    double[][] byPred = cm.normalized(ConfusionMatrix.Normalize.PRED);
    assertArrayEquals(new double[] {0.5, 0, 0}, byPred[0]);
    cm.compute()[0][0] = 99;  // a copy: the counts are not exposed
    assertEquals(1, cm.compute()[0][0]);
  }

  @Test
  void mergeChecksKindAndConfiguration() {
    Accuracy a = new Accuracy();
    var self = assertThrows(IllegalArgumentException.class, () -> a.merge(a));
    assertEquals("Accuracy.merge: cannot merge a metric into itself", self.getMessage());
    var cfg = assertThrows(IllegalArgumentException.class, () -> a.merge(Accuracy.topK(3)));
    assertEquals("Accuracy.merge: configurations differ (k 1 vs 3, threshold 0.5 vs 0.5)", cfg.getMessage());
    F1Score f = new F1Score(3, Average.MACRO);
    assertThrows(IllegalArgumentException.class, () -> f.merge(new F1Score(3, Average.MICRO)));
    assertThrows(IllegalArgumentException.class, () -> f.merge(new F1Score(4, Average.MACRO)));
    var kind = assertThrows(IllegalArgumentException.class, () -> f.merge(new Precision(3, Average.MACRO)));
    assertEquals("F1Score.merge: expected another F1Score, got Precision", kind.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> new FBetaScore(2, 3, Average.MACRO).merge(new FBetaScore(0.5, 3, Average.MACRO)));
  }

  @Test
  void mergeAddsCounts() {
    Accuracy a = new Accuracy();
    Accuracy b = a.emptyCopy();
    a.update(labels(1, 1), labels(1, 0));
    b.update(labels(2, 2, 2), labels(2, 2, 2));
    a.merge(b);
    assertEquals(0.8, a.compute());
    ConfusionMatrix m = new ConfusionMatrix(2);
    m.merge(new ConfusionMatrix(2));  // empty into empty stays empty
    assertFalse(m.total() > 0);
  }
}
