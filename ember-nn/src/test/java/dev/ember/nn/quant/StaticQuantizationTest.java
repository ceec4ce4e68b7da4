package dev.ember.nn.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.LinearReLU;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.nn.Tanh;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QTensor;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import org.junit.jupiter.api.Test;

/**
 * Static post-training quantization: prepare, calibrate, convert, against a float64 simulation of the same integer
 * pipeline (quantize the input, exact integer products, dequantize, add the bias, requantize).
 */
class StaticQuantizationTest {
  /** Conv(+ReLU), pool, conv (strided, padded, dilated, grouped), flatten, LinearReLU, Linear. */
  static Sequential convNet(Generator g) {
    return new Sequential(
        new ConvReLU2d(new Conv2d(2, 4, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true,
            "zeros", g)),
        new MaxPool2d(2),
        new Conv2d(4, 6, new int[] {3, 2}, new int[] {2, 1}, new int[] {1, 0}, new int[] {1, 2}, 2, true, "zeros", g),
        new ReLU(),
        new Flatten(),
        new LinearReLU(new Linear(6 * 2 * 2, 12, true, g)),
        new Linear(12, 5, true, g));
  }

  static Module calibrated(Module model, QConfig qc, Generator g, int... inputShape) {
    Module p = Quantize.prepare(model, qc);
    for (int i = 0; i < 4; i++) p.call(Tensor.randn(g, inputShape));
    return p;
  }

  @Test
  void convNetEqualsTheFloat64SimulationOfItsIntegerPipeline() {
    Generator g = new Generator(3);
    Sequential model = convNet(g);
    Sequential q = (Sequential) Quantize.convert(calibrated(model, QConfig.ptqDefault(), g, 8, 2, 8, 8));
    assertInstanceOf(QuantizedConvReLU2d.class, q.get(0));
    assertInstanceOf(QuantizedConv2d.class, q.get(2));
    assertInstanceOf(QuantizedLinearReLU.class, q.get(5));
    assertInstanceOf(QuantizedLinear.class, q.get(6));
    // each layer after the first reads its input with its producer's output parameters: q passes unchanged
    assertEquals(((QuantizedConv2d) q.get(0)).outputQParams(), ((QuantizedConv2d) q.get(2)).inputQParams());
    assertEquals(((QuantizedConv2d) q.get(2)).outputQParams(), ((QuantizedLinear) q.get(5)).inputQParams());
    assertEquals(((QuantizedLinear) q.get(5)).outputQParams(), ((QuantizedLinear) q.get(6)).inputQParams());
    Tensor x = Tensor.randn(g, 3, 2, 8, 8);
    int exact = 0;
    int total = 0;
    Tensor h = x;
    for (Module m : q.children()) {
      Tensor y = m.call(h);
      double[] sim = null;
      QParams out = null;
      if (m instanceof QuantizedConv2d c) {
        sim = simulateConv(c, h, m instanceof QuantizedConvReLU2d);
        out = c.outputQParams();
      } else if (m instanceof QuantizedLinear l) {
        sim = simulateLinear(l, h, m instanceof QuantizedLinearReLU);
        out = l.outputQParams();
      }
      if (sim != null) {
        float[] got = y.toFloatArray();
        double quantum = out.scales()[0];
        for (int i = 0; i < got.length; i++) {
          assertEquals(sim[i], got[i], quantum * (1 + 1e-6), m + " element " + i);
          if ((float) sim[i] == got[i]) exact++;  // (q - z) * scale in float32, as the layer computes it
          total++;
        }
        assertGrid(got, out);
      }
      h = y;
    }
    // every value equal here (891 of 891); the one-quantum bound above only allows for a float32 product landing on
    // the other side of a rounding tie than the float64 one
    assertEquals(total, exact, exact + " of " + total + " exactly equal");
  }

  @Test
  void convStridedAndPaddedAlongTheWidthEqualsTheSimulation() {
    // im2col's strided run (stride 3 along the width) and its padding on both sides of a row, batched and unbatched
    Generator g = new Generator(5);
    Conv2d conv = new Conv2d(3, 5, new int[] {3, 3}, new int[] {2, 3}, new int[] {2, 2}, new int[] {1, 2}, 1, true,
        "zeros", g);
    QuantizedConv2d q = (QuantizedConv2d) Quantize.convert(calibrated(conv, QConfig.ptqDefault(), g, 2, 3, 9, 11));
    for (Tensor x : new Tensor[] {Tensor.randn(g, 2, 3, 9, 11), Tensor.randn(g, 3, 9, 11)}) {
      Tensor batched = x.dim() == 3 ? x.reshape(1, 3, 9, 11) : x;
      double[] sim = simulateConv(q, batched, false);
      Tensor y = q.call(x);
      assertEquals(x.dim(), y.dim());
      float[] got = y.toFloatArray();
      assertEquals(sim.length, got.length);
      for (int i = 0; i < got.length; i++) assertEquals((float) sim[i], got[i], "element " + i);
    }
  }

  @Test
  void mlpOutputIsCloseToTheFloatModelAndOnTheOutputGrid() {
    Generator g = new Generator(4);
    Sequential model = new Sequential(new Flatten(), new Linear(48, 32, true, g), new ReLU(), new Linear(32, 10, true, g));
    Tensor x = Tensor.randn(g, 16, 3, 4, 4);
    float[] f = model.call(x).toFloatArray();
    Module q = Quantize.convert(calibrated(model, QConfig.ptqDefault(), g, 16, 3, 4, 4));
    QuantizedLinear last = (QuantizedLinear) ((Sequential) q).get(3);
    float[] y = q.call(x).toFloatArray();
    double maxErr = 0;
    double maxAbs = 0;
    for (int i = 0; i < y.length; i++) {
      maxErr = Math.max(maxErr, Math.abs(y[i] - f[i]));
      maxAbs = Math.max(maxAbs, Math.abs(f[i]));
    }
    assertTrue(maxErr < 0.05 * maxAbs, "max error " + maxErr + " of " + maxAbs);
    assertGrid(y, last.outputQParams());
    // the first layer quantizes the model input with its own observer (the model-input quantize step)
    assertNull(producerOf(Quantize.prepare(new Sequential(new Flatten(), new Linear(4, 2)), QConfig.ptqDefault()), 1));
    assertFalse(q.isTraining());
  }

  private static void assertFalse(boolean b) {
    assertTrue(!b);
  }

  private static PreparedLayer producerOf(Module prepared, int child) {
    Sequential s = (Sequential) prepared;
    s.call(Tensor.randn(new Generator(1), 2, 4));
    return ((PreparedLayer) s.get(child)).producer();
  }

  @Test
  void aLayerAfterAnOpThatLeavesTheGridQuantizesItsInputWithItsOwnObserver() {
    Generator g = new Generator(5);
    Sequential model = new Sequential(new Linear(6, 8, true, g), new Tanh(), new Linear(8, 3, true, g), new ReLU(),
        new Linear(3, 2, true, g));
    Sequential p = (Sequential) calibrated(model, QConfig.ptqDefault(), g, 10, 6);
    assertNull(((PreparedLayer) p.get(0)).producer());
    assertNull(((PreparedLayer) p.get(2)).producer());   // tanh: values off the grid
    assertSame(p.get(2), ((PreparedLayer) p.get(4)).producer());
    QParams ownInput = ((PreparedLayer) p.get(2)).inputQuant().qparams();
    Sequential q = (Sequential) Quantize.convert(p);
    assertEquals(ownInput, ((QuantizedLinear) q.get(2)).inputQParams());
    assertEquals(((QuantizedLinear) q.get(2)).outputQParams(), ((QuantizedLinear) q.get(4)).inputQParams());
  }

  @Test
  void convertBeforeCalibrationNamesTheLayer() {
    Generator g = new Generator(6);
    Module model = new Sequential(new Linear(4, 3, true, g), new ReLU(),
        new Sequential(new Linear(3, 2, true, g)));
    Module p = Quantize.prepare(model, QConfig.ptqDefault());
    var e = assertThrows(IllegalStateException.class, () -> Quantize.convert(p));
    assertTrue(e.getMessage().contains("'0'") && e.getMessage().contains("saw no calibration data"), e.getMessage());
    // a layer the calibration data never reached
    Sequential twoWay = new Sequential(new Linear(4, 3, true, g), new Linear(4, 2, true, g));
    Module p2 = Quantize.prepare(twoWay, QConfig.ptqDefault());
    ((Sequential) p2).get(0).call(Tensor.randn(g, 2, 4));
    var e2 = assertThrows(IllegalStateException.class, () -> Quantize.convert(p2));
    assertTrue(e2.getMessage().contains("layer '1' (Linear)"), e2.getMessage());
    assertInstanceOf(PreparedLayer.class, ((Sequential) p2).get(0));  // nothing was replaced
    assertThrows(IllegalArgumentException.class, () -> Quantize.prepare(new Sequential(new ReLU()), QConfig.ptqDefault()));
    assertThrows(IllegalArgumentException.class, () -> Quantize.convert(new Sequential(new ReLU())));
  }

  @Test
  void aSingleLayerModelIsWrappedAndConvertedToItsQuantizedLayer() {
    Generator g = new Generator(7);
    Module p = Quantize.prepare(new Linear(5, 4, true, g), QConfig.ptqDefault());
    assertInstanceOf(PreparedLayer.class, p);
    p.call(Tensor.randn(g, 3, 5));
    assertInstanceOf(QuantizedLinear.class, Quantize.convert(p));
  }

  @Test
  void qint8ActivationsAndPerTensorWeightsGiveTheSameSimulation() {
    Generator g = new Generator(8);
    QConfig qc = new QConfig(
        () -> new dev.ember.quant.MovingAverageMinMaxObserver(0.1, dev.ember.quant.QScheme.perTensorAffine(QDType.QINT8),
            false),
        () -> new dev.ember.quant.MinMaxObserver(dev.ember.quant.QScheme.perTensorSymmetric(QDType.QINT8), false));
    Sequential model = new Sequential(new Linear(9, 7, true, g), new ReLU(), new Linear(7, 4, true, g));
    Sequential q = (Sequential) Quantize.convert(calibrated(model, qc, g, 6, 9));
    QuantizedLinear l0 = (QuantizedLinear) q.get(0);
    assertEquals(QDType.QINT8, l0.outputQParams().dtype());
    assertTrue(!l0.weight().params().perChannel());
    Tensor x = Tensor.randn(g, 5, 9);
    double[] sim = simulateLinear(l0, x, false);
    float[] y = l0.call(x).toFloatArray();
    for (int i = 0; i < y.length; i++) assertEquals(sim[i], y[i], l0.outputQParams().scales()[0] * (1 + 1e-6));
  }

  @Test
  void badConfigurationsAndInputsAreTypedErrors() {
    var e = assertThrows(IllegalArgumentException.class, () -> new QConfig(
        () -> new dev.ember.quant.MinMaxObserver(),
        () -> new dev.ember.quant.MinMaxObserver(dev.ember.quant.QScheme.perTensorAffine(QDType.QINT8), false)));
    assertTrue(e.getMessage().contains("symmetric qint8"), e.getMessage());
    Generator g = new Generator(9);
    Module q = Quantize.convert(calibrated(new Linear(4, 3, true, g), QConfig.ptqDefault(), g, 2, 4));
    var e2 = assertThrows(IllegalArgumentException.class, () -> q.call(Tensor.zeros(2, 5)));
    assertTrue(e2.getMessage().startsWith("QuantizedLinear: input's last dimension must be in_features (4)"),
        e2.getMessage());
    Module c = Quantize.convert(calibrated(new Conv2d(2, 3, 3), QConfig.ptqDefault(), g, 2, 2, 5, 5));
    var e3 = assertThrows(IllegalArgumentException.class, () -> c.call(Tensor.zeros(1, 3, 5, 5)));
    assertTrue(e3.getMessage().startsWith("QuantizedConv2d: input must be [N, 2, H, W]"), e3.getMessage());
    assertArrayEquals(new int[] {3, 3, 3}, c.call(Tensor.zeros(2, 5, 5)).shape());  // unbatched
    Module reflect = new Conv2d(2, 3, new int[] {3, 3}, new int[] {1, 1}, new int[] {1, 1}, new int[] {1, 1}, 1, true,
        "reflect", g);
    Module pr = calibrated(reflect, QConfig.ptqDefault(), g, 1, 2, 5, 5);
    var e4 = assertThrows(IllegalArgumentException.class, () -> Quantize.convert(pr));
    assertTrue(e4.getMessage().contains("padding_mode 'zeros' only"), e4.getMessage());
  }

  /** Every value is (q - zeroPoint) * scale for an integer q in the dtype's range. */
  static void assertGrid(float[] y, QParams p) {
    float s = p.scales()[0];
    int z = p.zeroPoints()[0];
    for (float v : y) {
      long q = Math.round(v / (double) s) + z;
      assertTrue(q >= p.dtype().min() && q <= p.dtype().max() && (float) ((q - z) * s) == v, v + " is off the grid");
    }
  }

  static double quantize(double x, QParams p) {
    double q = Math.rint(x / p.scales()[0]) + p.zeroPoints()[0];
    return Math.max(p.dtype().min(), Math.min(p.dtype().max(), q));
  }

  static double requantize(double v, QParams out, boolean relu) {
    int z = out.zeroPoints()[0];
    double q = Math.rint(v / out.scales()[0]) + z;
    double lo = relu ? Math.max(out.dtype().min(), z) : out.dtype().min();
    q = Math.max(lo, Math.min(out.dtype().max(), q));
    return (q - z) * (double) out.scales()[0];
  }

  static double[] simulateLinear(QuantizedLinear l, Tensor x, boolean relu) {
    QParams in = l.inputQParams();
    QTensor w = l.weight();
    int[] wq = w.intRepr();
    float[] ws = w.params().scales();
    float[] b = l.bias() == null ? null : l.bias().toFloatArray();
    double[] xv = x.toDoubleArray();
    int k = l.inFeatures();
    int n = l.outFeatures();
    int m = xv.length / k;
    double[] out = new double[m * n];
    for (int i = 0; i < m; i++) {
      for (int j = 0; j < n; j++) {
        long acc = 0;
        for (int p = 0; p < k; p++) acc += (long) (quantize(xv[i * k + p], in) - in.zeroPoints()[0]) * wq[j * k + p];
        double v = acc * (double) in.scales()[0] * ws[ws.length == 1 ? 0 : j] + (b == null ? 0 : b[j]);
        out[i * n + j] = requantize(v, l.outputQParams(), relu);
      }
    }
    return out;
  }

  static double[] simulateConv(QuantizedConv2d c, Tensor x, boolean relu) {
    QParams in = c.inputQParams();
    int[] wq = c.weight().intRepr();
    int[] wsh = c.weight().shape();
    float[] ws = c.weight().params().scales();
    float[] b = c.bias() == null ? null : c.bias().toFloatArray();
    int[] s = c.stride();
    int[] d = c.dilation();
    int[] pad = c.padding();
    int n = x.size(0);
    int ci = x.size(1);
    int h = x.size(2);
    int wd = x.size(3);
    int co = c.outChannels();
    int cg = wsh[1];
    int og = co / c.groups();
    int oh = (h + pad[0] + pad[1] - d[0] * (wsh[2] - 1) - 1) / s[0] + 1;
    int ow = (wd + pad[2] + pad[3] - d[1] * (wsh[3] - 1) - 1) / s[1] + 1;
    double[] xv = x.toDoubleArray();
    double[] out = new double[n * co * oh * ow];
    for (int bn = 0; bn < n; bn++) {
      for (int o = 0; o < co; o++) {
        int g = o / og;
        for (int y = 0; y < oh; y++) {
          for (int xx = 0; xx < ow; xx++) {
            long acc = 0;
            for (int c2 = 0; c2 < cg; c2++) {
              for (int ky = 0; ky < wsh[2]; ky++) {
                for (int kx = 0; kx < wsh[3]; kx++) {
                  int iy = y * s[0] - pad[0] + ky * d[0];
                  int ix = xx * s[1] - pad[2] + kx * d[1];
                  if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;  // padding: real 0
                  double qx = quantize(xv[((bn * ci + g * cg + c2) * h + iy) * wd + ix], in) - in.zeroPoints()[0];
                  acc += (long) qx * wq[((o * cg + c2) * wsh[2] + ky) * wsh[3] + kx];
                }
              }
            }
            double v = acc * (double) in.scales()[0] * ws[ws.length == 1 ? 0 : o] + (b == null ? 0 : b[o]);
            out[((bn * co + o) * oh + y) * ow + xx] = requantize(v, c.outputQParams(), relu);
          }
        }
      }
    }
    return out;
  }
}
