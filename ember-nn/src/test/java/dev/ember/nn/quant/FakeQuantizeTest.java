package dev.ember.nn.quant;

import dev.ember.quant.JsonFixture;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.ember.nn.Conv2d;
import dev.ember.nn.ConvReLU2d;
import dev.ember.nn.Flatten;
import dev.ember.nn.Linear;
import dev.ember.nn.MaxPool2d;
import dev.ember.nn.Module;
import dev.ember.nn.ReLU;
import dev.ember.nn.Sequential;
import dev.ember.quant.MinMaxObserver;
import dev.ember.quant.MovingAveragePerChannelMinMaxObserver;
import dev.ember.quant.QDType;
import dev.ember.quant.QParams;
import dev.ember.quant.QScheme;
import dev.ember.tensor.DType;
import dev.ember.tensor.Generator;
import dev.ember.tensor.Tensor;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * FakeQuantize: forward values and straight-through gradients against torch 1.13 (fixture: make_fakequant_fixture.py),
 * the estimator against its definition in float64, and prepareQat / convert on a small model.
 */
class FakeQuantizeTest {
  private static Map<String, Object> fixture() throws Exception {
    return JsonFixture.load(FakeQuantizeTest.class, "fakequant_fixture.json");
  }

  @Test
  void perTensorForwardAndGradientEqualTorch() throws Exception {
    Map<String, Object> fx = fixture();
    float[] xv = JsonFixture.floats(fx.get("x"));
    Tensor g = Tensor.of(JsonFixture.floats(fx.get("g")), xv.length);
    List<?> cases = (List<?>) fx.get("cases");
    for (int c = 0; c < cases.size(); c++) {
      List<?> k = (List<?>) cases.get(c);
      float s = ((Number) k.get(0)).floatValue();
      int z = ((Number) k.get(1)).intValue();
      int lo = ((Number) k.get(2)).intValue();
      int hi = ((Number) k.get(3)).intValue();
      Tensor x = Tensor.of(xv, xv.length).requiresGrad(true);
      Tensor y = FakeQuantize.perTensorAffine(x, s, z, lo, hi);
      assertArrayEquals(JsonFixture.floats(fx.get("y" + c)), y.toFloatArray(), "case " + c);   // bit for bit
      y.mul(g).sum().backward();
      assertArrayEquals(JsonFixture.floats(fx.get("dx" + c)), x.grad().toFloatArray(), "gradient, case " + c);
    }
  }

  @Test
  void perChannelForwardAndGradientEqualTorch() throws Exception {
    Map<String, Object> fx = fixture();
    Tensor x = Tensor.of(JsonFixture.floats(fx.get("xc")), 4, 3, 5).requiresGrad(true);
    float[] scales = JsonFixture.floats(fx.get("scales"));
    List<?> zl = (List<?>) fx.get("zps");
    int[] zps = new int[zl.size()];
    for (int i = 0; i < zps.length; i++) zps[i] = ((Number) zl.get(i)).intValue();
    Tensor y = FakeQuantize.perChannelAffine(x, scales, zps, 1, -128, 127);
    assertArrayEquals(JsonFixture.floats(fx.get("yc")), y.toFloatArray());
    y.mul(Tensor.of(JsonFixture.floats(fx.get("gc")), 4, 3, 5)).sum().backward();
    assertArrayEquals(JsonFixture.floats(fx.get("dxc")), x.grad().toFloatArray());
  }

  /**
   * The straight-through estimator is not the derivative of the forward (a step function, whose derivative is 0
   * almost everywhere): it is defined as dy/dx = 1 where rint(x / scale) + zeroPoint lies in [qmin, qmax], else 0.
   * A finite-difference gradient check would therefore fail by design; this checks the definition, in float64.
   */
  @Test
  void float64InputsAreScaledByTheFloat32ReciprocalAsTorchsKernels() {
    // x = torch.tensor([0.15, 12.75, -0.15], dtype=torch.float64, requires_grad=True)
    // y = torch.fake_quantize_per_tensor_affine(x, 0.1, 0, -128, 127); y.sum().backward()
    // y -> [0.2, 12.7, -0.2] (as float64 products of 0.1f), x.grad -> [1, 0, 1]: 12.75 * 10 = 127.5 rounds to 128,
    // outside the range
    Tensor x = Tensor.of(new double[] {0.15, 12.75, -0.15}, 3).requiresGrad(true);
    Tensor y = FakeQuantize.perTensorAffine(x, 0.1f, 0, -128, 127);
    y.sum().backward();
    double s = 0.1f;
    assertArrayEquals(new double[] {2 * s, 127 * s, -2 * s}, y.toDoubleArray());
    assertArrayEquals(new double[] {1, 0, 1}, x.grad().toDoubleArray());
  }

  @Test
  void straightThroughGradientFollowsItsDefinitionInFloat64() {
    Generator gen = new Generator(3);
    Tensor x = Tensor.randn(gen, DType.F64, 7, 9).mul(4).requiresGrad(true);
    Tensor w = Tensor.randn(gen, DType.F64, 7, 9);
    double s = 0.03;
    int z = 7;
    Tensor y = FakeQuantize.perTensorAffine(x, (float) s, z, -20, 30);
    assertEquals(DType.F64, y.dtype());
    y.mul(w).sum().backward();
    double[] xv = x.toDoubleArray();
    double[] wv = w.toDoubleArray();
    double[] yv = y.toDoubleArray();
    double[] gv = x.grad().toDoubleArray();
    double sf = (float) s;
    int inside = 0;
    for (int i = 0; i < xv.length; i++) {
      double r = Math.rint(xv[i] / sf) + z;
      boolean in = r >= -20 && r <= 30;
      inside += in ? 1 : 0;
      assertEquals(in ? wv[i] : 0.0, gv[i], 0.0, "element " + i);
      assertEquals((Math.max(-20, Math.min(30, r)) - z) * sf, yv[i], 1e-15, "forward, element " + i);
    }
    assertTrue(inside > 0 && inside < xv.length, "both sides of the clamp are exercised: " + inside);
  }

  @Test
  void moduleObservesThenRoundsAndCanBeSwitchedOff() {
    FakeQuantize fq = new FakeQuantize(new MinMaxObserver(QScheme.perTensorAffine(QDType.QUINT8), false));
    assertNull(fq.qparams());
    Tensor x = Tensor.of(new float[] {-1, 0.3f, 2}, 3);
    Tensor y = fq.call(x);
    QParams p = fq.qparams();
    assertEquals(QParams.perTensor(QDType.QUINT8, 3f / 255, 85), p);
    assertArrayEquals(FakeQuantize.perTensorAffine(x, 3f / 255, 85, 0, 255).toFloatArray(), y.toFloatArray());
    fq.enableObserver(false);
    fq.call(Tensor.of(new float[] {-10, 10}, 2));
    assertSame(p, fq.qparams());   // frozen
    fq.enableFakeQuant(false);
    Tensor z = Tensor.of(new float[] {0.123f}, 1);
    assertSame(z, fq.call(z));
    var e = assertThrows(IllegalArgumentException.class,
        () -> FakeQuantize.perTensorAffine(Tensor.zeros(2), 0f, 0, 0, 255));
    assertTrue(e.getMessage().startsWith("fake_quantize_per_tensor_affine: scale must be positive"), e.getMessage());
    var e2 = assertThrows(IllegalArgumentException.class,
        () -> FakeQuantize.perChannelAffine(Tensor.zeros(2, 3), new float[] {1, 1}, new int[] {0, 0}, 1, -128, 127));
    assertTrue(e2.getMessage().contains("2 scales along axis 1"), e2.getMessage());
  }

  @Test
  void movingAveragePerChannelObserverFollowsTorchsUpdate() {
    var obs = new MovingAveragePerChannelMinMaxObserver(0.5, QScheme.perChannelSymmetric(QDType.QINT8, 0), false);
    obs.observe(Tensor.of(new float[] {-1, 2, 0, 4}, 2, 2));
    obs.observe(Tensor.of(new float[] {-3, 0, 2, 2}, 2, 2));
    assertArrayEquals(new float[] {-2, 1}, obs.minVals());  // -1 + 0.5 * (-3 - -1), 0 + 0.5 * (2 - 0)
    assertArrayEquals(new float[] {1, 3}, obs.maxVals());
  }

  @Test
  void prepareQatFakeQuantizesAndConvertGivesTheQuantizedLayersWithTheTrainedParameters() {
    Generator g = new Generator(12);
    Sequential model = new Sequential(new ConvReLU2d(new Conv2d(1, 3, 3, 1, 1)), new MaxPool2d(2), new Flatten(),
        new Linear(3 * 4 * 4, 8, true, g), new ReLU(), new Linear(8, 4, true, g));
    Sequential p = (Sequential) Quantize.prepareQat(model, QConfig.qatDefault());
    assertTrue(p.isTraining());
    PreparedLayer fc = (PreparedLayer) p.get(3);
    assertNotNull(fc.weightFakeQuant());
    // the float layers' parameters are the ones trained
    assertEquals(model.parameters().size(), 6);
    Tensor x = Tensor.randn(g, 5, 1, 8, 8);
    Tensor out = p.call(x);
    out.sum().backward();
    assertNotNull(((Linear) fc.layer()).weight().grad());
    assertSame(p.get(0), fc.producer());
    // after QAT the model output is on the last layer's output grid, as the converted model's
    PreparedLayer last = (PreparedLayer) p.get(5);
    StaticQuantizationTest.assertGrid(out.toFloatArray(), last.outputQuant().qparams());
    p.eval();
    for (Module m : p.modules()) if (m instanceof FakeQuantize f) f.enableObserver(false);
    float[] qatOut = p.call(x).toFloatArray();
    QParams lastOut = last.outputQuant().qparams();
    Sequential q = (Sequential) Quantize.convert(p);
    assertInstanceOf(QuantizedConvReLU2d.class, q.get(0));
    assertInstanceOf(QuantizedLinear.class, q.get(3));
    assertEquals(lastOut, ((QuantizedLinear) q.get(5)).outputQParams());
    float[] y = q.call(x).toFloatArray();
    double quantum = lastOut.scales()[0];
    // with the observers frozen the converted weights are the fake-quantized ones: the int8 pipeline gives the QAT
    // model's values (within one output quantum: float32 convolution sums vs exact int32 ones near a rounding tie)
    int same = 0;
    for (int i = 0; i < y.length; i++) {
      assertEquals(qatOut[i], y[i], quantum * 1.001, "element " + i);
      if (qatOut[i] == y[i]) same++;
    }
    assertTrue(same >= y.length * 0.9, same + " of " + y.length + " identical");
    assertEquals(fc.weightFakeQuant().qparams(), ((QuantizedLinear) q.get(3)).weight().params());
  }
}
