package dev.ember.nn.functional;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import dev.ember.tensor.TensorArgumentException;
import org.junit.jupiter.api.Test;

/** Dropout statistics, determinism, the edge probabilities, channel masks, gradients and errors. */
class DropoutsTest {
  @Test
  void aNullGeneratorDrawsFromTheGlobalOne() {
    Tensor x = Tensor.randn(new Generator(1), 16, 8);
    Generator.manualSeed(7);
    float[] viaNull = F.dropout(x, 0.4, true, null).toFloatArray();
    Generator.manualSeed(7);
    float[] viaGlobal = F.dropout(x, 0.4, true, Generator.global()).toFloatArray();
    assertArrayEquals(viaGlobal, viaNull);
  }

  @Test
  void dropoutOfEveryElementDrawsNothing() {
    // torch.manual_seed(0); F.dropout(torch.ones(10), 1.0); torch.rand(3)[0] -> 0.49625658988952637, the same as
    // without the dropout: at p = 1 torch multiplies by 0 and leaves the generator where it was
    for (java.util.function.Function<Generator, Tensor> drop : java.util.List.<java.util.function.Function<Generator,
        Tensor>>of(g -> Dropouts.dropout(Tensor.ones(10), 1.0, true, g),
        g -> Dropouts.dropout2d(Tensor.ones(2, 3, 2, 2), 1.0, true, g))) {
      Generator g = new Generator(0);
      assertEquals(0, drop.apply(g).abs().sum().item());
      assertEquals(0.49625658988952637, Tensor.rand(g, 1).item(), 0.0);
    }
  }

  @Test
  void keepsTheMeanAndZeroesAboutPOfTheElements() {
    int n = 200_000;
    for (double p : new double[] {0.1, 0.5, 0.8}) {
      Tensor y = Dropouts.dropout(Tensor.ones(DType.F64, n), p, true, new Generator(3));
      double[] v = y.toDoubleArray();
      int zeros = 0;
      double sum = 0;
      for (double e : v) {
        if (e == 0) zeros++;
        else assertEquals(1 / (1 - p), e, 1e-12, "survivors are scaled by 1 / (1 - p)");
        sum += e;
      }
      // binomial: sd of the zero fraction is sqrt(p(1-p)/n) <= 0.0012; allow 5 sd
      assertEquals(p, zeros / (double) n, 0.006, "fraction zeroed for p=" + p);
      assertEquals(1.0, sum / n, 0.03, "mean preserved for p=" + p);
    }
  }

  @Test
  void sameSeedSameMaskDifferentSeedDifferentMask() {
    Tensor x = Tensor.randn(new Generator(1), 64, 32);
    float[] a = Dropouts.dropout(x, 0.3, true, new Generator(99)).toFloatArray();
    float[] b = Dropouts.dropout(x, 0.3, true, new Generator(99)).toFloatArray();
    float[] c = Dropouts.dropout(x, 0.3, true, new Generator(100)).toFloatArray();
    assertArrayEquals(a, b);
    assertNotEquals(java.util.Arrays.toString(a), java.util.Arrays.toString(c));
  }

  @Test
  void edgeProbabilitiesAndEvalMode() {
    Tensor x = Tensor.randn(new Generator(2), 5, 7);
    for (float v : Dropouts.dropout(x, 1.0, true, new Generator(1)).toFloatArray()) assertEquals(0f, Math.abs(v));
    assertSame(x, Dropouts.dropout(x, 0.0, true, new Generator(1)));
    assertSame(x, Dropouts.dropout(x, 0.7, false, new Generator(1)));
    Tensor x3 = x.reshape(1, 5, 7);
    assertSame(x3, Dropouts.dropout2d(x3, 0.7, false, new Generator(1)));
  }

  @Test
  void dropout2dZeroesWholeChannels() {
    Tensor x = Tensor.ones(DType.F64, 8, 16, 3, 5);
    Tensor y = Dropouts.dropout2d(x, 0.5, true, new Generator(5));
    int dropped = 0;
    for (int n = 0; n < 8; n++) {
      for (int c = 0; c < 16; c++) {
        double first = y.getDouble(n, c, 0, 0);
        for (int h = 0; h < 3; h++) for (int w = 0; w < 5; w++) assertEquals(first, y.getDouble(n, c, h, w));
        assertTrue(first == 0 || first == 2);
        if (first == 0) dropped++;
      }
    }
    assertTrue(dropped > 30 && dropped < 98, "about half of 128 channels dropped, got " + dropped);
    Tensor u = Dropouts.dropout1d(Tensor.ones(DType.F64, 6, 10), 0.5, true, new Generator(5)); // unbatched [C, L]
    for (int c = 0; c < 6; c++) for (int l = 0; l < 10; l++) assertEquals(u.getDouble(c, 0), u.getDouble(c, l));
  }

  @Test
  void gradientIsTheScaledMask() {
    Tensor x = Tensor.randn(new Generator(4), DType.F64, 4, 6).requiresGrad(true);
    Tensor y = Dropouts.dropout(x, 0.4, true, new Generator(8));
    y.sum().backward();
    double[] g = x.grad().toDoubleArray();
    double[] yv = y.toDoubleArray();
    double[] xv = x.toDoubleArray();
    for (int i = 0; i < g.length; i++) assertEquals(yv[i] == 0 ? 0 : 1 / 0.6, g[i], 1e-12);
    for (int i = 0; i < g.length; i++) assertEquals(xv[i] * g[i], yv[i], 1e-12);
  }

  @Test
  void alphaDropoutKeepsZeroMeanUnitVariance() {
    int n = 200_000;
    Tensor x = Tensor.randn(new Generator(6), DType.F64, n);
    double[] y = Dropouts.alphaDropout(x, 0.2, true, new Generator(7)).toDoubleArray();
    double mean = 0;
    for (double v : y) mean += v;
    mean /= n;
    double var = 0;
    for (double v : y) var += (v - mean) * (v - mean);
    var /= n;
    assertEquals(0, mean, 0.01);
    assertEquals(1, var, 0.02);
  }

  @Test
  void badProbabilityIsRejected() {
    TensorArgumentException e = assertThrows(TensorArgumentException.class,
        () -> Dropouts.dropout(Tensor.zeros(2, 3), 1.5, true, new Generator(1)));
    assertEquals("dropout: probability must be in [0, 1] (got 1.5): input=[2, 3]", e.getMessage());
    e = assertThrows(TensorArgumentException.class,
        () -> Dropouts.dropout2d(Tensor.zeros(2, 3, 4, 4), -0.1, false, new Generator(1)));
    assertEquals("dropout2d: probability must be in [0, 1] (got -0.1): input=[2, 3, 4, 4]", e.getMessage());
    e = assertThrows(TensorArgumentException.class,
        () -> Dropouts.dropout2d(Tensor.zeros(2, 3), 0.5, true, new Generator(1)));
    assertEquals("dropout2d: expected a 4-d batched or 3-d unbatched input, got rank 2: input=[2, 3]", e.getMessage());
  }
}
