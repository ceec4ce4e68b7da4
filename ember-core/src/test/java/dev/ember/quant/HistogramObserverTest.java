package dev.ember.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.Tensor;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** HistogramObserver and PercentileObserver: behaviour and bad input (torch's values: HistogramObserverTorchTest). */
class HistogramObserverTest {
  private static Tensor gaussianWithOutliers(int n, long seed) {
    Random r = new Random(seed);
    float[] v = new float[n];
    for (int i = 0; i < n; i++) v[i] = (float) r.nextGaussian();
    v[0] = 40f;
    v[1] = -25f;
    return Tensor.of(v, n);
  }

  private static float sum(float[] h) {
    float s = 0;
    for (float c : h) s += c;
    return s;
  }

  @Test
  void countsEveryValueAndKeepsTheRange() {
    HistogramObserver o = new HistogramObserver();
    Tensor x = Tensor.of(new float[] {-1f, 0f, 0.5f, 2f, 2f}, 5);
    assertSame(x, o.observe(x));
    assertEquals(-1f, o.minVal());
    assertEquals(2f, o.maxVal());
    float[] h = o.histogram();
    assertEquals(2048, h.length);
    assertEquals(5f, sum(h));
    assertEquals(1f, h[0]);
    assertEquals(2f, h[2047]); // the last bin is closed on the right
  }

  @Test
  void growingRangeKeepsTheTotalCountAndOnlyRelaxesTheMax() {
    HistogramObserver o = new HistogramObserver();
    Random r = new Random(3);
    int total = 0;
    for (int b = 0; b < 5; b++) {
      float[] v = new float[300];
      for (int i = 0; i < v.length; i++) v[i] = (float) Math.abs(r.nextGaussian() * (b + 1));
      v[0] = 0f;
      o.observe(Tensor.of(v, v.length));
      total += v.length;
    }
    assertEquals(0f, o.minVal()); // a one-sided range keeps its 0
    assertEquals(total, sum(o.histogram()), 1e-2);
  }

  @Test
  void searchPicksASubRangeWithNoMoreL2ErrorThanTheFullOne() {
    Tensor x = gaussianWithOutliers(20_000, 1);
    HistogramObserver h = new HistogramObserver();
    MinMaxObserver m = new MinMaxObserver();
    h.observe(x);
    m.observe(x);
    float[] range = h.searchRange();
    assertTrue(range[0] >= -25f && range[1] <= 40f && range[0] < range[1], range[0] + " " + range[1]);
    float width = (h.maxVal() - h.minVal()) / h.bins();
    int start = Math.round((range[0] - h.minVal()) / width);
    int end = Math.round((range[1] - h.minVal()) / width) - 1;
    assertTrue(end < h.bins() - 1, "the top outlier's bin is clipped: " + range[1]);
    assertTrue(h.quantizationError(start, end) <= h.quantizationError(0, h.bins() - 1));
    assertTrue(h.calculateQParams().scales()[0] <= m.calculateQParams().scales()[0]);
  }

  @Test
  void percentileClipsAtThePercentile() {
    Tensor x = gaussianWithOutliers(20_000, 2);
    PercentileObserver p = new PercentileObserver(99.9);
    p.observe(x);
    float[] range = p.searchRange();
    // the 0.1% and 99.9% points of a standard normal are -+3.09; 20000 samples and the bin width (65/2048) allow 0.25
    assertEquals(-3.09, range[0], 0.25);
    assertEquals(3.09, range[1], 0.25);
    QParams q = p.calculateQParams();
    assertEquals((range[1] - range[0]) / 255f, q.scales()[0], 1e-6);
    PercentileObserver all = new PercentileObserver(100);
    all.observe(x);
    assertArrayEquals(new float[] {all.minVal(), all.maxVal()}, all.searchRange());
  }

  @Test
  void constantInputGivesItsValueAndStartsOverOnRealData() {
    HistogramObserver o = new HistogramObserver(2048, 128, QScheme.perTensorSymmetric(QDType.QINT8), false);
    o.observe(Tensor.of(new float[] {0.5f, 0.5f, 0.5f}, 3));
    assertEquals(0.5f, o.minVal());
    assertEquals(0.5f, o.maxVal());
    assertTrue(o.calculateQParams().scales()[0] > 0);
    o.observe(Tensor.of(new float[] {-2f, 1f}, 2)); // torch starts over after a constant range
    assertEquals(-2f, o.minVal());
    assertEquals(2f, sum(o.histogram()));
  }

  @Test
  void unobservedGivesTorchDefaultsAndEmptyInputIsIgnored() {
    HistogramObserver o = new HistogramObserver();
    assertSame(Tensor.of(new float[0], 0).getClass(), o.observe(Tensor.of(new float[0], 0)).getClass());
    QParams p = o.calculateQParams();
    assertEquals(1f, p.scales()[0]);
    assertEquals(0, p.zeroPoints()[0]);
    assertEquals(1f, new PercentileObserver(99).calculateQParams().scales()[0]);
    IllegalStateException e = assertThrows(IllegalStateException.class, o::searchRange);
    assertTrue(e.getMessage().contains("HistogramObserver"), e.getMessage());
  }

  @Test
  void badInputIsRejectedWithTheObserversName() {
    HistogramObserver o = new HistogramObserver();
    IllegalArgumentException nan = assertThrows(IllegalArgumentException.class,
        () -> o.observe(Tensor.of(new float[] {1f, Float.NaN}, 2)));
    assertTrue(nan.getMessage().contains("HistogramObserver") && nan.getMessage().contains("NaN"), nan.getMessage());
    IllegalArgumentException inf = assertThrows(IllegalArgumentException.class,
        () -> new PercentileObserver(99).observe(Tensor.of(new float[] {Float.POSITIVE_INFINITY}, 1)));
    assertTrue(inf.getMessage().contains("PercentileObserver") && inf.getMessage().contains("Infinity"),
        inf.getMessage());
    assertThrows(IllegalArgumentException.class,
        () -> new HistogramObserver(2048, 128, QScheme.perChannelAffine(QDType.QINT8, 0), false));
    assertThrows(IllegalArgumentException.class,
        () -> new HistogramObserver(0, 128, QScheme.perTensorAffine(QDType.QUINT8), false));
    assertThrows(IllegalArgumentException.class,
        () -> new HistogramObserver(2048, 0, QScheme.perTensorAffine(QDType.QUINT8), false));
    assertThrows(IllegalArgumentException.class,
        () -> new HistogramObserver(2048, 128, QScheme.perTensorSymmetric(QDType.QUINT8), true));
    for (double bad : new double[] {50, 100.5, Double.NaN, -1}) {
      IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new PercentileObserver(bad));
      assertTrue(e.getMessage().contains("percentile"), e.getMessage());
    }
    PercentileObserver p = new PercentileObserver(99);
    p.observe(Tensor.of(new float[] {1f, 2f}, 2));
    assertThrows(IllegalArgumentException.class, () -> p.quantile(1.5));
  }

  @Test
  void floorDivisionMatchesPythonsFloor() {
    assertEquals(2f, HistogramObserver.floorDiv(5f, 2f));
    assertEquals(-3f, HistogramObserver.floorDiv(-5f, 2f));
    assertEquals(-0f, HistogramObserver.floorDiv(-0f, 2f));
    assertEquals(3f, HistogramObserver.floorDiv(0.3f, 0.1f)); // 0.3f / 0.1f is just above 3 in float32
  }
}
