package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

class MeanMetricTest {
  @Test
  void weightedMeanOfBatchLosses() {
    MeanMetric loss = new MeanMetric("loss");
    loss.update(2.0, 3);   // batch of 3 with mean loss 2
    loss.update(1.0, 1);
    assertEquals(7.0 / 4, loss.compute());
    assertEquals(4.0, loss.weight());
    loss.update(5.0);
    assertEquals(12.0 / 5, loss.compute());
    assertEquals("loss", loss.name());
  }

  @Test
  void tensorUpdateWeighsElementwiseOrByOne() {
    MeanMetric m = new MeanMetric("x");
    m.update(Tensor.of(new double[][] {{1, 2}, {3, 4}}), null);
    assertEquals(2.5, m.compute());
    m.reset();
    m.update(Tensor.of(new double[] {1, 3}, 2), Tensor.of(new double[] {3, 1}, 2));
    assertEquals(1.5, m.compute());
    var e = assertThrows(TensorArgumentException.class,
        () -> m.update(Tensor.of(new double[] {1, 3}, 2), Tensor.of(new double[] {-1, 1}, 2)));
    assertEquals("MeanMetric.update: weights must be >= 0 (got -1.0 at flat index 0): output=[2], target=[2]",
        e.getMessage());
    var s = assertThrows(TensorArgumentException.class, () -> m.update(Tensor.zeros(2), Tensor.zeros(3)));
    assertEquals("MeanMetric.update: values and weights differ in shape: output=[2], target=[3]", s.getMessage());
  }

  @Test
  void compensatedSumKeepsSmallValuesNextToLargeOnes() {
    MeanMetric m = new MeanMetric("m");
    m.update(1e16);
    for (int i = 0; i < 10; i++) m.update(1.0);
    m.update(-1e16);
    assertEquals(10.0 / 12, m.compute(), 1e-15);  // plain summation gives 0
  }

  @Test
  void nanPropagatesSoDivergenceShows() {
    MeanMetric m = new MeanMetric("loss");
    m.update(1.0, 2);
    m.update(Double.NaN, 2);
    assertTrue(Double.isNaN(m.compute()));
  }

  @Test
  void rejectsNegativeWeightsAndEmptyCompute() {
    MeanMetric m = new MeanMetric("loss");
    var e = assertThrows(IllegalArgumentException.class, () -> m.update(1.0, -2));
    assertEquals("MeanMetric.update: weight must be >= 0, got -2 (loss)", e.getMessage());
    m.update(3.0, 0);  // weight 0 is no sample
    var s = assertThrows(IllegalStateException.class, m::compute);
    assertEquals("loss.compute: nothing seen since the last reset", s.getMessage());
    assertThrows(IllegalArgumentException.class, () -> new MeanMetric(""));
  }

  @Test
  void mergeCombinesWeights() {
    MeanMetric a = new MeanMetric("loss");
    MeanMetric b = a.emptyCopy();
    a.update(1.0, 1);
    b.update(4.0, 3);
    a.merge(b);
    assertEquals(13.0 / 4, a.compute());
    assertThrows(IllegalArgumentException.class, () -> a.merge(a));
  }
}
