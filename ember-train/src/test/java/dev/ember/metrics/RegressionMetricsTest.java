package dev.ember.metrics;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import java.math.BigDecimal;
import java.math.MathContext;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Behaviour of the regression metrics beyond the sklearn fixtures. */
class RegressionMetricsTest {
  private static Tensor vec(double... v) {
    return Tensor.of(v, v.length);
  }

  @Test
  void smallExampleByHand() {
    Tensor o = vec(1, 2, 4);
    Tensor t = vec(1, 3, 2);
    MeanAbsoluteError mae = new MeanAbsoluteError();
    mae.update(o, t);
    assertEquals(1.0, mae.compute());
    MeanSquaredError mse = new MeanSquaredError();
    mse.update(o, t);
    assertEquals(5.0 / 3, mse.compute(), 1e-15);
    RootMeanSquaredError rmse = new RootMeanSquaredError();
    rmse.update(o, t);
    assertEquals(Math.sqrt(5.0 / 3), rmse.compute(), 1e-15);
    R2Score r2 = new R2Score();
    r2.update(o, t);
    assertEquals(1 - 5.0 / 2, r2.compute(), 1e-15);  // mean 2, spread 1 + 1 + 0
  }

  @Test
  void columnVectorsMatchFlatOnes() {
    MeanSquaredError a = new MeanSquaredError();
    a.update(Tensor.of(new double[] {1, 2}, 2, 1), vec(0, 0));
    assertEquals(2.5, a.compute());
    a.update(vec(1, 1), Tensor.of(new double[] {1, 1}, 2, 1));
    assertEquals(1.25, a.compute());
  }

  @Test
  void rejectsMismatchedShapes() {
    var e = assertThrows(TensorArgumentException.class,
        () -> new MeanAbsoluteError().update(Tensor.zeros(4, 2), Tensor.zeros(4, 3)));
    assertEquals("MeanAbsoluteError.update: output and target shapes differ: output=[4, 2], target=[4, 3]",
        e.getMessage());
    var b = assertThrows(TensorArgumentException.class,
        () -> new R2Score().update(Tensor.zeros(4, 2), Tensor.zeros(5, 2)));
    assertEquals("R2Score.update: batch sizes differ (4 vs 5): output=[4, 2], target=[5, 2]", b.getMessage());
    var r = assertThrows(TensorArgumentException.class,
        () -> new MeanSquaredError().update(Tensor.zeros(4, 2, 1), Tensor.zeros(4, 2, 1)));
    assertEquals("MeanSquaredError.update: output and target must be [B] or [B, D]: output=[4, 2, 1], target=[4, 2, 1]",
        r.getMessage());
    assertThrows(TensorArgumentException.class, () -> new MeanSquaredError().update(Tensor.zeros(4, 2), Tensor.zeros(4)));
  }

  @Test
  void rejectsAChangeInTheNumberOfOutputs() {
    MeanSquaredError m = new MeanSquaredError();
    m.update(Tensor.zeros(2, 3), Tensor.zeros(2, 3));
    var e = assertThrows(TensorArgumentException.class, () -> m.update(Tensor.zeros(2, 2), Tensor.zeros(2, 2)));
    assertEquals("MeanSquaredError.update: number of outputs changed (3 before, now 2): output=[2, 2], target=[2, 2]",
        e.getMessage());
    m.reset();
    m.update(Tensor.zeros(2, 2), Tensor.ones(2, 2));  // after reset any width is fine
    assertEquals(1.0, m.compute());
    MeanSquaredError other = new MeanSquaredError();
    other.update(Tensor.zeros(1, 3), Tensor.zeros(1, 3));
    assertThrows(IllegalArgumentException.class, () -> m.merge(other));
  }

  @Test
  void r2IsNaNForOneSampleAsSklearn() {
    R2Score r2 = new R2Score();
    r2.update(vec(1), vec(2));
    assertTrue(Double.isNaN(r2.compute()));
  }

  @Test
  void r2StaysAccurateWhenTheMeanDwarfsTheSpread() {
    // targets near 1e8 with unit spread: sum t^2 - n mean^2 would lose every digit of the spread
    Random rnd = new Random(3);
    int n = 1000;
    double[] t = new double[n];
    double[] o = new double[n];
    for (int i = 0; i < n; i++) {
      t[i] = 1e8 + rnd.nextGaussian();
      o[i] = t[i] + 0.5 * rnd.nextGaussian();
    }
    BigDecimal mean = BigDecimal.ZERO;
    for (double v : t) mean = mean.add(new BigDecimal(v));
    mean = mean.divide(BigDecimal.valueOf(n), MathContext.DECIMAL128);
    BigDecimal ss = BigDecimal.ZERO;
    BigDecimal se = BigDecimal.ZERO;
    for (int i = 0; i < n; i++) {
      BigDecimal d = new BigDecimal(t[i]).subtract(mean);
      ss = ss.add(d.multiply(d));
      BigDecimal e = new BigDecimal(t[i]).subtract(new BigDecimal(o[i]));
      se = se.add(e.multiply(e));
    }
    double exact = 1 - se.divide(ss, MathContext.DECIMAL128).doubleValue();
    R2Score r2 = new R2Score();
    for (int start = 0; start < n; start += 37) {
      int len = Math.min(37, n - start);
      r2.update(vec(o).narrow(0, start, len), vec(t).narrow(0, start, len));
    }
    assertEquals(exact, r2.compute(), 1e-12 * Math.abs(exact));
  }

  @Test
  void perOutputValuesAndUniformAverage() {
    MeanAbsoluteError mae = new MeanAbsoluteError();
    mae.update(Tensor.of(new double[][] {{0, 10}, {0, 10}}), Tensor.of(new double[][] {{1, 10}, {3, 14}}));
    assertArrayEquals(new double[] {2, 2}, mae.perOutput());
    assertEquals(2.0, mae.compute());
  }

  @Test
  void integerTargetsAndFloat32OutputsAreRead() {
    MeanAbsoluteError mae = new MeanAbsoluteError();
    mae.update(Tensor.of(new float[] {0.5f, 2f}, 2), Tensor.of(new long[] {1, 2}, 2));
    assertEquals(0.25, mae.compute());
    var e = assertThrows(TensorArgumentException.class,
        () -> new MeanAbsoluteError().update(Tensor.zeros(2), Tensor.zeros(DType.BOOL, 2)));
    assertEquals("MeanAbsoluteError.update: target must be numeric (got bool): output=[2], target=[2]", e.getMessage());
  }

  @Test
  void mergeOfUnevenPartsEqualsTheWhole() {
    Random rnd = new Random(8);
    double[] o = new double[60];
    double[] t = new double[60];
    for (int i = 0; i < 60; i++) {
      t[i] = 5 + 2 * rnd.nextGaussian();
      o[i] = t[i] + rnd.nextGaussian();
    }
    R2Score whole = new R2Score();
    whole.update(vec(o), vec(t));
    R2Score a = new R2Score();
    R2Score b = a.emptyCopy();
    R2Score empty = a.emptyCopy();
    a.update(vec(o).narrow(0, 0, 7), vec(t).narrow(0, 0, 7));
    b.update(vec(o).narrow(0, 7, 53), vec(t).narrow(0, 7, 53));
    a.merge(b);
    a.merge(empty);
    assertEquals(whole.compute(), a.compute(), 1e-12 * Math.abs(whole.compute()));
    empty.merge(a);  // into an empty one
    assertEquals(whole.compute(), empty.compute(), 1e-12 * Math.abs(whole.compute()));
  }

  @Test
  void computeBeforeUpdateIsALifecycleError() {
    var e = assertThrows(IllegalStateException.class, () -> new RootMeanSquaredError().compute());
    assertEquals("RootMeanSquaredError.compute: no samples seen since the last reset", e.getMessage());
  }
}
